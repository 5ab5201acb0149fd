import type { Metrics } from '../http/metrics.js';
import type { ShopRequest, ShopStatus } from '../store/shop.js';
import type { Store } from '../store/store.js';
import { webhookBacklog } from './deliver.js';

/** What the shop server counts as it goes. */
export interface ShopCounts {
  created(): void;
  changed(request: ShopRequest): void;
  attempted(delivered: boolean): void;
}

const CHANGES: readonly Exclude<ShopStatus, 'waiting'>[] = ['paid', 'paid_late', 'underpaid', 'overpaid', 'expired'];

/** How long one scrape reuses the webhook backlog it read (two gauges come from one read). */
const BACKLOG_READ_MS = 1_000;

/**
 * The shop server's metrics: requests made through its API, status changes
 * it recorded (payments), webhook delivery attempts, and from the store (so
 * every instance's) the webhook backlog and the age of its oldest event.
 */
export function shopMetrics(metrics: Metrics, store: Store): ShopCounts {
  const created = metrics.counter('nanopay_shop_requests_created_total', 'Payment requests created through the API (an idempotent repeat is not counted)');
  const payments = metrics.counter(
    'nanopay_payments_total',
    "Changes of a request's status this server recorded, by the new status (paid, paid_late, underpaid, overpaid, expired)",
    CHANGES.map((status) => ({ status })),
  );
  const attempts = metrics.counter('nanopay_webhook_deliveries_total', 'Webhook delivery attempts by result: delivered (every endpoint answered 2xx), or failed (retried later)', [
    { result: 'delivered' },
    { result: 'failed' },
  ]);
  let read: { at: number; backlog: ReturnType<typeof webhookBacklog> } | undefined;
  const backlog = (): ReturnType<typeof webhookBacklog> => {
    if (read === undefined || Date.now() - read.at > BACKLOG_READ_MS) read = { at: Date.now(), backlog: webhookBacklog(store) };
    return read.backlog;
  };
  metrics.gauge('nanopay_webhook_backlog', 'Webhook events not yet delivered to every --webhook endpoint (all instances of the store)', async () => (await backlog()).pending);
  metrics.gauge('nanopay_webhook_oldest_pending_seconds', 'How long the oldest undelivered webhook event has waited (0 when none waits)', async () => (await backlog()).oldestSeconds);
  return {
    created: () => created.inc(),
    changed: (request) => payments.inc({ status: request.status }),
    attempted: (delivered) => attempts.inc({ result: delivered ? 'delivered' : 'failed' }),
  };
}
