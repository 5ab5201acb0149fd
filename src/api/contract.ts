import { NanoPayError } from '../errors.js';

/**
 * Facts of the service's contract that both sides of it (the client and the
 * sandbox) must agree on: the credit tiers and the form of transaction ids.
 */
export const CREDIT_TIERS = [10, 50, 100, 500, 1000, 5000, 10000, 50000, 100000] as const;
export type CreditTier = (typeof CREDIT_TIERS)[number];

/** A tier exactly as the service lists it: "10", never "010", "1e1" or " 10". */
export function parseTier(value: string | number): CreditTier {
  const text = String(value);
  const tier = CREDIT_TIERS.find((n) => String(n) === text);
  if (tier === undefined) {
    throw new NanoPayError('INVALID_CREDITS_AMOUNT', `Credits are bought in tiers of ${CREDIT_TIERS.join(', ')}; "${text.slice(0, 20)}" is not one`);
  }
  return tier;
}

/** Where a customer is sent after paying: only http(s), never javascript: or data:. */
export function checkRedirectUrl(url: string | undefined): void {
  if (url !== undefined && !/^https?:\/\/\S+$/i.test(url)) throw new NanoPayError('INVALID_REQUEST', `"${url.slice(0, 200)}" is not an http(s) URL`);
}

const TRANSACTION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Transaction ids (payment requests, top-ups) are UUIDs. */
export function isTransactionId(id: string): boolean {
  return TRANSACTION_ID.test(id);
}
