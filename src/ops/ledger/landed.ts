import { linkAsAccount } from '../../nano/index.js';
import type { HistoryRecord } from '../../wallet/history-log.js';
import type { JournalEntry } from '../../wallet/journal.js';
import type { OpsContext } from '../context.js';
import { markSpend } from '../spending/spend-log.js';

/** What the history keeps of a landed block of ours. */
function historyRecord(entry: JournalEntry): HistoryRecord {
  const counterparty = entry.subtype === 'send' ? linkAsAccount(entry.block.link) : entry.counterparty;
  const { signature, work } = entry.block;
  return {
    hash: entry.hash,
    account: entry.block.account,
    subtype: entry.subtype,
    ...(counterparty === undefined ? {} : { counterparty }),
    amountRaw: entry.amountRaw ?? '0',
    balanceRaw: entry.block.balance,
    representative: entry.block.representative,
    at: entry.createdAt,
    ...(entry.sendId === undefined ? {} : { id: entry.sendId }),
    ...(entry.topupTransactionId === undefined ? {} : { topup: entry.topupTransactionId }),
    ...(signature === undefined || work === undefined ? {} : { signed: { previous: entry.block.previous, link: entry.block.link, signature, work } }),
    ...(entry.thresholds === undefined ? {} : { thresholds: entry.thresholds }),
  };
}

/**
 * Records what a landed block was for: its line in the history, its spend
 * (paid, for the budgets) and its result under `send --id`. All are keyed by
 * the block hash, so recording twice counts once. Called before the journal
 * entry goes, so a crash at any moment keeps them.
 */
export async function recordLanded(ctx: OpsContext, entry: JournalEntry): Promise<void> {
  await ctx.history.append(entry.profile ?? ctx.profile, historyRecord(entry));
  if (entry.subtype !== 'send' || entry.amountRaw === undefined) return;
  await markSpend(ctx, entry, 'paid');
  if (entry.sendId !== undefined) {
    await ctx.sendLog.saveResult(ctx.profile, entry.sendId, {
      id: entry.sendId,
      ...(entry.sendKind === undefined ? {} : { kind: entry.sendKind }),
      hash: entry.hash,
      from: entry.block.account,
      to: linkAsAccount(entry.block.link),
      amountRaw: entry.amountRaw,
      balanceRaw: entry.block.balance,
      at: entry.createdAt,
    });
  }
}
