import type { ServerLog } from '../http/log.js';
import { startHttpServer } from '../http/server.js';
import type { CheckoutConfirmationSource, CheckoutObservation, CheckoutReader, CheckoutRequest } from '../ops/requests/checkout.js';
import { DEFAULT_RELOAD_SECONDS, renderMessagePage } from './page.js';
import { checkoutPath, checkoutRoutes, sendHtml, type CheckoutRoutesOptions } from './routes.js';
import { CheckoutWatcher } from './watcher.js';

export interface CheckoutServerOptions extends CheckoutRoutesOptions {
  host: string;
  port: number;
  /** Reads a request's status: the only thing this server asks the service. */
  read: CheckoutReader;
  /** Milliseconds between status reads of a watched request. Default 1000. */
  intervalMs?: number;
  /**
   * Confirmed payments to the served addresses (the node's WebSocket), when
   * known: a watched request is read at once on one, the interval poll going on
   * behind (delivery is not guaranteed).
   */
  confirmations?: CheckoutConfirmationSource;
  /** One line per request; never a key (the paths hold transaction ids only). */
  log?: ServerLog;
  /** How long close() lets answers in flight finish (live pages get a retry hint and end at once). Default 5 s. */
  drainMs?: number;
}

export interface CheckoutServer {
  url: string;
  /** Serves this request's page; returns its URL. */
  add(request: CheckoutRequest, observation: CheckoutObservation): string;
  close(): Promise<void>;
}

/**
 * The checkout server: pages for the requests it is given, kept up to date by
 * one shared poller, woken early by confirmations where a node's WebSocket is
 * known. It holds a status reader and nothing that can sign, and has no route
 * that creates, signs or sends, so it may face a shop's customers.
 */
export async function startCheckoutServer(options: CheckoutServerOptions): Promise<CheckoutServer> {
  const watcher = new CheckoutWatcher({
    read: options.read,
    intervalMs: options.intervalMs ?? 1000,
    // A page without live updates reloads every reloadSeconds: three missed reloads and nobody is looking.
    viewGraceMs: (options.reloadSeconds ?? DEFAULT_RELOAD_SECONDS) * 3_000,
    ...(options.log === undefined ? {} : { log: options.log }),
  });
  const server = await startHttpServer({
    host: options.host,
    port: options.port,
    routes: [
      ...checkoutRoutes(watcher, options),
      {
        method: 'GET',
        path: '/',
        handle: ({ response }) => sendHtml(response, 404, renderMessagePage('nanopay checkout', 'Open the checkout link the shop gave you.')),
      },
    ],
    // Only GETs without bodies are served.
    maxBodyBytes: 0,
    ...(options.drainMs === undefined ? {} : { closeGraceMs: options.drainMs }),
    ...(options.log === undefined ? {} : { log: options.log }),
  });
  watcher.start();
  const feed = options.confirmations?.({
    changed: (address) => watcher.wake(address),
    failed: (message) => options.log?.(`confirmations unavailable (${message}); reading at each interval only`),
  });
  return {
    url: server.url,
    add: (request, observation) => {
      watcher.add(request, observation);
      feed?.update([request.receive_address], []);
      return `${server.url}${checkoutPath(request.transaction_id)}`;
    },
    close: async () => {
      feed?.close();
      watcher.stop();
      await server.close();
    },
  };
}
