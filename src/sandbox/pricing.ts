import type { CreditTier } from '../api/contract.js';
import { RAW_PER_XNO } from '../nano/index.js';

/** Credits a new API key starts with (the service's monthly free allowance). */
export const FREE_CREDITS = 1000;

/**
 * Credits each protected call costs in the sandbox, charged on success only;
 * both route forms of an operation (POST body or GET path) cost the same.
 * Reading credits and topping up are free, so an exhausted key can recover.
 */
export const CREDIT_COSTS = {
  balance: 1, // GET /wallet/balance/:address
  pending: 1, // POST /wallet/pending, GET /wallet/pending/:address
  accountInfo: 1, // POST /account/info, GET /account/info/:address
  blockInfo: 1, // POST /block/info, GET /block/info/:hash
  publish: 1, // POST /block/publish
  activeDifficulty: 1, // GET /network/active-difficulty
  paymentRequest: 1, // POST /payment/request
  paymentStatus: 1, // GET /payment/status/:id
  donateAddress: 1, // GET /donate/address
  creditsInfo: 0, // GET /credits/info, GET /credits
  topupOffer: 0, // GET /credits/topup/:n
  topupSubmit: 0, // POST /credits/topup
} as const satisfies Record<string, number>;
export type Operation = keyof typeof CREDIT_COSTS;

/**
 * Price of a tier in raw: 0.0001 XNO a credit (0.001 XNO for 10), 10 % off
 * from 1,000 credits, 20 % off from 10,000.
 */
export function tierPriceRaw(tier: CreditTier): bigint {
  const base = BigInt(tier) * (RAW_PER_XNO / 10_000n);
  const percent = tier >= 10000 ? 80n : tier >= 1000 ? 90n : 100n;
  return (base * percent) / 100n;
}
