import { DEFAULT_RELOAD_SECONDS, renderMessagePage } from '../checkout/page.js';
import { claimRoutes, type ClaimRoutesOptions } from '../checkout/claim-routes.js';
import { checkoutPath, checkoutRoutes, sendHtml, type CheckoutRoutesOptions } from '../checkout/routes.js';
import { CheckoutWatcher } from '../checkout/watcher.js';
import { LiveChanges } from '../dashboard/live.js';
import { dashboardRoutes } from '../dashboard/routes.js';
import { NanoPayError } from '../errors.js';
import type { ServerLog } from '../http/log.js';
import { probeRoutes, type Probes } from '../http/probes.js';
import { startHttpServer } from '../http/server.js';
import type { CheckoutConfirmationSource, CheckoutRequest } from '../ops/requests/checkout.js';
import { FINAL_STATUSES, type ShopRequest, type WebhookEvent } from '../store/shop.js';
import type { Store } from '../store/store.js';
import { shopApiRoutes, type ShopApiOptions } from './api.js';
import { apiAccess } from './api-access.js';
import { WebhookDeliverer, type DelivererOptions, type DeliveryAnswer } from './deliver.js';
import { shopMetrics } from './metrics.js';
import { observationOf, ShopMonitor, type ShopStatusSource } from './monitor.js';

export interface ShopServerOptions extends Omit<CheckoutRoutesOptions, 'lookup' | 'testMode'> {
  /** Whether the backend is the sandbox (asked at each page: it is known once it answered): pages show a test-mode band. */
  testMode?: () => boolean;
  host: string;
  port: number;
  /** The URL customers reach this server at (behind a proxy); default its own. */
  publicUrl?: string;
  token: string;
  store: Store;
  source: ShopStatusSource;
  create(body: Record<string, unknown>, idempotencyKey: string | undefined): Promise<{ request: ShopRequest; created: boolean }>;
  /** Records a refund order (POST /api/v1/requests/{id}/refunds); carrying it out is a signer's job, never this server's routes'. */
  refund: ShopApiOptions['refund'];
  /** Refund claims: made by the API and the dashboard, answered by customers on their page. */
  claims: ShopClaims;
  /** Between reads of a request whose page is open (one read per interval, whatever the number of viewers). */
  intervalMs: number;
  /** Between rounds over every unsettled request. */
  pollMs: number;
  confirmations?: CheckoutConfirmationSource;
  webhooks?: { endpoints: string[]; secrets: DelivererOptions['secrets']; backoffMs?: number; timeoutMs?: number; onAttempt?: (event: WebhookEvent, answers: DeliveryAnswer[], delivered: boolean) => void };
  log?: ServerLog;
  /** /healthz, /readyz, and /metrics behind the API token. */
  probes?: Probes;
  /** How long close() lets answers and webhook deliveries in flight finish (then they are cut, the deliveries put back). Default 5 s. */
  drainMs?: number;
}

export interface ShopClaims {
  create: ShopApiOptions['createClaim'];
  view: ClaimRoutesOptions['view'];
  claim: ClaimRoutesOptions['claim'];
}

export interface ShopServer {
  url: string;
  close(): Promise<void>;
}

function pageRequest(request: ShopRequest): CheckoutRequest {
  return {
    transaction_id: request.id,
    receive_address: request.receive_address,
    amount: request.amount,
    amount_raw: request.amount_raw,
    uri: request.uri,
    ...(request.fiat === undefined ? {} : { fiat: request.fiat }),
    ...(request.redirect_url === undefined ? {} : { redirect_url: request.redirect_url }),
    ...(request.order_id === undefined ? {} : { order_id: request.order_id }),
  };
}

const PAGE_IDLE_MS = 10 * 60_000;

/** A transaction id as a path may carry one: anything else is not looked up. */
const PLAUSIBLE_ID = /^[0-9a-zA-Z-]{8,64}$/;

/**
 * The shop's payment server (checkout serve): the API for the shop's backend
 * (token required), the checkout page of every request of the store and its
 * live updates (public, read-only), the monitor that records status changes
 * with their webhook events, and the deliverer of those events. It holds no
 * route that signs or sends: a refund asked through the API is an order in the
 * store, carried out by a signer (checkout serve --refunds, nanopay refund --pending).
 */
export async function startShopServer(options: ShopServerOptions): Promise<ShopServer> {
  const { store, probes } = options;
  const drainMs = options.drainMs ?? 5_000;
  const counts = probes === undefined ? undefined : shopMetrics(probes.metrics, store);
  const onAttempt = options.webhooks?.onAttempt;
  const deliverer =
    options.webhooks === undefined || options.webhooks.endpoints.length === 0
      ? undefined
      : new WebhookDeliverer({
          store,
          ...options.webhooks,
          onAttempt: (event, answers, delivered) => {
            counts?.attempted(delivered);
            onAttempt?.(event, answers, delivered);
          },
          ...(options.log === undefined ? {} : { log: options.log }),
        });
  const live = new LiveChanges();
  const monitor = new ShopMonitor({
    store,
    source: options.source,
    pollMs: options.pollMs,
    live: () => feed?.live() === true,
    // The node's WebSocket follows the open requests' addresses: it gets the changes, never the whole list again.
    onFollow: (add, remove) => feed?.update(add, remove),
    // Its event is delivered at once, not at the deliverer's next look; its page shows it at once, whoever read it.
    onChange: (request) => {
      counts?.changed(request);
      live.changed();
      deliverer?.poke();
      watcher.observe(request.id, observationOf(request));
    },
    ...(options.log === undefined ? {} : { log: options.log }),
  });
  // The page's reads go through the monitor: one read per request per interval however many look, and each change recorded once.
  const watcher = new CheckoutWatcher({
    read: async (id) => {
      const request = await monitor.check(id);
      if (request === undefined) throw new NanoPayError('NOT_FOUND', 'Unknown checkout');
      return observationOf(request);
    },
    intervalMs: options.intervalMs,
    viewGraceMs: (options.reloadSeconds ?? DEFAULT_RELOAD_SECONDS) * 3_000,
    ...(options.log === undefined ? {} : { log: options.log }),
  });
  const feed = options.confirmations?.({
    changed: (address) => {
      watcher.wake(address);
      monitor.wake(address);
    },
    failed: (message) => options.log?.(`confirmations unavailable (${message}); reading at each interval only`),
  });
  const base = { url: '' };
  const checkoutUrl = (id: string): string => `${options.publicUrl ?? base.url}${checkoutPath(id)}`;
  const claimUrl = (token: string): string => `${options.publicUrl ?? base.url}/claim/${token}`;
  const lookup = async (id: string): Promise<void> => {
    if (!PLAUSIBLE_ID.test(id)) return;
    const found = await store.shop.get(id.toLowerCase());
    if (found === undefined) return;
    if (watcher.request(found.id) === undefined) watcher.add(pageRequest(found), observationOf(found));
    // Settled, or refunded by nanopay refund in another process: the store's word is the last.
    else if (FINAL_STATUSES.includes(found.status)) watcher.observe(found.id, observationOf(found));
  };
  const access = apiAccess(store, options.token);
  const server = await startHttpServer({
    host: options.host,
    port: options.port,
    routes: [
      ...checkoutRoutes(watcher, {
        ...options,
        lookup,
        get testMode() {
          return options.testMode?.() === true;
        },
      }),
      ...shopApiRoutes({
        store,
        access,
        checkoutUrl,
        refund: options.refund,
        createClaim: options.claims.create,
        claimUrl,
        create: async (body, key) => {
          const made = await options.create(body, key);
          if (made.created) {
            counts?.created();
            live.changed();
          }
          if (watcher.request(made.request.id) === undefined) watcher.add(pageRequest(made.request), observationOf(made.request));
          monitor.track(made.request);
          return made;
        },
      }),
      ...claimRoutes({
        shopName: options.shopName ?? 'nanopay checkout',
        testMode: () => options.testMode?.() === true,
        view: options.claims.view,
        claim: async (token, address) => {
          const view = await options.claims.claim(token, address);
          live.changed();
          return view;
        },
      }),
      ...dashboardRoutes({
        store,
        shopName: options.shopName ?? 'nanopay checkout',
        testMode: () => options.testMode?.() === true,
        secureCookie: (options.publicUrl ?? '').startsWith('https:'),
        ...(options.publicUrl === undefined ? {} : { publicHost: new URL(options.publicUrl).host }),
        checkoutUrl,
        refund: options.refund,
        createClaim: options.claims.create,
        claimUrl,
        ...(probes === undefined ? {} : { readiness: probes.readiness }),
        live,
      }),
      {
        method: 'GET',
        path: '/',
        handle: ({ response }) => sendHtml(response, 404, renderMessagePage(options.shopName ?? 'nanopay checkout', 'Open the checkout link the shop gave you.')),
      },
      ...(probes === undefined ? [] : probeRoutes(probes, { authorize: (headers) => access.authorize(headers, 'admin') })),
    ],
    maxBodyBytes: 16 * 1024,
    closeGraceMs: drainMs,
    ...(probes === undefined ? {} : { metrics: probes.metrics }),
    ...(options.log === undefined ? {} : { log: options.log }),
  });
  base.url = server.url;
  watcher.start();
  // Pages not looked at for ten minutes are forgotten (the store keeps the request; a page opened later brings it back).
  const pruning = setInterval(() => watcher.prune(PAGE_IDLE_MS), 60_000);
  pruning.unref();
  monitor.start();
  deliverer?.start();
  return {
    url: server.url,
    close: async () => {
      clearInterval(pruning);
      feed?.close();
      watcher.stop();
      // Within the bound: answers in flight finish, deliveries in flight finish or go back to the outbox (a change
      // the monitor records meanwhile waits there for the next start).
      await Promise.all([server.close(), deliverer?.stop(drainMs), monitor.stop()]);
    },
  };
}
