import { RAW_PER_XNO } from '../nano/index.js';

/** The nine top-up tiers of the service. */
export const TIERS = [10, 50, 100, 500, 1000, 5000, 10000, 50000, 100000] as const;
export type Tier = (typeof TIERS)[number];

export const FREE_CREDITS = 1000;

/**
 * Credits each protected call costs in the sandbox (charged on success only).
 * Reading credits and topping up are free, so an exhausted key can recover.
 */
export const CREDIT_COSTS: Record<string, number> = {
  'GET /wallet/balance': 1,
  'POST /wallet/pending': 1,
  'POST /account/info': 1,
  'POST /block/info': 1,
  'POST /block/publish': 1,
  'GET /network/active-difficulty': 1,
  'POST /payment/request': 1,
  'GET /payment/status': 1,
  'GET /donate/address': 1,
  'GET /credits/info': 0,
  'GET /credits/topup': 0,
  'POST /credits/topup': 0,
};

/** 0.0001 XNO a credit, 10 % off from 1,000 credits, 20 % off from 10,000. */
export function tierPriceRaw(tier: Tier): bigint {
  const base = BigInt(tier) * (RAW_PER_XNO / 10_000n);
  const discount = tier >= 10000 ? 80n : tier >= 1000 ? 90n : 100n;
  return (base * discount) / 100n;
}

export function isTier(value: number): value is Tier {
  return (TIERS as readonly number[]).includes(value);
}
