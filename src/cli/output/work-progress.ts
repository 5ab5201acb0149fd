import type { WorkObserver } from '../../work/index.js';
import { expectedHashes } from '../../work/index.js';
import { progress, type Progress } from './spinner.js';

function seconds(s: number): string {
  return s < 100 ? `${s.toFixed(1)} s` : `${Math.round(s)} s`;
}

/** Workers report every 250 ms: this long without a report means the search is over. */
const SILENT_MS = 1500;
/** Reports still in flight when a search ends arrive within a batch (tens of ms): they are not a new search. */
const LATE_MS = 200;

/**
 * A spinner on stderr while this machine makes proof of work: hashes per
 * second, the expected time for the threshold, and the time so far. Nothing
 * when stderr is not a terminal or output is JSON.
 *
 * It ends with its work: on done(), and also when reports stop coming, so a
 * report that arrives after done() can never leave a spinner running (and the
 * process alive) after the command.
 */
export function workSpinner(enabled: boolean): WorkObserver {
  let spinner: Promise<Progress> | undefined;
  let started = 0;
  let endedAt = -Infinity;
  let silence: NodeJS.Timeout | undefined;

  const close = (): void => {
    clearTimeout(silence);
    silence = undefined;
    const current = spinner;
    spinner = undefined;
    endedAt = Date.now();
    void current?.then((s) => s.stop());
  };

  /** `ranMs`: how long the search has run already. */
  const show = (ranMs: number): void => {
    started = Date.now() - ranMs;
    spinner = progress('Proof of work…', true);
  };
  const keepAlive = (): void => {
    clearTimeout(silence);
    silence = setTimeout(close, SILENT_MS).unref();
  };

  return {
    // Shown from the start of the search, so a user sees at once why they wait.
    start() {
      if (!enabled || !process.stderr.isTTY) return;
      if (spinner === undefined) show(0);
      keepAlive();
    },
    progress(hashes, threshold) {
      if (!enabled || !process.stderr.isTTY) return;
      if (spinner === undefined) {
        if (Date.now() - endedAt < LATE_MS) return;
        // Reports come every quarter second: this search began that long ago.
        show(250);
      }
      keepAlive();
      if (hashes <= 0) return;
      const elapsed = Math.max(Date.now() - started, 250) / 1000;
      const rate = hashes / elapsed;
      const expected = expectedHashes(threshold) / rate;
      const text = `Proof of work: ${(rate / 1e6).toFixed(1)} MH/s, expected ~${seconds(expected)}, elapsed ${seconds(elapsed)}`;
      void spinner?.then((s) => s.update(text));
    },
    done: close,
  };
}
