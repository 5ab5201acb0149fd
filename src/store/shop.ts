import { NanoPayError } from '../errors.js';
import type { RequestRecord } from '../wallet/requests.js';
import type { FiatPrice } from './prices.js';
import type { RefundClaim } from './refunds.js';
import type { ShopFilter, ShopSearchPage, ShopSearchQuery, ShopTotals } from './shop-search.js';

/**
 * The shop server's tables (checkout serve): its requests, with what the shop
 * gave (order id, metadata, redirect) and where each stands, and the webhook
 * events of their changes. A change of status and its event are written in one
 * transaction, with the event queued in the outbox for delivery: a crash never
 * loses one, nor sends one for a change that did not happen.
 */

/** Where a shop's request stands: the states `status` tells (ops/requests/matching.ts), in the same words. */
export type ShopStatus = 'waiting' | 'paid' | 'paid_late' | 'underpaid' | 'overpaid' | 'expired' | 'refunded' | 'partially_refunded';

/** Every status, for filters (the API's list, exports) to check theirs against. */
export const SHOP_STATUSES: readonly ShopStatus[] = ['waiting', 'paid', 'paid_late', 'underpaid', 'overpaid', 'expired', 'refunded', 'partially_refunded'];

/**
 * A status no read changes any more. Under- and overpaid are not final (an
 * underpaid request may be paid in full), nor is expired: the exact amount may
 * still arrive, and is then paid late. A refund, whole or partial, ends the
 * reading: the merchant decided, and only further refunds change it.
 */
export const FINAL_STATUSES: readonly ShopStatus[] = ['paid', 'paid_late', 'refunded', 'partially_refunded'];

/** What the monitor follows of an unsettled request (ShopTable.unsettled). */
export type UnsettledRequest = Pick<ShopRequest, 'id' | 'status' | 'receive_address' | 'created_at' | 'expires_at'>;

/** A row of `unsettled` as the monitor takes it (both stores): no seq, no expiry when there is none. */
export function unsettledRow({ seq: _seq, expires_at, ...row }: UnsettledRequest & { seq: unknown; expires_at: string | null }): UnsettledRequest {
  return expires_at === null ? row : { ...row, expires_at };
}

/** A request of the shop, as its API shows it (snake_case, amounts as decimal strings). */
export interface ShopRequest {
  id: string;
  status: ShopStatus;
  /** The currency of `amount`, what the payer sends: always XNO (a price in another currency is in `fiat`). */
  currency: 'XNO';
  amount: string;
  amount_raw: string;
  /** Priced in another currency: the price, and the rate `amount` was computed at (fixed for the life of the request). */
  fiat?: FiatPrice;
  receive_address: string;
  uri: string;
  created_at: string;
  expires_at?: string;
  order_id?: string;
  metadata?: Record<string, unknown>;
  redirect_url?: string;
  /** The paying blocks, once paid (node backend), or the block the service names. */
  paid_by?: string[];
  /** The accounts that sent those blocks (read from the blocks, proved). */
  payers?: string[];
  /** What arrived, block by block: who sent it and how much (proved from the blocks); an under- or overpayment's too. */
  payments?: PaymentLine[];
  /** When nanopay recorded it paid (or paid late). */
  paid_at?: string;
  /** Under- or overpaid: raw received so far (node backend, fresh addresses). */
  received_raw?: string;
  /** Underpaid: raw still to pay, when paying it to the same address completes the request. */
  rest_raw?: string;
  /** Refunded (partly or wholly): what went back, in all, its blocks, when the last one landed, and each refund. */
  refunded_amount?: string;
  refunded_amount_raw?: string;
  refund_blocks?: string[];
  refunded_at?: string;
  refunds?: RefundLine[];
  /** Events emitted for it so far (the next event's number within the request is this + 1). */
  events: number;
}

/** One block that paid (or part-paid) a request, as the shop's API, its events and its exports show it. */
export interface PaymentLine {
  block: string;
  from: string;
  amount: string;
  amount_raw: string;
}

/** One refund of a request, as its status, the shop's API and its events show it. */
export interface RefundLine {
  id: string;
  amount: string;
  amount_raw: string;
  to: string;
  block: string;
  refunded_at: string;
}

/**
 * A change of status is `request.<status>`; every refund, whole or partial, is `request.refunded` (the object's
 * status tells which); a refund given up is `request.refund_failed` (its refund in `data.refund`); a refund claim the
 * customer answered is `refund.claimed` (the claim in `data.claim`).
 */
export type WebhookType = `request.${Exclude<ShopStatus, 'waiting' | 'partially_refunded'>}` | 'request.refund_failed' | 'refund.claimed';

/** The refund an event is about (request.refunded, request.refund_failed). */
export interface EventRefund {
  id: string;
  status: 'pending' | 'sent' | 'failed';
  amount: string;
  amount_raw: string;
  to: string;
  block?: string;
  attempts?: number;
  error?: { code: string; message: string };
}

/** A webhook event: what is signed and sent (id, type, created, data) and how its delivery goes. */
export interface WebhookEvent {
  id: string;
  type: WebhookType;
  /** Unix seconds. */
  created: number;
  /** Its number among the events of its request: they are delivered in this order. */
  request_seq: number;
  data: { object: ShopRequest; refund?: EventRefund; claim?: Omit<RefundClaim, 'token_hash'> };
  delivery: {
    attempts: number;
    delivered_at?: string;
    last_attempt_at?: string;
    /** The endpoint's HTTP status, or why it could not be reached. */
    last_result?: string;
    /** The endpoints that answered 2xx (a retry goes to the others only). */
    delivered_to?: string[];
    /** Given up after the retry period. */
    failed?: boolean;
  };
}

export interface ShopListQuery {
  status?: ShopStatus;
  orderId?: string;
  limit: number;
  /** A request id: the page starts after it (newest first). */
  startingAfter?: string;
}

/** Which requests an export takes: created from `from` (ISO, included) to `to` (excluded), of one status. */
export interface ShopExportQuery {
  from?: string;
  to?: string;
  status?: ShopStatus;
}

export interface ShopTable {
  /**
   * Adds a request. With an idempotency key already used: the request made with it when `fingerprint`
   * (of the body) is the same (created false), IDEMPOTENCY_MISMATCH when it differs. `kept`: the payment
   * request nanopay keeps for it (on a node), added to the requests table in the same transaction (one
   * commit, and none of it when the key was used).
   */
  create(request: ShopRequest, idempotency?: { key: string; fingerprint: string }, kept?: RequestRecord): Promise<{ request: ShopRequest; created: boolean }>;
  /** The request first made with this idempotency key, and the fingerprint of its body. */
  byIdempotencyKey(key: string): Promise<{ request: ShopRequest; fingerprint: string } | undefined>;
  get(id: string): Promise<ShopRequest | undefined>;
  /** Newest first; `hasMore` when the next page has some. */
  list(query: ShopListQuery): Promise<{ data: ShopRequest[]; hasMore: boolean }>;
  /** A page of the requests a person looks for (the dashboard), in the order asked, from an earlier page's `next`. */
  search(query: ShopSearchQuery): Promise<ShopSearchPage>;
  /** How many requests the filter selects, and what they received and refunded. */
  totals(filter: ShopFilter): Promise<ShopTotals>;
  /**
   * Up to `limit` requests of `query` recorded after the one numbered `after`, in the order they were
   * recorded (oldest first): a page of an export, one statement along the primary key (no index more for
   * every request made to keep up). `next` is where the following page starts, absent after the last.
   */
  exportPage(query: ShopExportQuery, after: number | undefined, limit: number): Promise<{ requests: ShopRequest[]; next?: number }>;
  /**
   * Every request whose status may still change, oldest first: waiting, underpaid, overpaid, and those
   * expired after `expiredSince` (ISO; a late payment may still come for them). Only what following
   * them needs, not their documents: a shop may have 100,000 open. With `after` (an earlier answer's
   * `last`), only those recorded since, along the primary key: `last` is where the next such read starts.
   */
  unsettled(expiredSince: string, after?: number): Promise<{ requests: UnsettledRequest[]; last: number }>;
  /**
   * In one transaction, when the request's status is still `from`: stores `next` and adds `event`,
   * queued in the outbox under WEBHOOK_TOPIC for the live endpoints and under its destination's topic
   * for each listener registered and not expired. False when another instance changed it first.
   */
  change(from: ShopStatus, next: ShopRequest, event?: WebhookEvent): Promise<boolean>;
  event(id: string): Promise<WebhookEvent | undefined>;
  /** Newest first. */
  events(limit: number): Promise<WebhookEvent[]>;
  /** The events of one request, in their order. */
  eventsOf(requestId: string): Promise<WebhookEvent[]>;
  /**
   * Whether an earlier event of the request is not delivered yet (nor given up): to the live endpoints,
   * or to listener `destination`.
   */
  earlierPending(requestId: string, requestSeq: number, destination?: string): Promise<boolean>;
  /** Records a delivery attempt's outcome: to the live endpoints (in the event), or to listener `destination`. */
  recordDelivery(id: string, delivery: WebhookEvent['delivery'], destination?: string): Promise<void>;
  /** How event `id`'s delivery to listener `destination` goes; undefined when it is not one of its events (or it expired). */
  delivery(id: string, destination: string): Promise<WebhookEvent['delivery'] | undefined>;
  /**
   * Registers listener `destination` (or renews it) until `leaseMs` from now: every event recorded meanwhile
   * is queued for it too. Listeners whose lease ran out are removed, with what waited for them.
   */
  addDestination(destination: string, url: string, leaseMs: number): Promise<void>;
  /** Removes listener `destination` and what waits for it. */
  removeDestination(destination: string): Promise<void>;
}

/** Statuses of a request that was paid the exact amount in time (a refund, whole or partial, came after). */
export const PAID_STATUSES: readonly ShopStatus[] = ['paid', 'refunded', 'partially_refunded'];

/**
 * The status of a paid request once its refunds are counted: refunded when they reach what it received, partly
 * refunded before. Only a paid request takes them: any other keeps its own (underpaid, overpaid, paid late,
 * expired), its refunds shown beside it, so "partially_refunded" always means paid.
 */
export function statusWithRefunds(status: ShopStatus, refundedRaw: bigint, receivedRaw: bigint): ShopStatus {
  if (!PAID_STATUSES.includes(status) || refundedRaw === 0n) return status;
  return refundedRaw >= receivedRaw ? 'refunded' : 'partially_refunded';
}

/** The outbox topic of webhook events for the live endpoints (checkout serve --webhook): each item's payload is `{event_id}`. */
export const WEBHOOK_TOPIC = 'webhook';

/** The outbox topic of a listener's events (listen --forward-to): its own, so it never takes the live endpoints' deliveries. */
export const destinationTopic = (destination: string): string => `${WEBHOOK_TOPIC}:${destination}`;

/** A reused idempotency key with another body: refused, as Stripe does. */
export function idempotencyMismatch(key: string): NanoPayError {
  return new NanoPayError('IDEMPOTENCY_MISMATCH', `The Idempotency-Key "${key.slice(0, 80)}" was used with another body; nothing was created`, {
    hint: 'Use a new key for another request.',
  });
}
