import { NanoPayError } from '../../errors.js';
import { ZERO_HASH, buildChangeBlock } from '../../nano/index.js';
import type { JournalEntry, TopupAnswer } from '../../wallet/journal.js';
import { isDefinitiveRejection, publishTo, readAccountHead, signAndJournal } from './chain.js';
import { recordLanded } from './landed.js';
import type { OpsContext, Signer } from '../context.js';
import { markSpend } from '../spending/spend-log.js';

/** `cancelled`: an x402 cheque the server never cashed, superseded by a block of ours on the same previous. */
export type Outcome = 'none' | 'confirmed' | 'republished' | 'dropped' | 'cancelled';

export interface Settlement {
  outcome: Outcome;
  /** The entry that was settled, if any. */
  entry?: JournalEntry;
  /** For a top-up: the service's answer (kept in the entry, or given when it was submitted again). */
  topup?: TopupAnswer;
  /** For a top-up: the service's final refusal to credit it. */
  refused?: NanoPayError;
}


type Fate = 'landed' | 'publishable' | 'gone';

/** Where the journaled block stands: in the ledger, still next in line, or overtaken by another block. */
async function fateOf(ctx: OpsContext, entry: JournalEntry): Promise<Fate> {
  const info = await ctx.api.accountInfo(entry.block.account);
  const frontier = info?.frontier.toUpperCase() ?? null;
  const previous = entry.block.previous.toUpperCase() === ZERO_HASH ? null : entry.block.previous.toUpperCase();
  if (frontier === entry.hash) return 'landed';
  if (frontier === previous) return 'publishable';
  return ctx.api.blockInfo(entry.hash).then(
    () => 'landed' as const,
    (error: unknown) => {
      if (error instanceof NanoPayError && error.status === 404) return 'gone' as const;
      throw error;
    },
  );
}

/**
 * Where a top-up's block stands. When the service wants credits to say (the
 * top-up was to buy them), submitting it again tells: the service publishes
 * a block still next in line, credits a transaction once, and refuses a block
 * the account moved past.
 */
async function topupFate(ctx: OpsContext, entry: JournalEntry): Promise<Fate> {
  return fateOf(ctx, entry).catch((error: unknown) => {
    if (error instanceof NanoPayError && error.code === 'INSUFFICIENT_CREDITS') return 'publishable' as const;
    throw error;
  });
}

async function settleTopup(ctx: OpsContext, entry: JournalEntry, transactionId: string, fate: Fate): Promise<Settlement> {
  if (fate === 'gone') return { outcome: 'dropped', entry };
  const outcome = fate === 'landed' ? 'confirmed' : 'republished';
  // Submitting again is how a top-up completes: the service credits a transaction once and answers a repeat alike.
  try {
    return { outcome, entry, topup: await ctx.api.topupSubmit(entry.block, transactionId) };
  } catch (error) {
    if (!isDefinitiveRejection(error)) throw error;
    return { outcome: fate === 'landed' ? 'confirmed' : 'dropped', entry, refused: error as NanoPayError };
  }
}

async function settlePublish(ctx: OpsContext, entry: JournalEntry, fate: Fate): Promise<Settlement> {
  if (fate === 'landed') return { outcome: 'confirmed', entry };
  if (fate === 'gone') return { outcome: 'dropped', entry };
  try {
    await publishTo(ctx, entry)(entry.block);
    return { outcome: 'republished', entry };
  } catch (error) {
    if (error instanceof NanoPayError && error.code === 'BLOCK_EXISTS') return { outcome: 'confirmed', entry };
    if (isDefinitiveRejection(error)) return { outcome: 'dropped', entry };
    throw error;
  }
}

/** An outstanding cheque cannot be cancelled without the account's key. */
function chequeOutstanding(entry: JournalEntry): NanoPayError {
  return new NanoPayError('CHEQUE_OUTSTANDING', `${entry.block.account} handed block ${entry.hash} to ${entry.chequeFor ?? 'an x402 server'}, which has not published it yet; nothing else can move the account until it is resolved`, {
    hint: 'Run nanopay fetch again with the same --id to present it again, or any send or receive of this account to cancel it.',
  });
}

/**
 * Cancels a cheque the server has not cashed: a change block of ours (same
 * representative, same balance) on the cheque's previous, so the cheque can
 * never land. The change is journaled with the cheque it supersedes; if the
 * server published the cheque first after all (the change is refused as a
 * fork), the cheque is what landed, and it is recorded as paid.
 */
async function supersede(ctx: OpsContext, signer: Signer, cheque: JournalEntry): Promise<Settlement> {
  const { state, thresholds, block } = await readAccountHead(ctx, signer.address);
  if (state.frontier !== cheque.block.previous.toUpperCase()) return chequeFate(ctx, cheque);
  const entry = await signAndJournal(
    ctx,
    signer,
    buildChangeBlock(state, { representative: state.representative }),
    'change',
    thresholds,
    {},
    (change) => ctx.journal.record(signer.address, { ...change, supersedes: cheque }),
    block === undefined ? {} : { previous: block },
  );
  try {
    await publishTo(ctx, entry)(entry.block);
  } catch (error) {
    if (!isDefinitiveRejection(error)) throw error;
    return chequeFate(ctx, cheque);
  }
  return { outcome: 'cancelled', entry: cheque };
}

/** Where a cheque stands once our own block on its previous could not land: cashed, or gone. */
async function chequeFate(ctx: OpsContext, cheque: JournalEntry): Promise<Settlement> {
  return (await fateOf(ctx, cheque)) === 'landed' ? { outcome: 'confirmed', entry: cheque } : { outcome: 'dropped', entry: cheque };
}

async function settleCheque(ctx: OpsContext, entry: JournalEntry, signer: Signer | undefined): Promise<Settlement> {
  const fate = await fateOf(ctx, entry);
  if (fate === 'landed') return { outcome: 'confirmed', entry };
  if (fate === 'gone') return { outcome: 'dropped', entry };
  if (signer === undefined) throw chequeOutstanding(entry);
  return supersede(ctx, signer, entry);
}

/**
 * Settles the block a previous run signed but may not have finished with. A
 * block still next in line is published again (the very same block, never a
 * new one on that previous); a block in the ledger is done; a block the
 * account moved past without can never land. A top-up is submitted again with
 * its transaction id unless its answer was already kept. An x402 cheque is
 * never published by us: cashed, it is recorded as paid; else it is
 * superseded (with `signer`). Whatever landed is recorded before the entry is cleared.
 */
export async function settleJournal(ctx: OpsContext, address: string, signer?: Signer): Promise<Settlement> {
  const entry = await ctx.journal.read(address);
  if (entry === undefined) return { outcome: 'none' };
  let settled: Settlement;
  if (entry.topupResult !== undefined) settled = { outcome: 'confirmed', entry, topup: entry.topupResult };
  else if (entry.topupTransactionId !== undefined) settled = await settleTopup(ctx, entry, entry.topupTransactionId, await topupFate(ctx, entry));
  else if (entry.chequeFor !== undefined) settled = await settleCheque(ctx, entry, signer);
  else settled = await settlePublish(ctx, entry, await fateOf(ctx, entry));
  // A superseding change that could not land: the cheque it cancels may have.
  if (settled.outcome === 'dropped' && entry.supersedes !== undefined) settled = await chequeFate(ctx, entry.supersedes);
  if (settled.outcome === 'confirmed' && settled.entry !== undefined) await recordLanded(ctx, settled.entry);
  else if (settled.outcome !== 'dropped' && settled.outcome !== 'cancelled') await recordLanded(ctx, entry);
  // A block that can never land, and a cheque cancelled for good, no longer count toward the budgets.
  else if (settled.entry !== undefined) await markSpend(ctx, settled.entry, settled.outcome);
  await ctx.journal.clear(address);
  return settled;
}
