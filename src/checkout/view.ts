import type { CheckoutObservation } from '../ops/requests/checkout.js';
import type { RequestState } from '../ops/requests/matching.js';
import { FINAL_STATUSES } from '../store/shop.js';

/** What a page shows: the state `status` tells, in the customer's words. */
export type CheckoutState = RequestState;

/** What a page shows of a request's status, and what is pushed to it. */
export interface CheckoutView {
  state: CheckoutState;
  /** Paid the exact amount in time, and not wholly refunded: what the shop counts as paid. */
  is_paid: boolean;
  block_hash?: string;
  /** Under- or overpaid: what arrived, in XNO. */
  received?: string;
  /** Underpaid: what is still to pay (XNO) and its payment link, when paying it completes the request before its expiry. */
  rest?: string;
  rest_uri?: string;
  /** Refunded, partly or wholly: what went back, in XNO. */
  refunded?: string;
  /** Why the status cannot be read now (for the customer), while it cannot. */
  trouble?: string;
}

/** A page stops following a request once it is paid (or paid late, or refunded): no read changes it any more. */
export const isFinal = (state: CheckoutState): boolean => FINAL_STATUSES.includes(state);

/** Paid wins over expired: a payment that landed is never hidden. */
export function viewOf(observation: CheckoutObservation, now: number): CheckoutView {
  const expired = observation.expires_at !== undefined && observation.expires_at <= now;
  const state = observation.state === 'waiting' && expired ? 'expired' : observation.state;
  const { block_hash, received, rest, rest_uri, refunded } = observation;
  return {
    state,
    is_paid: state === 'paid' || state === 'partially_refunded',
    ...(state === 'paid' && block_hash !== undefined ? { block_hash } : {}),
    ...(received === undefined ? {} : { received }),
    ...(refunded === undefined ? {} : { refunded }),
    // Paying the rest after the expiry would be a late payment: the customer is told to contact the shop instead.
    ...(state !== 'underpaid' || rest === undefined || rest_uri === undefined || expired ? {} : { rest, rest_uri }),
  };
}

export function sameView(a: CheckoutView, b: CheckoutView): boolean {
  return a.state === b.state && a.block_hash === b.block_hash && a.received === b.received && a.rest === b.rest && a.refunded === b.refunded && a.trouble === b.trouble;
}

/** Failures that will not pass by themselves: a page says so at once, not after a few tries. */
const LASTING: Record<string, string> = {
  INSUFFICIENT_CREDITS: "the shop's account with the payment service has run out of credits",
  INVALID_API_KEY: "the payment service refused the shop's key",
  MISSING_API_KEY: "the payment service refused the shop's key",
  API_KEY_NOT_FOUND: "the payment service refused the shop's key",
  UNAUTHORIZED: 'the payment service refused the shop',
  FORBIDDEN: 'the payment service refused the shop',
};

/**
 * What a page tells the customer when the status cannot be read: after the
 * first failure that will not pass by itself, or after `repeated` failures in a
 * row of any kind. Never the service's own words (they may name a key or a URL).
 */
export function troubleOf(code: string, failuresInARow: number, repeated = 3): string | undefined {
  const lasting = LASTING[code];
  if (lasting === undefined && failuresInARow < repeated) return undefined;
  const why = lasting ?? (code === 'RATE_LIMIT_EXCEEDED' ? 'the payment service is refusing too many requests' : 'the payment service cannot be reached');
  return `This page cannot check your payment right now: ${why}. A payment you sent still reaches the shop; the shop can confirm it.`;
}

/**
 * The only redirect a page follows: an absolute http(s) URL, with
 * `transaction_id=<id>` appended to its query (the shop's own query kept as
 * it is, a fragment stays last), so the thanks page knows which order to check.
 * Reaching it proves nothing: anyone can open that URL.
 */
export function safeRedirect(url: string | undefined, transactionId: string): string | undefined {
  if (url === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return undefined;
  const added = `transaction_id=${encodeURIComponent(transactionId)}`;
  parsed.search = parsed.search === '' || parsed.search === '?' ? `?${added}` : `${parsed.search}&${added}`;
  return parsed.href;
}
