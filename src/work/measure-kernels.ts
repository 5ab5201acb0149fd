/**
 * The process that measures the native kernels for a config dir (started by
 * kernel-choice.ts, detached, at the lowest priority): argv is the choice
 * file and the lease that says a measurement is under way. It writes the
 * choice, removes the lease and exits at once; it prints nothing and never
 * fails loudly (the next process that needs work tries again).
 */
import { unlinkSync } from 'node:fs';
import { measureKernels, writeChoice } from './kernel-choice.js';

const [file, lease] = process.argv.slice(2);
try {
  const choice = file === undefined ? undefined : await measureKernels();
  if (file !== undefined && choice !== undefined) writeChoice(file, choice);
} catch {
  // The config dir went away, or the addon failed: nothing to keep.
}
if (lease !== undefined) {
  try {
    unlinkSync(lease);
  } catch {
    // Gone already.
  }
}
// Its worker threads would keep it alive: nothing is left to do.
process.exit(0);
