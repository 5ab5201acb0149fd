import { CREDIT_TIERS, type CreditTier } from '../api/client.js';
import { NanoPayError } from '../errors.js';
import { linkAsAccount, rawToXno, xnoToRaw } from '../nano/index.js';
import { executeSend, planSend } from './chain.js';
import { checkPerDay, checkPerSend } from './limits.js';
import { recordLanded } from './recovery.js';
import { preview, type SendPreview } from './send.js';
import type { Session } from './session.js';

export interface CreditsResult {
  credits: number;
  tiers: { credits: number; price: string }[];
}

export async function credits(session: Session): Promise<CreditsResult> {
  const info = await (await session.api()).credits();
  return { credits: info.credits, tiers: CREDIT_TIERS.map((n) => ({ credits: n, price: info.prices[n] })) };
}

export function parseTier(value: string | number): CreditTier {
  const n = Number(value);
  if (!/^\d+$/.test(String(value)) || !(CREDIT_TIERS as readonly number[]).includes(n)) {
    throw new NanoPayError('INVALID_CREDITS_AMOUNT', `Credits are bought in tiers of ${CREDIT_TIERS.join(', ')}; "${String(value).slice(0, 20)}" is not one`);
  }
  return n as CreditTier;
}

export interface TopupResult {
  topped_up_credits: number;
  new_credits_balance: number;
  hash: string;
  amount: string;
  payment_address: string;
  /** True when this run completed an earlier, interrupted top-up instead of paying again. */
  resumed: boolean;
}

/**
 * Buys credits: the service names address, amount and a transaction id; we
 * send exactly that and submit the block with the id. An interrupted top-up
 * (paid, not credited) is completed by the next run without paying twice.
 */
export async function topup(session: Session, input: { tier: string | number; confirm?: (p: SendPreview) => Promise<boolean>; signal?: AbortSignal }): Promise<TopupResult> {
  const tier = parseTier(input.tier);
  const account = await session.account();
  const ctx = await session.context(input.signal);

  const pending = await session.journal.read(account.address);
  if (pending?.topupTransactionId !== undefined) {
    const resumed = await session.withAccount(ctx, account, async (_head, settled) => settled);
    // The earlier top-up is complete now; if it was for this tier, that was what the rerun was for.
    if (resumed.topup !== undefined && resumed.entry !== undefined && resumed.topup.toppedUp === tier) {
      return {
        topped_up_credits: resumed.topup.toppedUp,
        new_credits_balance: resumed.topup.newBalance,
        hash: resumed.entry.hash,
        amount: rawToXno(BigInt(resumed.entry.amountRaw ?? '0')),
        payment_address: linkAsAccount(resumed.entry.block.link),
        resumed: true,
      };
    }
  }

  const offer = await ctx.api.topupOffer(tier);
  const amountRaw = xnoToRaw(offer.amountXno);
  const limits = session.profile().limits;
  checkPerSend(limits, amountRaw);
  const first = await planSend(ctx, account.address, offer.paymentAddress, amountRaw);
  if (input.confirm !== undefined && !(await input.confirm(preview(account.address, first.to, amountRaw, first.head.state.balance)))) {
    throw new NanoPayError('CANCELLED', 'Top-up cancelled; nothing was paid');
  }
  let answer: { toppedUp: number; newBalance: number } | undefined;
  const submitting = { ...ctx, publish: async (block: Parameters<typeof ctx.api.topupSubmit>[0]) => void (answer = await ctx.api.topupSubmit(block, offer.transactionId)) };
  return session.withAccount(ctx, account, async () => {
    const plan = await planSend(submitting, account.address, offer.paymentAddress, amountRaw);
    checkPerDay(limits, await session.sendLog.spentToday(account.address), amountRaw);
    const sent = await executeSend(submitting, account, plan, { topupTransactionId: offer.transactionId });
    await recordLanded(session, sent.entry);
    if (answer === undefined) throw new NanoPayError('INVALID_DATA', 'The service did not confirm the top-up');
    return {
      topped_up_credits: answer.toppedUp,
      new_credits_balance: answer.newBalance,
      hash: sent.hash,
      amount: rawToXno(amountRaw),
      payment_address: plan.to,
      resumed: false,
    };
  });
}
