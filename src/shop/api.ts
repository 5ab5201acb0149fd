import { NanoPayError } from '../errors.js';
import { sendJson, successEnvelope } from '../http/respond.js';
import { sendStream } from '../http/stream.js';
import { exportFormat, exportQuery, exportRequests } from '../ops/requests/export.js';
import { cancelClaim, listClaims, type ClaimShown } from '../ops/requests/refund-claims.js';
import { RESPONDED, type Call, type Route } from '../http/server.js';
import type { ApiAccess } from './api-access.js';
import type { RefundRecord } from '../store/refunds.js';
import { SHOP_STATUSES, type ShopRequest, type ShopStatus } from '../store/shop.js';
import { withTotals } from '../store/shop-events.js';
import type { Store } from '../store/store.js';

const MAX_LIMIT = 100;

export interface ShopApiOptions {
  store: Store;
  /** Who may call: the shop's token or an API key, and the role each route needs (api-access.ts). */
  access: ApiAccess;
  /** Makes a request (and keeps it); `created` false when an Idempotency-Key gave back an earlier one. */
  create(body: Record<string, unknown>, idempotencyKey: string | undefined): Promise<{ request: ShopRequest; created: boolean }>;
  /** The page's URL of a request. */
  checkoutUrl(id: string): string;
  /** Makes a refund claim of request `id` (its link's token is in the answer only). */
  createClaim(id: string, body: Record<string, unknown>): Promise<{ claim: ClaimShown; token: string }>;
  /** The page a claim's customer opens. */
  claimUrl(token: string): string;
  /** Records a refund order of request `id` (`created` false when its Idempotency-Key gave back an earlier one); a signer carries it out. */
  refund(id: string, body: Record<string, unknown>, idempotencyKey: string | undefined): Promise<{ refund: Omit<RefundRecord, 'fingerprint'>; created: boolean }>;
}

const REFUND_FIELDS = new Set(['amount', 'to']);
const CLAIM_FIELDS = new Set(['amount', 'expires_in']);

function onlyFields(body: Record<string, unknown>, known: Set<string>): void {
  const unknown = Object.keys(body).filter((k) => !known.has(k));
  if (unknown.length > 0) throw new NanoPayError('INVALID_REQUEST', `Unknown field(s): ${unknown.slice(0, 5).join(', ')}`);
  for (const name of known) if (body[name] !== undefined && typeof body[name] !== 'string') throw new NanoPayError('INVALID_REQUEST', `"${name}" must be a string`);
}

/**
 * The shop's API, for its backend: every route needs the shop's token or an API key whose role allows it
 * (checked before anything else: reading needs `read`, making requests `create`, refunds `refund`) and
 * refuses what web pages send, so a customer's browser can never reach it.
 */
export function shopApiRoutes(options: ShopApiOptions): Route[] {
  const { store } = options;
  const { guarded } = options.access;
  const present = (request: ShopRequest): Record<string, unknown> => {
    const { events: _events, ...shown } = withTotals(request);
    return {
      ...shown,
      checkout_url: options.checkoutUrl(request.id),
      expires_at: request.expires_at ?? null,
      order_id: request.order_id ?? null,
      metadata: request.metadata ?? {},
      fiat: request.fiat ?? null,
    };
  };
  const idempotencyKey = (call: Call): string | undefined => {
    const key = call.headers['idempotency-key'];
    return Array.isArray(key) ? key[0] : key;
  };
  return [
    {
      method: 'POST',
      path: '/api/v1/requests/:id/refund-claims',
      handle: guarded('refund', async (call) => {
        onlyFields(call.body, CLAIM_FIELDS);
        const { claim, token } = await options.createClaim((call.params.id as string).toLowerCase(), call.body);
        sendJson(call.response, 201, successEnvelope({ ...claim, url: options.claimUrl(token) }));
        return RESPONDED;
      }),
    },
    {
      method: 'GET',
      path: '/api/v1/requests/:id/refund-claims',
      handle: guarded('read', async (call) => ({ data: await listClaims(store, call.params.id as string) })),
    },
    {
      method: 'POST',
      path: '/api/v1/refund-claims/:claim/cancel',
      handle: guarded('refund', async (call) => cancelClaim(store, call.params.claim as string)),
    },
    {
      method: 'POST',
      path: '/api/v1/requests/:id/refunds',
      // Accepted, not done: the order waits in the store for a signer (checkout serve --refunds, or nanopay refund --pending).
      handle: guarded('refund', async (call) => {
        const unknown = Object.keys(call.body).filter((k) => !REFUND_FIELDS.has(k));
        if (unknown.length > 0) throw new NanoPayError('INVALID_REQUEST', `Unknown field(s): ${unknown.slice(0, 5).join(', ')}`);
        const { amount, to } = call.body;
        if (amount !== undefined && typeof amount !== 'string') throw new NanoPayError('INVALID_REQUEST', '"amount" must be a string of XNO (e.g. "0.5")');
        if (to !== undefined && typeof to !== 'string') throw new NanoPayError('INVALID_REQUEST', '"to" must be an address');
        const { refund } = await options.refund((call.params.id as string).toLowerCase(), call.body, idempotencyKey(call));
        sendJson(call.response, 202, successEnvelope(refund));
        return RESPONDED;
      }),
    },
    {
      method: 'GET',
      path: '/api/v1/requests/:id/refunds',
      handle: guarded('read', async (call) => {
        const id = (call.params.id as string).toLowerCase();
        if ((await store.shop.get(id)) === undefined) throw new NanoPayError('NOT_FOUND', 'No such request');
        return { data: (await store.refunds.ofRequest(id)).map(({ fingerprint: _fingerprint, ...shown }) => shown) };
      }),
    },
    {
      method: 'POST',
      path: '/api/v1/requests',
      handle: guarded('create', async (call) => {
        const { request } = await options.create(call.body, idempotencyKey(call));
        return present(request);
      }),
    },
    {
      // Before /:id, which would take "export" for an id.
      method: 'GET',
      path: '/api/v1/requests/export',
      handle: guarded('read', async (call) => {
        const param = (name: string): string | undefined => call.query.get(name) ?? undefined;
        const query = exportQuery({ from: param('from'), to: param('to'), status: param('status') });
        const format = exportFormat(param('format'));
        const bom = param('bom');
        if (bom !== undefined && bom !== 'true' && bom !== 'false') throw new NanoPayError('INVALID_REQUEST', '"bom" must be true or false');
        const headers: Record<string, string> =
          format === 'csv'
            ? { 'content-type': 'text/csv; charset=utf-8; header=present', 'content-disposition': 'attachment; filename="requests.csv"' }
            : { 'content-type': format === 'ndjson' ? 'application/x-ndjson; charset=utf-8' : 'application/json; charset=utf-8' };
        return sendStream(call.response, headers, exportRequests(store.shop, query, format, { bom: bom !== 'false' }), call.signal);
      }),
    },
    {
      method: 'GET',
      path: '/api/v1/requests/:id',
      handle: guarded('read', async (call) => {
        const found = await store.shop.get((call.params.id as string).toLowerCase());
        if (found === undefined) throw new NanoPayError('NOT_FOUND', 'No such request');
        return present(found);
      }),
    },
    {
      method: 'GET',
      path: '/api/v1/requests',
      handle: guarded('read', async (call) => {
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
