import { redactUrl } from '../errors.js';
import type { Amount } from '../ops/money.js';
import { refundFailureText, runPendingRefunds } from '../ops/requests/refunds.js';
import type { ServerLog } from '../http/log.js';
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
  options: { refunds: boolean; sweep?: { to: string; everyMs: number; min?: Amount }; pollMs: number; log: ServerLog },
): ShopSigner {
  let chain: Promise<void> = Promise.resolve();
  let stopped = false;
  const failure = (what: string) => (error: unknown) => options.log(`${what} failed: ${redactUrl(error instanceof Error ? error.message : String(error))}`);
  const queue = (job: () => Promise<void>): void => {
    if (!stopped) chain = chain.then(job);
  };
  const refunds = (): void =>
    queue(() =>
      runPendingRefunds(session, { due: true }).then((r) => {
        for (const { refund: f } of r.done) {
          options.log(`refund ${f.id} of request ${f.request_id}: ${f.amount} XNO to ${f.to} from ${f.from ?? '?'} (block ${f.block})`, {
            event: 'refund_sent',
            fields: { refund_id: f.id, request_id: f.request_id, amount_raw: f.amount_raw, to: f.to, from: f.from, block: f.block },
          });
        }
        for (const f of r.failed) {
          options.log(refundFailureText(f), {
            event: f.outcome === 'failed' ? 'refund_failed' : f.outcome === 'held' ? 'refund_held' : 'refund_retry',
            level: f.outcome === 'failed' ? 'error' : 'warn',
            fields: { refund_id: f.refund, request_id: f.request_id, code: f.code, attempts: f.attempts, next_attempt_at: f.next_attempt_at, approval_id: f.approval_id },
          });
        }
      }, failure('refunds')),
    );
  const sweeping = options.sweep;
  const sweepOnce = (): void =>
    queue(() =>
      sweeping === undefined
        ? Promise.resolve()
        : sweep(session, { to: sweeping.to, ...(sweeping.min === undefined ? {} : { min: sweeping.min }) }).then(
            (r) =>
              options.log(`sweep ${r.run_id}: ${r.total} XNO from ${r.swept} account(s) to ${r.to}; left ${r.left_total} XNO on ${r.left} unsettled; ${r.held} held for approval`, {
                event: 'sweep',
                fields: { run_id: r.run_id, to: r.to, swept: r.swept, total_raw: r.total_raw, left: r.left, left_total_raw: r.left_total_raw, held: r.held },
              }),
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
