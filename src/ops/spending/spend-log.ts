import { randomBytes } from 'node:crypto';
import { NanoPayError } from '../../errors.js';
import { linkAsAccount } from '../../nano/index.js';
import type { SpendStatus } from '../../store/spending.js';
import type { JournalEntry } from '../../wallet/journal.js';
import { profileKey } from '../../wallet/send-log.js';
import type { OpsContext } from '../context.js';
import type { CountedSpend } from './policy.js';

/** An audit record's id: random, so records of several processes never collide. */
export const recordId = (): string => randomBytes(12).toString('hex');

/**
 * The spend a journal entry pays, if it is one: a send, or the cheque a
 * superseding change cancels (which counts until the cancellation is certain).
 */
function spendOf(entry: JournalEntry): JournalEntry | undefined {
  if (entry.ownTransfer === true) return undefined;
  if (entry.subtype === 'send' && entry.amountRaw !== undefined) return entry;
  return entry.supersedes === undefined ? undefined : spendOf(entry.supersedes);
}

/**
 * The spends that count toward the profile's budgets after `sinceMs`: the
 * decisions recorded as allowed whose block is in flight or paid, and (from
 * versions before the policy) blocks in the journal that have no record yet.
 * A cheque counts until it is seen confirmed (paid) or its cancellation
 * landed; then it is paid, or returns to the budget.
 */
export async function countedSpends(ctx: OpsContext, sinceMs: number): Promise<CountedSpend[]> {
  const rows = await (await ctx.store()).audit.counted(ctx.profile, sinceMs);
  const counted: CountedSpend[] = rows.map((r) => ({
    to: r.recipient,
    ...(r.host === undefined ? {} : { host: r.host }),
    frontEnd: r.front_end,
    kind: r.kind,
    amountRaw: BigInt(r.amount_raw),
    at: Date.parse(r.at),
    attended: r.decision === 'approved',
  }));
  const known = new Set(rows.map((r) => r.hash));
  for (const entry of await ctx.journal.all()) {
    const spend = spendOf(entry);
    if (spend === undefined || (spend.profile ?? ctx.profile) !== ctx.profile || known.has(spend.hash) || Date.parse(spend.createdAt) <= sinceMs) continue;
    counted.push({ to: linkAsAccount(spend.block.link), frontEnd: 'unknown', kind: 'send', amountRaw: BigInt(spend.amountRaw as string), at: Date.parse(spend.createdAt), attended: false });
  }
  return counted;
}

/**
 * Records where a spend's block stands (paid, dropped, cancelled). A paid
 * block with no decision on record (signed by a version before the policy)
 * gets one, so it counts.
 */
export async function markSpend(ctx: OpsContext, entry: JournalEntry, status: SpendStatus): Promise<void> {
  if (entry.subtype !== 'send' || entry.amountRaw === undefined || entry.ownTransfer === true) return;
  const profile = entry.profile ?? ctx.profile;
  const audit = (await ctx.store()).audit;
  const at = new Date(ctx.now()).toISOString();
  if ((await audit.setStatus(profile, entry.hash, status, at)) || status !== 'paid') return;
  await audit.add({
    id: recordId(),
    at: entry.createdAt,
    profile,
    front_end: 'unknown',
    kind: entry.chequeFor === undefined ? (entry.topupTransactionId === undefined ? 'send' : 'topup') : 'x402',
    account: entry.block.account,
    recipient: linkAsAccount(entry.block.link),
    amount_raw: entry.amountRaw,
    decision: 'allowed',
    rule: null,
    message: 'signed by a version before the spending policy; recorded when it landed',
    hash: entry.hash,
    status,
    settled_at: at,
  });
}

/**
 * Spends of `account` recorded in flight whose block is no longer in the
 * journal: the process died between recording the decision and journaling
 * the block (it never left), or a path that cleared the journal without
 * saying. The ledger tells which: in it, paid; else dropped. Called holding
 * the account's lock with its journal settled.
 */
export async function resolveOrphans(ctx: OpsContext, account: string): Promise<void> {
  const audit = (await ctx.store()).audit;
  const live = await ctx.journal.read(account);
  const journaled = new Set([live?.hash, live?.supersedes?.hash]);
  for (const row of await audit.inFlight(ctx.profile, account)) {
    if (row.hash === undefined || journaled.has(row.hash)) continue;
    const landed = await ctx.api.blockInfo(row.hash).then(
      () => true,
      (error: unknown) => {
        if (error instanceof NanoPayError && error.status === 404) return false;
        throw error;
      },
    );
    await audit.setStatus(ctx.profile, row.hash, landed ? 'paid' : 'dropped', new Date(ctx.now()).toISOString());
  }
}

/**
 * Runs `fn` holding the profile's spending lock (one lock for all its
 * accounts, across processes): the final decision and the journal entry are
 * one hold, so spends of several accounts and front ends at once cannot both
 * take the last of a budget.
 */
export function withSpendingLock<T>(ctx: Pick<OpsContext, 'lock' | 'profile'>, fn: () => Promise<T>): Promise<T> {
  return ctx.lock(`spending-${profileKey(ctx.profile)}`, fn);
}

/**
 * The spends of the last 24 hours a version before the policy kept in its
 * own file (for limit-per-day), moved into the store once, so they still count.
 */
export async function importLegacySpends(ctx: OpsContext): Promise<void> {
  if ((await ctx.sendLog.legacySpends(ctx.profile)) === undefined) return;
  await withSpendingLock(ctx, async () => {
    const legacy = await ctx.sendLog.legacySpends(ctx.profile);
    if (legacy === undefined) return;
    const audit = (await ctx.store()).audit;
    for (const spend of legacy) {
      if (await audit.setStatus(ctx.profile, spend.hash, 'paid', spend.at)) continue;
      await audit.add({
        id: recordId(),
        at: spend.at,
        profile: ctx.profile,
        front_end: 'unknown',
        kind: 'send',
        account: spend.account,
        recipient: 'unknown',
        amount_raw: spend.raw,
        decision: 'allowed',
        rule: null,
        message: 'recorded by a version before the spending policy',
        hash: spend.hash,
        status: 'paid',
        settled_at: spend.at,
      });
    }
    await ctx.sendLog.forgetLegacySpends(ctx.profile);
  });
}
