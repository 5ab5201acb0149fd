import { createHash } from 'node:crypto';
import { NanoPayError } from '../errors.js';
import { checkRedirectUrl, requestPayment, type PaymentRequestResult } from '../ops/requests/payments.js';
import { askedAmount } from '../ops/money.js';
import type { Session } from '../ops/session.js';
import type { ShopRequest } from '../store/shop.js';
import type { Store } from '../store/store.js';

/** Metadata is for the shop's own references, not a document store: bounded as Stripe bounds it. */
const METADATA_MAX_BYTES = 4096;
const METADATA_MAX_KEYS = 50;
const ORDER_ID_MAX = 200;
const IDEMPOTENCY_KEY_MAX = 255;
const EXPIRES_IN_MIN_S = 1;
const EXPIRES_IN_MAX_S = 30 * 24 * 3600;

/** The body of POST /api/v1/requests, checked. */
interface ShopRequestInput {
  /** In XNO, or in `currency` when it names another. */
  amount: string;
  currency?: string;
  redirect_url?: string;
  order_id?: string;
  metadata?: Record<string, unknown>;
  expires_in?: number;
}

const KNOWN = new Set(['amount', 'currency', 'redirect_url', 'order_id', 'metadata', 'expires_in']);

function invalid(message: string): NanoPayError {
  return new NanoPayError('INVALID_REQUEST', message);
}

function parseShopRequestInput(body: Record<string, unknown>): ShopRequestInput {
  const unknown = Object.keys(body).filter((k) => !KNOWN.has(k));
  if (unknown.length > 0) throw invalid(`Unknown field(s): ${unknown.slice(0, 5).join(', ')}`);
  if (typeof body.amount !== 'string') throw invalid('"amount" is required, as a string (e.g. "1.5" XNO, or "19.99" with "currency": "EUR"): amounts are never JSON numbers');
  if (body.currency !== undefined && typeof body.currency !== 'string') throw invalid('"currency" must be a string: "XNO" (the default) or an ISO 4217 code such as "EUR"');
  const input: ShopRequestInput = { amount: body.amount, ...(body.currency === undefined ? {} : { currency: body.currency }) };
  if (body.redirect_url !== undefined) {
    if (typeof body.redirect_url !== 'string') throw invalid('"redirect_url" must be a string');
    checkRedirectUrl(body.redirect_url);
    input.redirect_url = body.redirect_url;
  }
  if (body.order_id !== undefined) {
    if (typeof body.order_id !== 'string' || body.order_id.length === 0 || body.order_id.length > ORDER_ID_MAX) throw invalid(`"order_id" must be a string of 1 to ${ORDER_ID_MAX} characters`);
    input.order_id = body.order_id;
  }
  if (body.metadata !== undefined) {
    const m = body.metadata;
    if (m === null || typeof m !== 'object' || Array.isArray(m)) throw invalid('"metadata" must be a JSON object');
    if (Object.keys(m).length > METADATA_MAX_KEYS || Buffer.byteLength(JSON.stringify(m)) > METADATA_MAX_BYTES) {
      throw invalid(`"metadata" is limited to ${METADATA_MAX_KEYS} keys and ${METADATA_MAX_BYTES} bytes of JSON`);
    }
    input.metadata = m as Record<string, unknown>;
  }
  if (body.expires_in !== undefined) {
    const s = body.expires_in;
    if (typeof s !== 'number' || !Number.isInteger(s) || s < EXPIRES_IN_MIN_S || s > EXPIRES_IN_MAX_S) {
      throw invalid(`"expires_in" must be whole seconds from ${EXPIRES_IN_MIN_S} to ${EXPIRES_IN_MAX_S}`);
    }
    input.expires_in = s;
  }
  return input;
}

/** The same body however its keys are ordered. */
function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
}

function fingerprint(body: Record<string, unknown>): string {
  return createHash('sha256').update(canonical(body)).digest('hex');
}

/**
 * A request of the shop: made as any payment request (the service's, or one
 * nanopay keeps on a node), then kept in the store with what the shop gave.
 * With an idempotency key already used: the first answer (same body) or
 * IDEMPOTENCY_MISMATCH (another body), and nothing new is made.
 */
export async function createShopRequest(
  session: Session,
  store: Store,
  body: Record<string, unknown>,
  idempotencyKey: string | undefined,
  options: { freshAddress?: boolean } = {},
): Promise<{ request: ShopRequest; created: boolean }> {
  if (idempotencyKey !== undefined && (idempotencyKey.length === 0 || idempotencyKey.length > IDEMPOTENCY_KEY_MAX)) {
    throw invalid(`The Idempotency-Key header must have 1 to ${IDEMPOTENCY_KEY_MAX} characters`);
  }
  const input = parseShopRequestInput(body);
  const idempotency = idempotencyKey === undefined ? undefined : { key: idempotencyKey, fingerprint: fingerprint(body) };
  if (idempotency !== undefined) {
    const found = await store.shop.byIdempotencyKey(idempotency.key);
    if (found !== undefined) return store.shop.create(found.request, idempotency);
  }
  const node = session.backendKind() === 'node';
  const now = Date.now();
  let stored: { request: ShopRequest; created: boolean } | undefined;
  const amount = askedAmount(input.amount, input.currency);
  const made = await requestPayment(
    session,
    {
      amount,
      ...(options.freshAddress === true ? { freshAddress: true } : {}),
      ...(input.redirect_url === undefined ? {} : { redirectUrl: input.redirect_url }),
      // On a node nanopay keeps the expiry with the request (an amount is free again after it), and with the price
      // for one in another currency (within its quote window); the service does not take one.
      ...((node || 'fiat' in amount) && input.expires_in !== undefined ? { expiresInS: input.expires_in } : {}),
    },
    // On a node the request nanopay keeps and the shop's row are one transaction: one commit (one fsync) before the answer.
    async (kept, record) => {
      stored = await store.shop.create(shopRequest(kept, input, now), idempotency, record);
    },
  );
  // Two calls with one key at once: the store keeps the first; the second's payment request is never shown.
  return stored ?? store.shop.create(shopRequest(made, input, now), idempotency);
}

/** The shop's row of a payment request just made. */
function shopRequest(made: PaymentRequestResult, input: ShopRequestInput, now: number): ShopRequest {
  return {
    id: made.transaction_id.toLowerCase(),
    status: 'waiting',
    currency: 'XNO',
    amount: made.amount,
    amount_raw: made.amount_raw,
    ...(made.fiat === undefined ? {} : { fiat: made.fiat }),
    receive_address: made.receive_address,
    uri: made.uri,
    created_at: new Date(now).toISOString(),
    // The request's own expiry on a node (a day unless told) or for a price in another currency (its quote's end);
    // else on the service the shop's, kept here.
    ...(made.expires_at !== undefined
      ? { expires_at: made.expires_at }
      : input.expires_in === undefined
        ? {}
        : { expires_at: new Date(now + input.expires_in * 1000).toISOString() }),
    ...(input.order_id === undefined ? {} : { order_id: input.order_id }),
    ...(input.metadata === undefined ? {} : { metadata: input.metadata }),
    ...(input.redirect_url === undefined ? {} : { redirect_url: input.redirect_url }),
    events: 0,
  };
}
