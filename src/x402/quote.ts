import { NanoPayError } from '../errors.js';
import { isValidAddress, normalizeAddress, rawToXno } from '../nano/index.js';
import { lanesOf } from '../ops/lanes/accounts.js';
import { judgeDry } from '../ops/spending/movement.js';
import type { Session } from '../ops/session.js';
import { choose, maximum, payerNetwork, reach, readRequired, x402Spend, type PaidFetchOptions } from './client.js';
import { X402_ASSET, X402_SCHEME, type PaymentRequired, type PaymentRequirements } from './protocol.js';

/**
 * What a server asks for a request and what nanopay would do about it, found
 * without paying: nothing signed, journaled or recorded (`fetch --dry-run`).
 */
export interface X402Quote {
  dry_run: true;
  /** The URL that answered (redirects within its origin followed). */
  url: string;
  /** The status of the unpaid answer. */
  status: number;
  /** Whether the server asks for payment (402). */
  payment_required: boolean;
  /** The offer nanopay would pay (the cheapest Nano one on its network within the maximum), else the cheapest Nano one it saw. */
  amount?: string;
  amount_raw?: string;
  pay_to?: string;
  network?: string;
  /** The network of this wallet's backend: the only one it pays on. */
  payer_network?: string;
  /** allow: it would pay; ask: it would wait for a person's approval; deny: it would pay nothing. */
  decision?: 'allow' | 'ask' | 'deny';
  /** The policy rule that holds or refuses it (as `policy set` takes it). */
  rule?: string;
  message?: string;
  /** Why it would pay nothing before the policy is asked: X402_UNPAYABLE (no maximum, over it, another network, no Nano offer). */
  code?: string;
  /** Every offer of the 402, as the server sent it. */
  accepts?: PaymentRequirements[];
  /** A redirect to another origin, not followed. */
  redirect?: string;
}

/** The cheapest Nano offer, for showing when none can be paid. */
function cheapestNano(required: PaymentRequired): PaymentRequirements | undefined {
  return required.accepts
    .filter((a) => a.scheme === X402_SCHEME && a.asset === X402_ASSET && isValidAddress(a.payTo) && /^\d+$/.test(a.amount))
    .sort((a, b) => (BigInt(a.amount) < BigInt(b.amount) ? -1 : 1))[0];
}

function offerOf(offer: PaymentRequirements | undefined): Pick<X402Quote, 'amount' | 'amount_raw' | 'pay_to' | 'network'> {
  return offer === undefined ? {} : { amount: rawToXno(BigInt(offer.amount)), amount_raw: offer.amount, pay_to: offer.payTo, network: offer.network };
}

/**
 * A dry run of fetchWithPayment: the request is sent unpaid (as fetch sends
 * it first, so a free resource answers it as usual; its body is not kept),
 * and on a 402 the offer it would pay is chosen as a payment would choose it
 * and judged by the spending policy as a payment would be (decideSpend, which
 * records nothing). Nothing is signed, journaled or recorded.
 */
export async function quoteX402(session: Session, input: string | URL, init: RequestInit = {}, options: Pick<PaidFetchOptions, 'maxXno' | 'wallet' | 'index' | 'approval' | 'signal' | 'transport'> = {}): Promise<X402Quote> {
  const reached = await reach(String(input), init, options.signal, options.transport);
  const base = { dry_run: true as const, url: reached.url, status: reached.response.status, ...(reached.redirect === undefined ? {} : { redirect: reached.redirect }) };
  if (reached.response.status !== 402) {
    await reached.response.body?.cancel().catch(() => undefined);
    return { ...base, payment_required: false };
  }
  await reached.response.arrayBuffer();
  const ctx = await session.context(options.signal);
  const network = await payerNetwork(session, ctx);
  let required: PaymentRequired | undefined;
  let chosen: PaymentRequirements;
  try {
    required = readRequired(reached.response);
    chosen = choose(required, maximum(session, options.maxXno), network);
  } catch (error) {
    if (!(error instanceof NanoPayError) || error.code !== 'X402_UNPAYABLE') throw error;
    const offer = required === undefined ? undefined : cheapestNano(required);
    return { ...base, payment_required: true, ...offerOf(offer), payer_network: network, decision: 'deny', code: error.code, message: error.message, ...(required === undefined ? {} : { accepts: required.accepts }) };
  }
  const lanes = options.index === undefined ? lanesOf(session, options.wallet) : undefined;
  const byLane = lanes !== undefined && BigInt(chosen.amount) <= BigInt(lanes.settings.fundRaw);
  // The account approvals bind to: the one a lane pays for, or the account itself.
  const account = byLane ? await session.address(lanes.wallet, lanes.settings.from) : await session.address(options.wallet, options.index);
  const spend = x402Spend(reached.url, chosen, options.approval, undefined);
  const verdict = await judgeDry(ctx, { account, to: normalizeAddress(chosen.payTo), amountRaw: BigInt(chosen.amount), ...spend, caller: ctx.frontEnd });
  const decision = verdict.outcome;
  return {
    ...base,
    payment_required: true,
    ...offerOf(chosen),
    payer_network: network,
    decision,
    ...(decision === 'allow' || verdict.rule === undefined ? {} : { rule: verdict.rule, message: verdict.message as string }),
    accepts: required.accepts,
  };
}
