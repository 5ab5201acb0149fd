import type { WaitObserver } from '../../ops/observe.js';
import { othersSpinning, progress, type Progress } from './spinner.js';

/** How long a call may go unanswered before the terminal says whom it waits for. */
const QUIET_MS = 2_000;

interface Waiting {
  party: string;
  where: string;
  attempts: number;
  attempt: number;
  since: number;
  note: string;
}

/**
 * A service that does not answer is never a blank screen. On a terminal (human
 * output): once a call has waited about 2 s, a spinner on stderr names who is
 * awaited, the call, the attempt and the time, until the answer. Otherwise
 * (--json, or no terminal): each retry is a warning line on stderr, and stdout
 * stays the command's own.
 */
export function waitReporter(terminal: boolean): WaitObserver {
  const waiting = new Set<Waiting>();
  let spinner: Promise<Progress> | undefined;
  let tick: NodeJS.Timeout | undefined;
  const text = (w: Waiting): string =>
    `Waiting for ${w.party} (${w.where}): attempt ${w.attempt} of ${w.attempts}, ${Math.round((Date.now() - w.since) / 1000)} s${w.note}`;
  const refresh = (): void => {
    const oldest = [...waiting].find((w) => Date.now() - w.since >= QUIET_MS - 50);
    if (oldest === undefined || (spinner === undefined && othersSpinning())) return;
    spinner ??= progress(text(oldest), true);
    void spinner.then((s) => s.update(text(oldest)));
  };
  const settle = (): void => {
    if (waiting.size > 0) return;
    if (tick !== undefined) clearInterval(tick);
    tick = undefined;
    void spinner?.then((s) => s.stop());
    spinner = undefined;
  };
  return ({ party, where, attempts }) => {
    const w: Waiting = { party, where, attempts, attempt: 1, since: Date.now(), note: '' };
    if (terminal) {
      waiting.add(w);
      if (tick === undefined) {
        tick = setInterval(refresh, 500);
        // The report never keeps a command alive.
        tick.unref();
      }
    }
    return {
      attempt: (n) => {
        w.attempt = n;
        w.note = '';
      },
      retrying: (n, reason, inMs) => {
        const next = `attempt ${n + 1} of ${attempts} in ${Math.max(1, Math.round(inMs / 1000))} s`;
        if (terminal) w.note = ` (attempt ${n} failed: ${reason}; ${next})`;
        else process.stderr.write(`Warning: ${party} did not answer ${where} (${reason}); ${next}\n`);
      },
      end: () => {
        waiting.delete(w);
        settle();
      },
    };
  };
}
