import { NanoPayError } from '../errors.js';
import { checkToken, refuseWebPages } from '../http/guards.js';
import { sendStream } from '../http/stream.js';
import { exportFormat, exportQuery, exportRequests } from '../ops/requests/export.js';
import type { Call, Route } from '../http/server.js';
import { SHOP_STATUSES, type ShopRequest, type ShopStatus } from '../store/shop.js';
import type { Store } from '../store/store.js';

const MAX_LIMIT = 100;

export interface ShopApiOptions {
  store: Store;
  token: string;
  /** Makes a request (and keeps it); `created` false when an Idempotency-Key gave back an earlier one. */
  create(body: Record<string, unknown>, idempotencyKey: string | undefined): Promise<{ request: ShopRequest; created: boolean }>;
  /** The page's URL of a request. */
  checkoutUrl(id: string): string;
}

/**
 * The shop's API, for its backend: every route needs the bearer token (checked
 * before anything else, in constant time) and refuses what web pages send, so a
 * customer's browser can never reach it.
 */
export function shopApiRoutes(options: ShopApiOptions): Route[] {
  const { store } = options;
  const guarded =
    (handle: (call: Call) => Promise<unknown>) =>
    (call: Call): Promise<unknown> => {
      checkToken(call.headers, options.token);
      refuseWebPages(call.headers);
      return handle(call);
    };
  const present = (request: ShopRequest): Record<string, unknown> => {
    const { events: _events, ...shown } = request;
    return {
      ...shown,
      checkout_url: options.checkoutUrl(request.id),
      expires_at: request.expires_at ?? null,
      order_id: request.order_id ?? null,
      metadata: request.metadata ?? {},
      fiat: request.fiat ?? null,
    };
  };
  return [
    {
      method: 'POST',
      path: '/api/v1/requests',
      handle: guarded(async (call) => {
        const key = call.headers['idempotency-key'];
        const { request } = await options.create(call.body, Array.isArray(key) ? key[0] : key);
        return present(request);
      }),
    },
    {
      // Before /:id, which would take "export" for an id.
      method: 'GET',
      path: '/api/v1/requests/export',
      handle: guarded(async (call) => {
        const param = (name: string): string | undefined => call.query.get(name) ?? undefined;
        const query = exportQuery({ from: param('from'), to: param('to'), status: param('status') });
        const format = exportFormat(param('format'));
        const bom = param('bom');
        if (bom !== undefined && bom !== 'true' && bom !== 'false') throw new NanoPayError('INVALID_REQUEST', '"bom" must be true or false');
        const headers: Record<string, string> =
          format === 'csv'
            ? { 'content-type': 'text/csv; charset=utf-8; header=present', 'content-disposition': 'attachment; filename="requests.csv"' }
            : { 'content-type': 'application/json; charset=utf-8' };
        return sendStream(call.response, headers, exportRequests(store.shop, query, format, { bom: bom !== 'false' }), call.signal);
      }),
    },
    {
      method: 'GET',
      path: '/api/v1/requests/:id',
      handle: guarded(async (call) => {
        const found = await store.shop.get((call.params.id as string).toLowerCase());
        if (found === undefined) throw new NanoPayError('NOT_FOUND', 'No such request');
        return present(found);
      }),
    },
    {
      method: 'GET',
      path: '/api/v1/requests',
      handle: guarded(async (call) => {
        const status = call.query.get('status') ?? undefined;
        if (status !== undefined && !SHOP_STATUSES.includes(status as ShopStatus)) throw new NanoPayError('INVALID_REQUEST', `"status" must be one of ${SHOP_STATUSES.join(', ')}`);
        const limitText = call.query.get('limit') ?? '10';
        const limit = Number(limitText);
        if (!/^\d+$/.test(limitText) || limit < 1 || limit > MAX_LIMIT) throw new NanoPayError('INVALID_REQUEST', `"limit" must be from 1 to ${MAX_LIMIT}`);
        const orderId = call.query.get('order_id') ?? undefined;
        const after = call.query.get('starting_after') ?? undefined;
        const page = await store.shop.list({
          limit,
          ...(status === undefined ? {} : { status: status as ShopStatus }),
          ...(orderId === undefined ? {} : { orderId }),
          ...(after === undefined ? {} : { startingAfter: after.toLowerCase() }),
        });
        return { data: page.data.map(present), has_more: page.hasMore };
      }),
    },
  ];
}
