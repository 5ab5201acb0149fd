import { randomUUID } from 'node:crypto';
import { rawToXno } from '../nano/index.js';
import { receivedRaw } from './shop-search.js';
import { type EventRefund, type ShopRequest, type WebhookEvent, type WebhookType } from './shop.js';

/**
 * A shop request as every surface shows it (the API, its webhook events, the exports), with the totals that
 * make its status impossible to misread; and the events of its changes. Apart from shop.ts, which the
 * checkout page's server loads without the Nano code.
 */

/** What every surface shows of a request beside its status, so it cannot be misread: paid or not, received, refunded. */
export interface RequestTotals {
  /** Paid the exact amount in time, and not wholly refunded. */
  is_paid: boolean;
  received_amount: string;
  received_amount_raw: string;
  refunded_amount: string;
  refunded_amount_raw: string;
}

/**
 * The totals of a request, from its record: what arrived is what the reading found (under- or overpaid), else
 * the amount for a request that was paid (in time or late), else nothing.
 */
export function requestTotals(request: ShopRequest): RequestTotals {
  const received = receivedRaw(request);
  const refunded = request.refunded_amount_raw ?? '0';
  return {
    is_paid: request.status === 'paid' || request.status === 'partially_refunded',
    received_amount: rawToXno(BigInt(received)),
    received_amount_raw: received,
    refunded_amount: rawToXno(BigInt(refunded)),
    refunded_amount_raw: refunded,
  };
}

/** The request with its totals: as the API, the events, the exports and the page show it. */
export const withTotals = (request: ShopRequest): ShopRequest & RequestTotals => ({ ...request, ...requestTotals(request) });

/** A new event of a request's change: `next` is the request as it is with it (its `events` is the event's number). */
export function newEvent(type: WebhookType, next: ShopRequest, refund?: EventRefund): WebhookEvent {
  return {
    id: `evt_${randomUUID().replaceAll('-', '')}`,
    type,
    created: Math.floor(Date.now() / 1000),
    request_seq: next.events,
    data: { object: withTotals(next), ...(refund === undefined ? {} : { refund }) },
    delivery: { attempts: 0 },
  };
}

