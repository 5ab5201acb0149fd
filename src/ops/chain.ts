import { NanoPayError } from '../errors.js';
import {
  DEFAULT_REPRESENTATIVE,
  buildReceiveBlock,
  buildSendBlock,
  hashBlock,
  normalizeAddress,
  signBlock,
  workRoot,
  type AccountState,
  type StateBlock,
  type Subtype,
} from '../nano/index.js';
import { LIVE_THRESHOLDS, type Thresholds } from '../work/index.js';
import type { JournalEntry } from '../wallet/journal.js';
import type { BlockNote, OpsContext, Signer } from './context.js';

export interface AccountHead {
  state: AccountState;
  thresholds: Thresholds;
}

/**
 * The account's ledger head and the thresholds the service asks for: those in
 * account info, else the active difficulty, else the live base values.
 */
export async function readAccountHead(ctx: OpsContext, address: string): Promise<AccountHead> {
  const info = await ctx.api.accountInfo(address);
  let thresholds: Thresholds | undefined;
  if (info?.difficultySend !== undefined && info.difficultyReceive !== undefined) {
    thresholds = { send: info.difficultySend, receive: info.difficultyReceive };
  } else {
    thresholds = (await ctx.api.activeDifficulty().catch(() => null)) ?? LIVE_THRESHOLDS;
  }
  const state: AccountState =
    info === null
      ? { address, frontier: null, balance: 0n, representative: DEFAULT_REPRESENTATIVE }
      : { address, frontier: info.frontier, balance: info.balanceRaw, representative: info.representative };
  return { state, thresholds };
}

export type PublishedBlock = JournalEntry;

/** The ledger refused the block for good: it can never land as it is. */
export function isDefinitiveRejection(error: unknown): boolean {
  return error instanceof NanoPayError && (error.code === 'INVALID_BLOCK' || (error.code.startsWith('BLOCK_') && error.code !== 'BLOCK_EXISTS'));
}

/**
 * Works, signs, journals and publishes one block. The journal entry is on disk
 * before the block leaves the process; it is cleared only when the outcome is
 * known, so a crash or a lost answer is settled by the next command.
 */
export async function completeAndPublish(
  ctx: OpsContext,
  signer: Signer,
  block: StateBlock,
  subtype: Subtype,
  thresholds: Thresholds,
  note: BlockNote = {},
): Promise<PublishedBlock> {
  const threshold = subtype === 'send' || subtype === 'change' ? thresholds.send : thresholds.receive;
  const work = await ctx.work(workRoot(block), threshold, ctx.signal);
  const signed: StateBlock = { ...block, signature: signBlock(block, signer.privateKey), work };
  const entry: JournalEntry = { hash: hashBlock(signed), subtype, block: signed, createdAt: new Date().toISOString(), ...note };
  await ctx.journal?.record(signer.address, entry);
  try {
    await (ctx.publish ?? ((b, s, h) => ctx.api.publish(b, s, h)))(signed, subtype, entry.hash);
  } catch (error) {
    // Already in the ledger means it landed: a retry of our own publish.
    if (!(error instanceof NanoPayError && error.code === 'BLOCK_EXISTS')) {
      if (isDefinitiveRejection(error)) await ctx.journal?.clear(signer.address);
      throw error;
    }
  }
  await ctx.journal?.clear(signer.address);
  return entry;
}

export interface ReceivedBlock {
  hash: string;
  sourceHash: string;
  amountRaw: bigint;
  subtype: 'open' | 'receive';
}

/** Receives every pending block of at least `minimumRaw`, oldest first; the first opens the account. */
export async function receiveAllPending(ctx: OpsContext, signer: Signer, minimumRaw = 1n): Promise<ReceivedBlock[]> {
  const hashes = await ctx.api.pending(signer.address);
  const received: ReceivedBlock[] = [];
  if (hashes.length === 0) return received;
  let { state, thresholds } = await readAccountHead(ctx, signer.address);
  for (const sourceHash of hashes) {
    const source = await ctx.api.blockInfo(sourceHash);
    if (source.amountRaw < minimumRaw) continue;
    const subtype = state.frontier === null ? 'open' : 'receive';
    const block = buildReceiveBlock(state, { sourceHash, amount: source.amountRaw });
    const published = await completeAndPublish(ctx, signer, block, subtype, thresholds);
    received.push({ hash: published.hash, sourceHash, amountRaw: source.amountRaw, subtype });
    state = { ...state, frontier: published.hash, balance: BigInt(block.balance) };
  }
  return received;
}

export interface SendPlan {
  head: AccountHead;
  to: string;
  amountRaw: bigint;
  balanceAfterRaw: bigint;
}

/** Checks a send against the ledger head; INSUFFICIENT_FUNDS before any work is made. */
export async function planSend(ctx: OpsContext, address: string, to: string, amountRaw: bigint): Promise<SendPlan> {
  const recipient = normalizeAddress(to);
  if (amountRaw <= 0n) throw new NanoPayError('INVALID_NUMBER_FORMAT', 'The amount must be greater than zero');
  const head = await readAccountHead(ctx, address);
  if (amountRaw > head.state.balance) {
    throw new NanoPayError('INSUFFICIENT_FUNDS', `Insufficient funds: the balance is ${head.state.balance} raw and the send needs ${amountRaw} raw`, {
      hint: 'Receive pending funds first (nanopay receive) or send less.',
    });
  }
  return { head, to: recipient, amountRaw, balanceAfterRaw: head.state.balance - amountRaw };
}

export interface SentBlock {
  hash: string;
  to: string;
  amountRaw: bigint;
  balanceRaw: bigint;
  entry: JournalEntry;
}

export async function executeSend(ctx: OpsContext, signer: Signer, plan: SendPlan, note: BlockNote = {}): Promise<SentBlock> {
  const block = buildSendBlock(plan.head.state, { to: plan.to, amount: plan.amountRaw });
  const entry = await completeAndPublish(ctx, signer, block, 'send', plan.head.thresholds, { amountRaw: plan.amountRaw.toString(), ...note });
  return { hash: entry.hash, to: plan.to, amountRaw: plan.amountRaw, balanceRaw: plan.balanceAfterRaw, entry };
}
