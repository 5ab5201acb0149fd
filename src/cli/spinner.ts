import type { Ora } from 'ora';

/** A spinner on stderr while something runs; nothing at all when stderr is not a terminal. */
export interface Progress {
  update(text: string): void;
  succeed(text: string): void;
  stop(): void;
}

const spinning = new Set<Ora>();

/** Stops every spinner, so a message written next is not erased by a spinner clearing its line. */
export function stopSpinners(): void {
  for (const spinner of spinning) spinner.stop();
  spinning.clear();
}

export async function progress(text: string, enabled: boolean): Promise<Progress> {
  if (!enabled || !process.stderr.isTTY) {
    return { update: () => undefined, succeed: () => undefined, stop: () => undefined };
  }
  const { default: ora } = await import('ora');
  // Leave stdin alone: the terminal must still turn Ctrl-C into SIGINT.
  const spinner = ora({ text, stream: process.stderr, discardStdin: false }).start();
  spinning.add(spinner);
  return {
    update: (t) => void (spinner.text = t),
    succeed: (t) => {
      spinning.delete(spinner);
      spinner.succeed(t);
    },
    stop: () => {
      spinning.delete(spinner);
      spinner.stop();
    },
  };
}
