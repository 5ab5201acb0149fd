import type { CheckoutObservation } from '../ops/checkout.js';

export type CheckoutState = 'waiting' | 'paid' | 'expired';

/** What a page shows of a request's status, and what is pushed to it. */
export interface CheckoutView {
  state: CheckoutState;
  block_hash?: string;
}

/** Paid wins over expired: a payment that landed is never hidden. */
export function viewOf(observation: CheckoutObservation, now: number): CheckoutView {
  if (observation.paid) return { state: 'paid', ...(observation.block_hash === undefined ? {} : { block_hash: observation.block_hash }) };
  return { state: observation.expires_at !== undefined && observation.expires_at <= now ? 'expired' : 'waiting' };
}

export function sameView(a: CheckoutView, b: CheckoutView): boolean {
  return a.state === b.state && a.block_hash === b.block_hash;
}

/** The only redirect a page follows: an absolute http(s) URL. */
export function safeRedirect(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.href : undefined;
  } catch {
    return undefined;
  }
}
