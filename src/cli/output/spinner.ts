import type { Ora } from 'ora';

/** A spinner on stderr while something runs; nothing at all when stderr is not a terminal. */
export interface Progress {
  update(text: string): void;
  succeed(text: string): void;
  stop(): void;
}

const spinning = new Set<Ora>();
let ended = false;
const none: Progress = { update: () => undefined, succeed: () => undefined, stop: () => undefined };

/** Stops every spinner, so a message written next is not erased by a spinner clearing its line. */
export function stopSpinners(): void {
  for (const spinner of spinning) spinner.stop();
  spinning.clear();
}

/**
 * The command is over: every spinner stops and none starts any more. A spinner
 * is a timer that keeps the process alive, so one started late (a progress
 * report arriving after its work) would hang the command.
 */
export function endSpinners(): void {
  ended = true;
  stopSpinners();
}

/** Whether a spinner already shows (a second one on the same line would garble both). */
export function othersSpinning(): boolean {
  return spinning.size > 0;
}

export function colourless(): boolean {
  return Boolean(process.env.NO_COLOR) || !process.stderr.isTTY;
}

export async function progress(text: string, enabled: boolean): Promise<Progress> {
  if (!enabled || !process.stderr.isTTY || ended) return none;
  const { default: ora } = await import('ora');
  if (ended) return none;
  // A terminal that never got a size (a pty nobody sized, a serial line) reports 0 columns; ora
  // divides by it when it clears a frame and then loops for ever, blocking the process.
  if (!process.stderr.columns) process.stderr.columns = 80;
  // Leave stdin alone: the terminal must still turn Ctrl-C into SIGINT.
  const spinner = ora({ text, stream: process.stderr, discardStdin: false, ...(colourless() ? { color: false as const } : {}) }).start();
  spinning.add(spinner);
  return {
    update: (t) => void (spinner.text = t),
    succeed: (t) => {
      spinning.delete(spinner);
      if (colourless()) spinner.stopAndPersist({ symbol: '✔', text: t });
      else spinner.succeed(t);
    },
    stop: () => {
      spinning.delete(spinner);
      spinner.stop();
    },
  };
}
