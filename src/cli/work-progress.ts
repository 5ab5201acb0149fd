import type { WorkObserver } from '../work/index.js';
import { expectedHashes } from '../work/index.js';
import { progress, type Progress } from './spinner.js';

function seconds(s: number): string {
  return s < 100 ? `${s.toFixed(1)} s` : `${Math.round(s)} s`;
}

/**
 * A spinner on stderr while this machine makes proof of work: hashes per
 * second, the expected time for the threshold, and the time so far. Nothing
 * when stderr is not a terminal or output is JSON.
 */
export function workSpinner(enabled: boolean): WorkObserver {
  let spinner: Promise<Progress> | undefined;
  let started = 0;
  return {
    progress(hashes, threshold) {
      if (!enabled || !process.stderr.isTTY) return;
      if (spinner === undefined) {
        started = Date.now() - 250;
        spinner = progress('Proof of work…', true);
      }
      const elapsed = (Date.now() - started) / 1000;
      const rate = hashes / Math.max(elapsed, 0.001);
      const expected = expectedHashes(threshold) / rate;
      void spinner.then((s) => s.update(`Proof of work: ${(rate / 1e6).toFixed(1)} MH/s, expected ~${seconds(expected)}, elapsed ${seconds(elapsed)}`));
    },
    done() {
      const current = spinner;
      spinner = undefined;
      void current?.then((s) => s.stop());
    },
  };
}
