import { redactUrl } from '../errors.js';
import type { Amount } from '../ops/money.js';
import { runPendingRefunds } from '../ops/requests/refunds.js';
import { sweep } from '../ops/requests/sweep.js';
import type { Session } from '../ops/session.js';

export interface ShopSigner {
  /** A refund was ordered: carry it out now (when this server carries out refunds). */
  poke(): void;
  /** Waits for the job under way, and runs no more. */
  stop(): Promise<void>;
}

/**
 * What checkout serve signs, when told to (--refunds, --sweep-to): the refunds
 * ordered through its API, at each order and each poll (orders left by a
 * crash too), and a sweep of the fresh accounts at start and every `everyMs`. One job at a
 * time, in this process, with the key store it unlocked at start (or the
 * unlocked session); each goes through the one money path as the CLI's do.
 * Never reachable from a route: the API only records orders.
 */
export function startShopSigner(
  session: Session,
  options: { refunds: boolean; sweep?: { to: string; everyMs: number; min?: Amount }; pollMs: number; log: (line: string) => void },
): ShopSigner {
  let chain: Promise<void> = Promise.resolve();
  let stopped = false;
  const failure = (what: string) => (error: unknown) => options.log(`${what} failed: ${redactUrl(error instanceof Error ? error.message : String(error))}`);
  const queue = (job: () => Promise<void>): void => {
    if (!stopped) chain = chain.then(job);
  };
  const refunds = (): void =>
    queue(() =>
      runPendingRefunds(session).then((r) => {
        for (const done of r.done) options.log(`refund ${done.refund.id} of request ${done.refund.request_id}: ${done.refund.amount} XNO to ${done.refund.to} (block ${done.refund.block})`);
        for (const failed of r.failed) options.log(`refund ${failed.refund} failed (${failed.code}): ${failed.message}`);
      }, failure('refunds')),
    );
  const sweeping = options.sweep;
  const sweepOnce = (): void =>
    queue(() =>
      sweeping === undefined
        ? Promise.resolve()
        : sweep(session, { to: sweeping.to, ...(sweeping.min === undefined ? {} : { min: sweeping.min }) }).then(
            (r) => options.log(`sweep ${r.run_id}: ${r.total} XNO from ${r.swept} account(s) to ${r.to}`),
            failure('sweep'),
          ),
    );
  const timers = [
    ...(options.refunds ? [setInterval(refunds, options.pollMs)] : []),
    ...(sweeping === undefined ? [] : [setInterval(sweepOnce, sweeping.everyMs)]),
  ];
  if (options.refunds) refunds();
  sweepOnce();
  return {
    poke: () => {
      if (options.refunds) refunds();
    },
    stop: async () => {
      stopped = true;
      for (const timer of timers) clearInterval(timer);
      await chain;
    },
  };
}
