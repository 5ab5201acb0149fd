import { NanoPayError } from '../errors.js';
import { ZERO_HASH, linkAsAccount } from '../nano/index.js';
import type { JournalEntry } from '../wallet/journal.js';
import { isDefinitiveRejection } from './chain.js';
import type { OpsContext } from './context.js';
import type { Session } from './session.js';

export type Settlement = 'none' | 'confirmed' | 'republished' | 'dropped';

function isNotFound(error: unknown): boolean {
  return error instanceof NanoPayError && error.status === 404;
}

/** A journaled block goes out the way it was meant to: a top-up is submitted with its transaction id. */
async function resubmit(ctx: OpsContext, entry: JournalEntry): Promise<void> {
  if (entry.topupTransactionId !== undefined) await ctx.api.topupSubmit(entry.block, entry.topupTransactionId);
  else await ctx.api.publish(entry.block, entry.subtype, entry.hash);
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
  if (entry === undefined) return 'none';
  const info = await ctx.api.accountInfo(address);
  const frontier = info?.frontier.toUpperCase() ?? null;
  const previous = entry.block.previous.toUpperCase() === ZERO_HASH ? null : entry.block.previous.toUpperCase();
  let outcome: Settlement;
  if (frontier === entry.hash) {
    outcome = 'confirmed';
  } else if (frontier === previous) {
    try {
      await resubmit(ctx, entry);
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
  return outcome;
}
