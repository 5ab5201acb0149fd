import { randomUUID } from 'node:crypto';
import type { Store } from '../store/store.js';
import { WebhookDeliverer, type DelivererOptions } from './deliver.js';

/**
 * How long a listener stays a destination without renewing: it renews every third of it while it runs, so a
 * listener killed (or cut off from the store) stops getting events within this long, and is then dropped with
 * what waited for it. The live endpoints never wait for it: their deliveries are their own.
 */
const LISTENER_LEASE_MS = 60_000;

export interface Listener {
  /** New events may be due: deliver now rather than at the next look. */
  poke(): void;
  /** Deliveries in flight finish within `graceMs` (then go back to the outbox), and the destination is removed. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * A development listener (listen --forward-to, as stripe listen): one more destination of the store's webhook
 * events, never a competitor for the live endpoints' deliveries. It gets every event recorded from its start,
 * signed, at least once, a request's in order, until it stops (its destination removed at once) or its lease
 * runs out.
 */
export async function startListener(options: Omit<DelivererOptions, 'endpoints' | 'destination'> & { store: Store; url: string; leaseMs?: number }): Promise<Listener> {
  const { store, url } = options;
  const leaseMs = options.leaseMs ?? LISTENER_LEASE_MS;
  const destination = `lst_${randomUUID().replaceAll('-', '')}`;
  await store.shop.addDestination(destination, url, leaseMs);
  const renew = setInterval(() => {
    store.shop.addDestination(destination, url, leaseMs).catch((error: unknown) => options.log?.(`listener lease not renewed: ${error instanceof Error ? error.message : String(error)}`));
  }, leaseMs / 3);
  const deliverer = new WebhookDeliverer({ ...options, endpoints: [url], destination });
  deliverer.start();
  return {
    poke: () => deliverer.poke(),
    stop: async (graceMs) => {
      clearInterval(renew);
      await deliverer.stop(graceMs);
      await store.shop.removeDestination(destination);
    },
  };
}
