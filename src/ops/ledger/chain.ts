import type { LedgerBackend } from '../../api/backend.js';
import type { RemoteAccountInfo, RemoteBlockInfo } from '../../api/client.js';
import { NanoPayError } from '../../errors.js';
import {
  DEFAULT_REPRESENTATIVE,
  ZERO_HASH,
  addressToPublicKey,
  buildReceiveBlock,
  buildSendBlock,
  hashBlock,
  isStateBlock,
  normalizeAddress,
  signedByAccount,
  workRoot,
  type AccountState,
  type LedgerBlock,
  type StateBlock,
  type Subtype,
} from '../../nano/index.js';
import { LIVE_THRESHOLDS, harderThreshold, thresholdsAtEpoch, type Thresholds } from '../../work/index.js';
import type { JournalEntry } from '../../wallet/journal.js';
import type { BlockNote, OpsContext, SignContext, Signer } from '../context.js';
import { xnoAndRaw } from '../money.js';
import { confirmedBlock, rememberConfirmed } from './confirmed-blocks.js';
import { provedBalanceAfter, provedReceivable, representativeAfter, type RefusedBlock } from './proofs.js';
import { recordLanded } from './landed.js';
import { inconsistent } from './inconsistent.js';
import { markSpend } from '../spending/spend-log.js';

export interface AccountHead {
  state: AccountState;
  /** The frontier block itself, checked (undefined for an account with no block): what the next block follows. */
  block?: StateBlock;
  thresholds: Thresholds;
  /** Whether the backend says the frontier block is confirmed (true for an account with no block). */
  confirmed: boolean;
}

/**
 * The thresholds the service reports as the active difficulty, else the live
 * base values (`reported` says which). Building a block tolerates a failing
 * read (`orLive`); a user asking for the figures sees the failure.
 */
export async function serviceThresholds(api: LedgerBackend, orLive = true): Promise<{ thresholds: Thresholds; reported: boolean }> {
  const reported = await (orLive ? api.activeDifficulty().catch(() => null) : api.activeDifficulty());
  return { thresholds: reported ?? LIVE_THRESHOLDS, reported: reported !== null };
}

function sameAccount(a: string, b: string): boolean {
  return addressToPublicKey(a) === addressToPublicKey(b);
}

/** The links of epoch blocks ("epoch v1 block", "epoch v2 block"): upgrades signed by the network's epoch signer, not the owner. */
const EPOCH_LINKS = new Set(['65706F636820763120626C6F636B000000000000000000000000000000000000', '65706F636820763220626C6F636B000000000000000000000000000000000000']);

/**
 * Signatures already verified, by block hash and signature: the hash covers
 * the account (whose key verifies) and every field signed, so the same pair
 * verifies the same way again. A payment reads its account's head a few times.
 */
const verifiedSignatures = new Set<string>();
const VERIFIED_KEPT = 10_000;

function rememberVerified(hash: string, signature: string): void {
  if (verifiedSignatures.size >= VERIFIED_KEPT) verifiedSignatures.delete(verifiedSignatures.values().next().value as string);
  verifiedSignatures.add(`${hash}${signature}`);
}

function signedByOwner(block: LedgerBlock, hash: string, address: string): boolean {
  if (verifiedSignatures.has(`${hash}${block.signature ?? ''}`)) return true;
  if (!signedByAccount(block, address)) return false;
  rememberVerified(hash, block.signature as string);
  return true;
}

/** What an account holds after a checked block of its own: a state block says; a legacy one is proved from its chain. */
async function holdingsAfter(ctx: Pick<OpsContext, 'api'>, hash: string, block: LedgerBlock): Promise<{ balance: bigint; representative: string }> {
  if (isStateBlock(block)) return { balance: BigInt(block.balance), representative: block.representative };
  const [balance, representative] = await Promise.all([provedBalanceAfter(ctx.api, hash), representativeAfter(ctx.api, hash)]);
  return { balance, representative };
}

/**
 * A block of `address` whose contents are checked: fetched by hash, the hash
 * recomputed, the account ours (a legacy block but an open names none: its
 * signature says whose it is), and signed by the account's key. An epoch block
 * is signed by the network instead; it is accepted only when it changes neither
 * the balance nor the representative of the checked block before it (or opens
 * the account with nothing), so everything built on it rests on our own blocks.
 */
async function ownBlock(ctx: Pick<OpsContext, 'api'>, address: string, hash: string, epochsAbove = 0, fetched?: RemoteBlockInfo): Promise<RemoteBlockInfo> {
  const party = { party: ctx.api.kind };
  const found =
    fetched ??
    (await ctx.api.blockInfo(hash).catch((error: unknown) => {
      if (error instanceof NanoPayError && error.status === 404) throw inconsistent(`block ${hash} of ${address} is not a known block`, party);
      throw error;
    }));
  const block = found.contents;
  if (hashBlock(block) !== hash) throw inconsistent(`the contents given for block ${hash} hash to ${hashBlock(block)}`, party);
  if ((isStateBlock(block) || block.type === 'open') && !sameAccount(block.account, address)) throw inconsistent(`block ${hash} of ${address} belongs to ${block.account}`, party);
  if (signedByOwner(block, hash, address)) return found;
  if (!isStateBlock(block) || !EPOCH_LINKS.has(block.link.toUpperCase()) || epochsAbove >= EPOCH_LINKS.size) throw inconsistent(`block ${hash} is not signed by the key of ${address}`, party);
  const previous = block.previous.toUpperCase();
  const before = previous === ZERO_HASH ? { balance: 0n, representative: block.representative } : await holdingsAfter(ctx, previous, (await ownBlock(ctx, address, previous, epochsAbove + 1)).contents);
  if (BigInt(block.balance) !== before.balance || !sameAccount(block.representative, before.representative)) {
    throw inconsistent(`the epoch block ${hash} of ${address} changes its balance or representative`, party);
  }
  return found;
}

/** Account info whose balance is not the one its frontier block holds. */
function balanceMismatch(ctx: Pick<OpsContext, 'api'>, address: string, info: RemoteAccountInfo, held: bigint): NanoPayError {
  return inconsistent(`it reports a balance of ${xnoAndRaw(info.balanceRaw)} for ${address}, but its frontier block holds ${xnoAndRaw(held)}`, { party: ctx.api.kind });
}

/**
 * The frontier the service reports, checked before anything is built on it
 * (see ownBlock); the balance and representative come from the block itself,
 * never from the service's summary. Also says whether the block has a successor.
 */
async function verifiedFrontier(
  ctx: Pick<OpsContext, 'api'>,
  address: string,
  info: RemoteAccountInfo,
  fetched?: RemoteBlockInfo,
): Promise<{ block: LedgerBlock; balance: bigint; representative: string; successor: boolean; confirmed: boolean }> {
  const frontier = info.frontier.toUpperCase();
  const { contents: block, successor, confirmed } = await ownBlock(ctx, address, frontier, 0, fetched);
  const { balance, representative } = await holdingsAfter(ctx, frontier, block);
  if (balance !== info.balanceRaw) throw balanceMismatch(ctx, address, info, balance);
  return { block, balance, representative, successor: successor !== undefined && successor !== ZERO_HASH, confirmed };
}

/** How often the head is read again when a block lands between reading account info and its frontier block. */
const HEAD_READS = 3;

/**
 * The account's ledger head, verified (see verifiedFrontier), and the
 * thresholds the service asks for: those in account info, else the active
 * difficulty, else the live base values. A frontier with a successor is not
 * the head: when account info then names a newer frontier, a block landed
 * between the two reads (another process of this wallet) and the head is read
 * again; when it still names the same one, the service contradicts itself.
 * `likely`: the frontier the caller expects (a payment's previous): that block
 * is read at the same time as account info, and used, checked as any, only
 * when account info names it. A frontier checked and seen confirmed before
 * (confirmed-blocks.ts) is not read again: account info alone names it.
 */
export async function readAccountHead(ctx: Pick<OpsContext, 'api'>, address: string, likely?: string): Promise<AccountHead> {
  let superseded: string | undefined;
  // A failure here is no answer: the frontier is then read as usual. A block remembered confirmed is not fetched.
  const guessed = likely === undefined || confirmedBlock(ctx.api, likely) !== undefined ? undefined : ctx.api.blockInfo(likely).catch(() => undefined);
  // A node's account info names no thresholds: its network's (asked once per process) are read beside it, not after.
  const networkThresholds = ctx.api.kind === 'node' ? serviceThresholds(ctx.api) : undefined;
  for (let read = 1; ; read++) {
    const info = await ctx.api.accountInfo(address);
    const reported =
      info?.difficultySend !== undefined && info.difficultyReceive !== undefined
        ? { send: info.difficultySend, receive: info.difficultyReceive }
        : (await (networkThresholds ?? serviceThresholds(ctx.api))).thresholds;
    const thresholds = thresholdsAtEpoch(reported, info?.epoch);
    if (info === null) return { state: { address, frontier: null, balance: 0n, representative: DEFAULT_REPRESENTATIVE }, thresholds, confirmed: true };
    const frontier = info.frontier.toUpperCase();
    // A frontier this process checked and saw confirmed before (see confirmed-blocks.ts): its contents are known.
    const known = confirmedBlock(ctx.api, frontier);
    if (known !== undefined && sameAccount(known.account, address)) {
      if (BigInt(known.balance) !== info.balanceRaw) throw balanceMismatch(ctx, address, info, BigInt(known.balance));
      return { state: { address, frontier, balance: info.balanceRaw, representative: known.representative }, block: known, thresholds, confirmed: true };
    }
    const fetched = read === 1 && frontier === likely?.toUpperCase() ? await guessed : undefined;
    const { block, balance, representative, successor, confirmed } = await verifiedFrontier(ctx, address, info, fetched);
    // A legacy head (an old chain's) is no block a state block's signer is shown: it reads it itself.
    const stateHead = isStateBlock(block) ? block : undefined;
    if (!successor && confirmed && stateHead !== undefined) rememberConfirmed(ctx.api, frontier, stateHead);
    if (!successor) return { state: { address, frontier, balance, representative }, ...(stateHead === undefined ? {} : { block: stateHead }), thresholds, confirmed };
    if (frontier === superseded || read === HEAD_READS) {
      throw inconsistent(`the frontier ${frontier} of ${address} already has a successor, so it is not the head of the account`, { party: ctx.api.kind });
    }
    superseded = frontier;
  }
}

/**
 * The sends an account received, newest first: the links of its blocks that
 * raised its balance, walked from its verified head back to its open block,
 * each block checked as ownBlock does. What left the account since (a refund,
 * a sweep) does not hide what arrived.
 */
export async function receivedSources(ctx: Pick<OpsContext, 'api'>, address: string): Promise<string[]> {
  const head = await readAccountHead(ctx, address);
  if (head.state.frontier === null) return [];
  const sources: string[] = [];
  let current = (await ownBlock(ctx, address, head.state.frontier)).contents;
  for (;;) {
    // Legacy receive and open blocks name their source; a state block received when it raised the balance.
    if (current.type === 'receive' || current.type === 'open') sources.push(current.source.toUpperCase());
    const previous = current.type === 'open' ? ZERO_HASH : current.previous.toUpperCase();
    const before = previous === ZERO_HASH ? undefined : (await ownBlock(ctx, address, previous)).contents;
    if (isStateBlock(current)) {
      const balanceBefore = before === undefined ? 0n : (await holdingsAfter(ctx, previous, before)).balance;
      if (BigInt(current.balance) > balanceBefore) sources.push(current.link.toUpperCase());
    }
    if (before === undefined) return sources;
    current = before;
  }
}

/** The ledger refused the block for good: it can never land as it is. */
export function isDefinitiveRejection(error: unknown): boolean {
  if (!(error instanceof NanoPayError)) return false;
  return error.code === 'INVALID_BLOCK' || error.code === 'PAYMENT_MISMATCH' || (error.code.startsWith('BLOCK_') && error.code !== 'BLOCK_EXISTS');
}

/**
 * Makes the work, signs, and writes the journal entry (`journal`, the account's
 * entry by default): it is on disk before the block can leave the process.
 */
export async function signAndJournal(
  ctx: OpsContext,
  signer: Signer,
  block: StateBlock,
  subtype: Subtype,
  thresholds: Thresholds,
  note: BlockNote = {},
  journal: (entry: JournalEntry) => Promise<void> = (entry) => ctx.journal.record(signer.address, entry),
  context: SignContext = {},
): Promise<JournalEntry> {
  const threshold = subtype === 'send' || subtype === 'change' ? thresholds.send : thresholds.receive;
  const work = await ctx.work(workRoot(block), threshold, ctx.signal);
  const signed: StateBlock = { ...block, signature: await signer.sign(block, context), work };
  // The note's thresholds are the backend's when the work was made harder than it asks (a payee's).
  const entry: JournalEntry = { hash: hashBlock(signed), subtype, block: signed, createdAt: new Date(ctx.now()).toISOString(), thresholds, ...note };
  // Signed here by the account's own key (an unlocked session's signature is verified as it comes): once the block
  // is the account's head, reading it back need not verify it again.
  if (sameAccount(block.account, signer.address)) rememberVerified(entry.hash, signed.signature as string);
  await journal(entry);
  return entry;
}

/**
 * Hands a journaled block to the ledger (`submit`, the API's publish by
 * default). Already in the ledger counts as landed (a retry of our own
 * publish). A definitive refusal settles the entry: it can never land, so the
 * account is free again. Any other failure leaves the entry for the next
 * command to settle.
 */
export async function submitEntry<T>(ctx: OpsContext, entry: JournalEntry, submit: (block: StateBlock) => Promise<T>): Promise<T | undefined> {
  try {
    return await submit(entry.block);
  } catch (error) {
    if (error instanceof NanoPayError && error.code === 'BLOCK_EXISTS') return undefined;
    if (isDefinitiveRejection(error)) {
      await markSpend(ctx, entry, 'dropped');
      await ctx.journal.clear(entry.block.account);
    }
    throw error;
  }
}

/** The epoch-1 threshold when it is harder than the one the entry's work was made for: what a refusal for too little work asks. */
function epochOneWork(entry: JournalEntry): string | undefined {
  const epoch1 = entry.thresholds?.epoch1;
  if (entry.thresholds === undefined || epoch1 === undefined) return undefined;
  const used = entry.subtype === 'send' || entry.subtype === 'change' ? entry.thresholds.send : entry.thresholds.receive;
  return harderThreshold(used, epoch1) === used ? undefined : epoch1;
}

/**
 * Our own publish of a journaled block. A node that finds its work too little was judging it at epoch 1:
 * an account not yet upgraded, or (an open block's case, which no read can tell beforehand) a send made
 * before its sender's upgrade, as on every fresh dev or beta ledger. The same block (same hash and
 * signature: work is not signed) then gets epoch 1's work, journaled before it leaves again.
 */
export const publishTo = (ctx: OpsContext, entry: JournalEntry) => async (block: StateBlock) => {
  try {
    await ctx.api.publish(block, entry.subtype, entry.hash);
  } catch (error) {
    const harder = epochOneWork(entry);
    if (!(error instanceof NanoPayError && error.code === 'BLOCK_INSUFFICIENT_WORK') || harder === undefined) throw error;
    const reworked: StateBlock = { ...block, work: await ctx.work(workRoot(block), harder, ctx.signal) };
    const kept = await ctx.journal.read(block.account);
    if (kept?.hash === entry.hash) await ctx.journal.record(block.account, { ...kept, block: reworked, thresholds: thresholdsAtEpoch(entry.thresholds ?? LIVE_THRESHOLDS, 1) });
    await ctx.api.publish(reworked, entry.subtype, entry.hash);
  }
};

/**
 * submitEntry through our own publish. A service that refuses the call for
 * want of credits has not taken the block: it is dropped as a final refusal
 * is, so the account is free for its next block (the top-up that buys them).
 */
export async function publishEntry(ctx: OpsContext, entry: JournalEntry): Promise<void> {
  try {
    await submitEntry(ctx, entry, publishTo(ctx, entry));
  } catch (error) {
    if (!(error instanceof NanoPayError) || error.code !== 'INSUFFICIENT_CREDITS') throw error;
    await markSpend(ctx, entry, 'dropped');
    await ctx.journal.clear(entry.block.account);
    throw new NanoPayError(error.code, `${error.message.replace(/\.$/, '')}; block ${entry.hash} was not published, nothing moved`, { cause: error });
  }
}

export interface ReceivedBlock {
  hash: string;
  sourceHash: string;
  amountRaw: bigint;
  subtype: 'open' | 'receive';
  /** When the source block was first seen (its local_timestamp, ms), when the backend says. */
  sourceSeenAt?: number;
}

/**
 * Receives every confirmed pending block of at least `minimumRaw` (each proved, see proveSend), in the
 * backend's order (a node lists them by hash); the first opens the account. A block that cannot be proved
 * is refused (and returned, with why), and the others are received.
 */
export async function receiveAllPending(ctx: OpsContext, signer: Signer, minimumRaw = 1n): Promise<{ received: ReceivedBlock[]; refused: RefusedBlock[] }> {
  const waiting = await provedReceivable(ctx.api, signer.address, await ctx.api.pending(signer.address));
  const sends = waiting.sends.filter((p) => p.amountRaw >= minimumRaw);
  const received: ReceivedBlock[] = [];
  if (sends.length === 0) return { received, refused: waiting.refused };
  let { state, thresholds, block: previous } = await readAccountHead(ctx, signer.address);
  // A new account opens with the profile's representative; an open one keeps its own (a change block moves it).
  if (state.frontier === null && ctx.representative !== undefined) state = { ...state, representative: normalizeAddress(ctx.representative) };
  for (const { hash: sourceHash, amountRaw, from, seenAt } of sends) {
    const subtype = state.frontier === null ? 'open' : 'receive';
    const block = buildReceiveBlock(state, { sourceHash, amount: amountRaw });
    const entry = await signAndJournal(ctx, signer, block, subtype, thresholds, { amountRaw: amountRaw.toString(), counterparty: from }, undefined, previous === undefined ? {} : { previous });
    await publishEntry(ctx, entry);
    await recordLanded(ctx, entry);
    await ctx.journal.clear(signer.address);
    received.push({ hash: entry.hash, sourceHash, amountRaw, subtype, ...(seenAt === undefined ? {} : { sourceSeenAt: seenAt }) });
    state = { ...state, frontier: entry.hash, balance: BigInt(block.balance) };
    previous = entry.block;
  }
  return { received, refused: waiting.refused };
}

export interface SendPlan {
  head: AccountHead;
  to: string;
  amountRaw: bigint;
  balanceAfterRaw: bigint;
}

/** Checks a send against the verified ledger head; INSUFFICIENT_FUNDS before any work is made. */
export async function planSend(ctx: OpsContext, address: string, to: string, amountRaw: bigint): Promise<SendPlan> {
  if (amountRaw <= 0n) throw new NanoPayError('INVALID_NUMBER_FORMAT', 'The amount must be greater than zero');
  return planOn(await readAccountHead(ctx, address), to, amountRaw);
}

/** Checks a send against `head`, a verified head read by the caller (see planSend). */
export function planOn(head: AccountHead, to: string, amountRaw: bigint): SendPlan {
  const recipient = normalizeAddress(to);
  if (amountRaw <= 0n) throw new NanoPayError('INVALID_NUMBER_FORMAT', 'The amount must be greater than zero');
  if (amountRaw > head.state.balance) {
    throw new NanoPayError('INSUFFICIENT_FUNDS', `Insufficient funds: the balance is ${xnoAndRaw(head.state.balance)} and the send needs ${xnoAndRaw(amountRaw)}`, {
      hint: 'Receive pending funds first (nanopay receive) or send less.',
    });
  }
  return { head, to: recipient, amountRaw, balanceAfterRaw: head.state.balance - amountRaw };
}

/** The unsigned send block of a plan. */
export function sendBlockOf(plan: SendPlan): StateBlock {
  return buildSendBlock(plan.head.state, { to: plan.to, amount: plan.amountRaw });
}
