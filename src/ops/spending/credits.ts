import { CREDIT_TIERS, parseTier, type CreditTier } from '../../api/contract.js';
import { NanoPayError } from '../../errors.js';
import { linkAsAccount, rawToXno, xnoToRaw } from '../../nano/index.js';
import type { TopupAnswer } from '../../wallet/journal.js';
import type { SendRecord } from '../../wallet/send-log.js';
import { readAccountHead, type AccountHead } from '../ledger/chain.js';
import { inconsistent } from '../ledger/inconsistent.js';
import { recordedHead } from '../ledger/recorded-head.js';
import type { OpsContext, Signer } from '../context.js';
import { xnoAndRaw } from '../money.js';
import { move, type Confirm } from './movement.js';
import { settleJournal } from '../ledger/recovery.js';
import type { Session } from '../session.js';

export { parseTier };

export interface CreditsResult {
  credits: number;
  tiers: { credits: number; price: string }[];
}

export async function credits(session: Session): Promise<CreditsResult> {
  const info = await (await session.api()).credits();
  return { credits: info.credits, tiers: CREDIT_TIERS.map((n) => ({ credits: n, price: info.prices[n] })) };
}

export interface TopupResult {
  topped_up_credits: number;
  new_credits_balance: number;
  hash: string;
  amount: string;
  payment_address: string;
  /** True when this run completed an earlier, interrupted top-up instead of paying again. */
  resumed: boolean;
  /** True when `id` had already bought this top-up: its result, nothing paid this time. */
  repeated: boolean;
  /** Credits just before this top-up (not known for a resumed one). */
  credits_before?: number;
  /** What the top-up's own protected calls (balance, publish…) cost: before + bought - after. */
  calls_cost?: number;
}

export interface TopupInput {
  tier: string | number;
  /** The wallet and account index that pay, as for a send (default: the active ones). */
  wallet?: string;
  index?: number;
  confirm?: Confirm;
  /** The approval a person gave for this very top-up (APPROVAL_REQUIRED named it). */
  approval?: string;
  /** Idempotency key: a retry with it (after a lost answer) returns the first top-up's result and pays nothing. */
  id?: string;
  /**
   * Shows the result to the user. It runs before the top-up's journal entry
   * goes, so a run killed before the user saw the result is completed by the
   * next run instead of buying again.
   */
  report?: (result: TopupResult) => void | Promise<void>;
  signal?: AbortSignal;
}

function resultOf(answer: TopupAnswer, hash: string, amountRaw: bigint, paymentAddress: string, resumed: boolean): TopupResult {
  return { topped_up_credits: answer.toppedUp, new_credits_balance: answer.newBalance, hash, amount: rawToXno(amountRaw), payment_address: paymentAddress, resumed, repeated: false };
}

/** The top-up an idempotency key bought already, if it is this one (this tier, from this account); another payment under the key is refused. */
function repeatedTopup(record: SendRecord, id: string, tier: CreditTier, account: string): TopupResult {
  if (record.kind !== 'topup' || record.topup === undefined || record.topup.credits !== tier || record.from !== account) {
    const first = record.kind === 'topup' && record.topup !== undefined ? `a top-up of ${record.topup.credits} credits from ${record.from}` : `a ${record.kind ?? 'payment'} of ${rawToXno(BigInt(record.amountRaw))} XNO to ${record.to}`;
    throw new NanoPayError('IDEMPOTENCY_MISMATCH', `The key "${id}" was first used for ${first} (block ${record.hash}); it cannot be the key of a top-up of ${tier} credits from ${account} too. Nothing was paid`, {
      hint: 'Use a new id for a new top-up; repeat the same one to get its result.',
    });
  }
  return {
    topped_up_credits: record.topup.credits,
    new_credits_balance: record.topup.balance,
    hash: record.hash,
    amount: rawToXno(BigInt(record.amountRaw)),
    payment_address: record.to,
    resumed: false,
    repeated: true,
  };
}

/** An earlier top-up of the same tier that was paid but not finished (or not reported): completed now, without paying again. */
async function resume(ctx: OpsContext, signer: Signer, tier: CreditTier): Promise<TopupResult | undefined> {
  const pending = await ctx.journal.read(signer.address);
  if (pending?.topupTransactionId === undefined) return undefined;
  const settled = await ctx.lock(signer.address, () => settleJournal(ctx, signer.address, signer));
  if (settled.refused !== undefined) throw settled.refused;
  if (settled.topup === undefined || settled.entry === undefined || settled.topup.toppedUp !== tier) return undefined;
  const entry = settled.entry;
  await keepAnswer(ctx, entry.sendId, settled.topup);
  return resultOf(settled.topup, entry.hash, BigInt(entry.amountRaw ?? '0'), linkAsAccount(entry.block.link), true);
}

/** Keeps a top-up's answer with its idempotency key's result: what a retry under the key answers. */
async function keepAnswer(ctx: OpsContext, id: string | undefined, answer: TopupAnswer): Promise<void> {
  const kept = id === undefined ? undefined : await ctx.sendLog.result(ctx.profile, id);
  if (kept !== undefined) await ctx.sendLog.saveResult(ctx.profile, id as string, { ...kept, topup: { credits: answer.toppedUp, balance: answer.newBalance } });
}

/**
 * The paying account's head: its verified head from the backend, or, when the
 * service wants credits to read it (the key ran out of what the top-up buys),
 * its head as this profile made it (recordedHead). The top-up's other calls
 * (credits, offer, submit) cost none, so a key at 0 credits can top up.
 */
async function payerHead(ctx: OpsContext, address: string, recorded: { used: boolean }): Promise<AccountHead> {
  recorded.used = false;
  try {
    return await readAccountHead(ctx, address);
  } catch (error) {
    if (!(error instanceof NanoPayError) || error.code !== 'INSUFFICIENT_CREDITS') throw error;
    const head = await recordedHead(ctx, address);
    if (head === undefined) {
      throw new NanoPayError('INSUFFICIENT_CREDITS', `${error.message.replace(/\.$/, '')}; and this profile has no block of ${address} recorded to make the top-up on without reading the account. Nothing was signed`, {
        hint: 'Pay the top-up from an account this profile has made a block with: nanopay credits topup 1000 --wallet NAME --account N.',
        cause: error,
      });
    }
    recorded.used = true;
    return head;
  }
}

/** A block made on the recorded head that the ledger refuses as a fork or gap: the account moved without this profile. */
function movedElsewhere(error: unknown, address: string): unknown {
  if (!(error instanceof NanoPayError) || !['BLOCK_FORK', 'BLOCK_GAP_PREVIOUS'].includes(error.code)) return error;
  return new NanoPayError(error.code, `${error.message.replace(/\.$/, '')}. The top-up was made on the last block of ${address} this profile recorded (the service wants credits to read the account), and the account has moved since (on another machine or profile). Nothing was paid`, {
    hint: 'Pay the top-up from another account this profile made the last block of (--wallet NAME --account N), or top up where that account was last used.',
    cause: error,
  });
}

/**
 * Buys credits: the service names an address, an amount and a transaction id;
 * the amount is checked against the tier's listed price before anything is
 * signed; the payment goes through the one guarded money path and is
 * submitted with the transaction id. A final refusal settles the entry; an
 * interrupted top-up is completed by the next run without paying twice.
 */
export async function topup(session: Session, input: TopupInput): Promise<TopupResult> {
  const tier = parseTier(input.tier);
  const ctx = await session.context(input.signal);
  const signer = await session.account(input.wallet, input.index);
  const resumed = await resume(ctx, signer, tier);
  if (resumed !== undefined) {
    await input.report?.(resumed);
    return resumed;
  }
  const earlier = input.id === undefined ? undefined : await ctx.sendLog.result(ctx.profile, input.id);
  if (earlier !== undefined) {
    const repeated = repeatedTopup(earlier, input.id as string, tier, signer.address);
    await input.report?.(repeated);
    return repeated;
  }

  // The credits call is free: the balance before the top-up, to say what its own calls cost.
  const before = await ctx.api.credits();
  const listed = xnoToRaw(before.prices[tier]);
  const offer = await ctx.api.topupOffer(tier);
  const amountRaw = xnoToRaw(offer.amountXno);
  if (amountRaw !== listed) {
    throw inconsistent(`it lists ${tier} credits at ${xnoAndRaw(listed)} but asks ${xnoAndRaw(amountRaw)} for them`);
  }
  let result: TopupResult | undefined;
  const recorded = { used: false };
  await move<TopupAnswer>(ctx, {
    signer,
    readHead: () => payerHead(ctx, signer.address, recorded),
    to: offer.paymentAddress,
    amountRaw,
    note: { topupTransactionId: offer.transactionId },
    ...(input.id === undefined ? {} : { id: input.id, kind: 'topup' as const }),
    spend: { kind: 'topup', ...(input.approval === undefined ? {} : { approvalId: input.approval }) },
    ...(input.confirm === undefined ? {} : { confirm: input.confirm }),
    submit: (block) => ctx.api.topupSubmit(block, offer.transactionId).catch((error: unknown) => Promise.reject(recorded.used ? movedElsewhere(error, signer.address) : error)),
    landed: async (answer, entry, plan) => {
      if (answer === undefined) throw new NanoPayError('INVALID_DATA', 'The service did not confirm the top-up; run the same command again to complete it');
      await ctx.journal.record(signer.address, { ...entry, topupResult: answer });
      await keepAnswer(ctx, input.id, answer);
      const made = resultOf(answer, entry.hash, amountRaw, plan.to, false);
      result = { ...made, credits_before: before.credits, calls_cost: before.credits + made.topped_up_credits - made.new_credits_balance };
      await input.report?.(result);
    },
  });
  return result as TopupResult;
}
