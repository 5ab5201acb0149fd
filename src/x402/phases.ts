import { performance } from 'node:perf_hooks';

/**
 * The steps of a paid request, as a paywall times them: the payment's
 * signature, the payer's head read from the ledger (its frontier block
 * checked), the other checks (amount, work), the settlement record read, the
 * upstream, the claim, the publish, the confirmation, and the settled mark.
 */
export type PaidPhase = 'signature' | 'head' | 'checks' | 'record' | 'upstream' | 'claim' | 'publish' | 'confirm' | 'settled';

/** Told how long each step took, in seconds (nanopay_x402_phase_seconds). */
export type PhaseClock = (phase: PaidPhase, seconds: number) => void;

/** Runs `step`, telling `clock` (when there is one) how long it took, failed or not. */
export async function timed<T>(clock: PhaseClock | undefined, phase: PaidPhase, step: () => Promise<T>): Promise<T> {
  if (clock === undefined) return step();
  const started = performance.now();
  try {
    return await step();
  } finally {
    clock(phase, (performance.now() - started) / 1000);
  }
}

/** `timed` for a step that does not wait. */
export function timedNow<T>(clock: PhaseClock | undefined, phase: PaidPhase, step: () => T): T {
  if (clock === undefined) return step();
  const started = performance.now();
  try {
    return step();
  } finally {
    clock(phase, (performance.now() - started) / 1000);
  }
}
