import type { ServerResponse } from 'node:http';
import QRCode from 'qrcode';
import { NanoPayError } from '../errors.js';
import { RESPONDED, type Call, type Route } from '../http/server.js';
import { AUTOMATIC_RELOAD, DEFAULT_REDIRECT_SECONDS, DEFAULT_RELOAD_SECONDS, PAGE_HEADERS, renderCheckoutPage, renderMessagePage } from './page.js';
import { isFinal, type CheckoutView } from './view.js';
import type { CheckoutWatcher } from './watcher.js';

export interface CheckoutRoutesOptions {
  /** Open event streams in all; beyond it a page falls back to reloading. Default 200. */
  maxStreams?: number;
  /** Open event streams from one client address. Default 16. */
  maxStreamsPerClient?: number;
  /** Seconds a paid page shows before it goes to the request's redirect_url. Default 5. */
  redirectSeconds?: number;
  /** Seconds between reloads of a page that gets no live updates (no JavaScript, or too many viewers). Default 4. */
  reloadSeconds?: number;
  /** The shop's name, shown on the page. */
  shopName?: string;
  /** Called for each page: the shop server's store adds a request the watcher does not know yet, or updates one it changed. */
  lookup?: (transactionId: string) => Promise<void>;
  /** The requests are the sandbox's (test money): every page shows a test-mode band. */
  testMode?: boolean;
}

const HEARTBEAT_MS = 15_000;

export function checkoutPath(transactionId: string): string {
  return `/checkout/${encodeURIComponent(transactionId)}`;
}

export function sendHtml(res: ServerResponse, status: number, html: string): typeof RESPONDED {
  res.writeHead(status, { ...PAGE_HEADERS, 'content-length': Buffer.byteLength(html) });
  res.end(html);
  return RESPONDED;
}

function notFoundPage(res: ServerResponse): typeof RESPONDED {
  return sendHtml(res, 404, renderMessagePage('Payment not found', 'There is no payment request at this address. Check the link, or ask the shop for a new one.'));
}

/**
 * The page and its event stream: GET only, reading what the watcher knows.
 * Nothing here can create a request, sign or send.
 */
export function checkoutRoutes(watcher: CheckoutWatcher, options: CheckoutRoutesOptions = {}): Route[] {
  const maxStreams = options.maxStreams ?? 200;
  const maxPerClient = options.maxStreamsPerClient ?? 16;
  const streamsByClient = new Map<string, number>();
  let streams = 0;
  const qrCodes = new Map<string, Promise<string>>();
  const qrOf = (uri: string): Promise<string> => {
    let svg = qrCodes.get(uri);
    if (svg === undefined) {
      svg = QRCode.toString(uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 4 });
      qrCodes.set(uri, svg);
    }
    return svg;
  };

  const page = async (call: Call): Promise<typeof RESPONDED> => {
    const id = call.params.transaction_id as string;
    // Every page asks the store: a request it follows may have been changed by another process (a refund).
    await options.lookup?.(id);
    const request = watcher.request(id);
    const [key, value] = AUTOMATIC_RELOAD.split('=') as [string, string];
    const view = watcher.view(id, { looked: call.query.get(key) !== value });
    if (request === undefined || view === undefined) return notFoundPage(call.response);
    const html = renderCheckoutPage({
      request,
      view,
      qrSvg: await qrOf(request.uri),
      eventsPath: `${checkoutPath(request.transaction_id)}/events`,
      redirectSeconds: options.redirectSeconds ?? DEFAULT_REDIRECT_SECONDS,
      reloadSeconds: options.reloadSeconds ?? DEFAULT_RELOAD_SECONDS,
      ...(options.shopName === undefined ? {} : { shopName: options.shopName }),
      testMode: options.testMode === true,
    });
    return sendHtml(call.response, 200, html);
  };

  const events = async (call: Call): Promise<typeof RESPONDED> => {
    const id = call.params.transaction_id as string;
    if (watcher.request(id) === undefined) await options.lookup?.(id);
    const initial = watcher.view(id);
    if (initial === undefined) throw new NanoPayError('NOT_FOUND', 'Unknown checkout');
    const client = call.request.socket.remoteAddress ?? '?';
    if (streams >= maxStreams || (streamsByClient.get(client) ?? 0) >= maxPerClient) {
      throw new NanoPayError('RATE_LIMIT_EXCEEDED', 'Too many pages are open; this one reloads instead', { status: 503 });
    }
    streams += 1;
    streamsByClient.set(client, (streamsByClient.get(client) ?? 0) + 1);
    const res = call.response;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
    return new Promise((resolve) => {
      let unsubscribe = (): void => undefined;
      let done = false;
      const heartbeat = setInterval(() => res.write(': still here\n\n'), HEARTBEAT_MS);
      const finish = (): void => {
        if (done) return;
        done = true;
        clearInterval(heartbeat);
        unsubscribe();
        call.signal.removeEventListener('abort', finish);
        streams -= 1;
        const left = (streamsByClient.get(client) ?? 1) - 1;
        if (left === 0) streamsByClient.delete(client);
        else streamsByClient.set(client, left);
        if (!res.writableEnded) res.end();
        resolve(RESPONDED);
      };
      const push = (view: CheckoutView): void => {
        res.write(`event: status\ndata: ${JSON.stringify(view)}\n\n`);
        // A final state is the last word: the page closes its stream on it.
        if (isFinal(view.state)) finish();
      };
      call.signal.addEventListener('abort', finish);
      push(initial);
      if (!isFinal(initial.state)) unsubscribe = watcher.subscribe(id, push);
    });
  };

  return [
    { method: 'GET', path: '/checkout/:transaction_id', handle: page },
    { method: 'GET', path: '/checkout/:transaction_id/events', endless: true, handle: events },
  ];
}
