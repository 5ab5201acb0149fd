import { NanoPayError } from '../errors.js';
import { ZERO_HASH, linkAsAccount } from '../nano/index.js';
import type { JournalEntry } from '../wallet/journal.js';
import { isDefinitiveRejection } from './chain.js';
import type { OpsContext } from './context.js';
import type { Session } from './session.js';

export type Outcome = 'none' | 'confirmed' | 'republished' | 'dropped';

export interface Settlement {
  outcome: Outcome;
  /** The entry that was settled, if any. */
  entry?: JournalEntry;
  /** For a top-up: what the service answered when it was (re)submitted. */
  topup?: { toppedUp: number; newBalance: number };
}

function isNotFound(error: unknown): boolean {
  return error instanceof NanoPayError && error.status === 404;
}


/** Records what a landed block was for: its spend, and its result under `send --id`. */
export async function recordLanded(session: Session, entry: JournalEntry): Promise<void> {
  if (entry.subtype !== 'send' || entry.amountRaw === undefined) return;
  await session.sendLog.recordSpend(entry.block.account, entry.hash, BigInt(entry.amountRaw));
  if (entry.sendId !== undefined) {
    await session.sendLog.saveResult(session.profileName, entry.sendId, {
      id: entry.sendId,
      hash: entry.hash,
      from: entry.block.account,
      to: linkAsAccount(entry.block.link),
      amountRaw: entry.amountRaw,
      balanceRaw: entry.block.balance,
      at: entry.createdAt,
    });
  }
}

/**
 * Settles the block a previous run signed but may not have published. If the
 * account's frontier is still the block's previous, the very same block is
 * published again (never a new one on that previous); if the block is in the
 * ledger it is done; if the account moved on without it, it can never land.
 */
export async function settleJournal(session: Session, ctx: OpsContext, address: string): Promise<Settlement> {
  const entry = await session.journal.read(address);
  if (entry === undefined) return { outcome: 'none' };
  const info = await ctx.api.accountInfo(address);
  const frontier = info?.frontier.toUpperCase() ?? null;
  const previous = entry.block.previous.toUpperCase() === ZERO_HASH ? null : entry.block.previous.toUpperCase();
  let outcome: Outcome;
  let topup: Settlement['topup'];
  if (entry.topupTransactionId !== undefined && (frontier === previous || frontier === entry.hash)) {
    // A top-up is completed by submitting its block with the transaction id, whether or not the block
    // already landed: the service credits it once and answers a repeat with the same result.
    topup = await ctx.api.topupSubmit(entry.block, entry.topupTransactionId);
    outcome = frontier === entry.hash ? 'confirmed' : 'republished';
  } else if (frontier === entry.hash) {
    outcome = 'confirmed';
  } else if (frontier === previous) {
    try {
      await ctx.api.publish(entry.block, entry.subtype, entry.hash);
      outcome = 'republished';
    } catch (error) {
      if (error instanceof NanoPayError && error.code === 'BLOCK_EXISTS') outcome = 'confirmed';
      else if (isDefinitiveRejection(error)) outcome = 'dropped';
      else throw error;
    }
  } else {
    outcome = await ctx.api.blockInfo(entry.hash).then(
      () => 'confirmed' as const,
      (error: unknown) => {
        if (isNotFound(error)) return 'dropped' as const;
        throw error;
      },
    );
  }
  if (outcome !== 'dropped') await recordLanded(session, entry);
  await session.journal.clear(address);
  return { outcome, entry, ...(topup === undefined ? {} : { topup }) };
}
