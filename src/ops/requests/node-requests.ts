import { randomBytes, randomUUID } from 'node:crypto';
import type { NodeClient } from '../../api/node-client.js';
import { NanoPayError } from '../../errors.js';
import { MAX_RAW, normalizeAddress } from '../../nano/index.js';
import type { RequestRecord } from '../../wallet/requests.js';
import { readAccountHead } from '../ledger/chain.js';
import { provedReceivable } from '../ledger/proofs.js';
import { xnoAndRaw } from '../money.js';
import { arrival, arrivedLate, mismatchMessage, mismatchOf, nearestPayment, paidLateMessage, type PaymentArrival, type PaymentMismatch } from './matching.js';
import type { Session } from '../session.js';

/**
 * Offsets are drawn from 1..2^48 raw (under 3·10^-16 XNO, invisible to a
 * person): two requests made apart (two machines, no shared store) collide
 * with odds of about n²/2^49; within a profile the store's lock rules it out.
 */
const OFFSET_SPACE = 2n ** 48n;

function randomOffset(): bigint {
  return (BigInt(`0x${randomBytes(6).toString('hex')}`) % (OFFSET_SPACE - 1n)) + 1n;
}

/** How long a request kept on a node waits for its payment unless told (request --expires-in): a day, as a checkout session does. */
export const DEFAULT_REQUEST_EXPIRY_S = 86_400;
/** The longest a request may wait: its amount's offset stays reserved that long. */
export const MAX_REQUEST_EXPIRY_S = 90 * 86_400;

function isOpen(r: RequestRecord, now: number): boolean {
  return r.paidBy === undefined && (r.expiresAt === undefined || Date.parse(r.expiresAt) > now);
}

export interface NodeRequestInput {
  baseRaw: bigint;
  to?: string;
  redirectUrl?: string;
  freshAddress?: boolean;
  expiresInS?: number;
}

/**
 * An account of the active wallet that no request used and the ledger has
 * never seen. Called under the requests store's lock with its current records,
 * so two requests made at once (two processes) never get the same account.
 */
async function unusedAccount(session: Session, node: NodeClient, requests: Record<string, RequestRecord>): Promise<{ wallet: string; index: number; address: string }> {
  const active = await session.account();
  const record = session.profile().wallets[active.wallet];
  if (record?.kind === 'private-key') throw new NanoPayError('INVALID_REQUEST', 'A wallet imported from a private key has one account only: --fresh-address needs a seed or mnemonic wallet');
  const known = Object.keys(record?.accounts ?? {}).map(Number);
  const taken = Object.values(requests).flatMap((r) => (r.fresh?.wallet === active.wallet ? [r.fresh.index] : []));
  for (let index = Math.max(active.index, ...known, ...taken) + 1, tries = 0; tries < 50; index++, tries++) {
    const account = await session.account(active.wallet, index);
    if ((await node.accountInfo(account.address)) !== null || (await node.receivable(account.address)).length > 0) continue;
    session.updateProfile((p) => {
      const wallet = p.wallets[active.wallet];
      if (wallet === undefined) return p;
      return { ...p, wallets: { ...p.wallets, [active.wallet]: { ...wallet, accounts: { ...wallet.accounts, [String(index)]: account.address } } } };
    });
    return { wallet: active.wallet, index, address: account.address };
  }
  throw new NanoPayError('CONFLICT', 'Found no unused account among the next 50 of the wallet');
}

/**
 * A request kept by nanopay itself. On a shared address the amount is the
 * base plus an offset no open request to that address uses; on a fresh
 * address (an unused account of the wallet) it is the base itself: every
 * payment to that account belongs to the request, whatever the payer's wallet
 * rounds. Both are chosen and recorded in one hold of the store's lock.
 */
export async function createNodeRequest(session: Session, node: NodeClient, input: NodeRequestInput): Promise<RequestRecord> {
  const given = input.freshAddress === true ? undefined : input.to === undefined ? await session.address() : normalizeAddress(input.to);
  // The key store is unlocked (a prompt, scrypt) before the lock is taken, not while others wait for it.
  if (input.freshAddress === true) await session.account();
  if (given !== undefined && input.baseRaw + OFFSET_SPACE > MAX_RAW) throw new NanoPayError('AMOUNT_TOO_LARGE', 'The amount leaves no room for the matching offset below 2^128-1 raw');
  const now = Date.now();
  return session.requests.update(async (requests) => {
    const fresh = given === undefined ? await unusedAccount(session, node, requests) : undefined;
    const address = fresh?.address ?? (given as string);
    const used = new Set(Object.values(requests).filter((r) => r.address === address && isOpen(r, now)).map((r) => r.amountRaw));
    let amountRaw = input.baseRaw;
    if (fresh === undefined) {
      do amountRaw = input.baseRaw + randomOffset();
      while (used.has(amountRaw.toString()));
    }
    const record: RequestRecord = {
      id: randomUUID(),
      address,
      baseRaw: input.baseRaw.toString(),
      amountRaw: amountRaw.toString(),
      createdAt: new Date(now).toISOString(),
      expiresAt: new Date(now + (input.expiresInS ?? DEFAULT_REQUEST_EXPIRY_S) * 1000).toISOString(),
      ...(input.redirectUrl === undefined ? {} : { redirectUrl: input.redirectUrl }),
      ...(fresh === undefined ? {} : { fresh: { wallet: fresh.wallet, index: fresh.index } }),
    };
    requests[record.id] = record;
    return record;
  });
}

export interface NodeStatus {
  record: RequestRecord;
  isPaid: boolean;
  message: string;
  mismatch?: PaymentMismatch;
  /** The exact amount arrived after the request expired: reported, not paid. */
  paidLate?: PaymentArrival;
}

function paidMessage(hashes: string[]): string {
  const blocks = hashes.length === 0 ? '' : ` (block ${hashes.join(', ')})`;
  return `The transaction has been paid${blocks}. Receive the pending block to complete the process.`;
}

/** A request whose blocks are recorded: paid, or paid late (after its expiry). */
function settled(record: RequestRecord): NodeStatus {
  const blocks = record.paidBy ?? [];
  if (record.paidLate !== true) return { record, isPaid: true, message: paidMessage(blocks) };
  const late = arrival(BigInt(record.amountRaw), blocks);
  return { record, isPaid: false, message: paidLateMessage(late, record.expiresAt ?? ''), paidLate: late };
}

function unmatched(record: RequestRecord, mismatch: PaymentMismatch | undefined, now: number): NodeStatus {
  const wanted = BigInt(record.amountRaw);
  if (mismatch !== undefined) return { record, isPaid: false, message: mismatchMessage(mismatch, wanted), mismatch };
  const expired = record.expiresAt !== undefined && Date.parse(record.expiresAt) <= now;
  const message = expired
    ? `Not paid by ${record.expiresAt}, when it expired; it waited for exactly ${xnoAndRaw(wanted)} to ${record.address}. A payment arriving now is reported as late, not as paid.`
    : `Waiting for exactly ${xnoAndRaw(wanted)} to ${record.address}.`;
  return { record, isPaid: false, message };
}

/** What status reads need of a session: the requests store (plain data), never the key store. */
export type RequestsHolder = Pick<Session, 'requests'>;

/** Records `hashes` as the request's payment (late or not), once: a block another request claimed meanwhile does not count. */
async function claim(session: RequestsHolder, id: string, hashes: string[], late: boolean): Promise<RequestRecord | undefined> {
  return session.requests.update((requests) => {
    const record = requests[id];
    if (record === undefined) return undefined;
    if (record.paidBy !== undefined) return record;
    const claimed = new Set(Object.values(requests).flatMap((r) => r.paidBy ?? []));
    if (hashes.some((h) => claimed.has(h))) return undefined;
    record.paidBy = hashes;
    if (late) record.paidLate = true;
    return record;
  });
}

/**
 * Where a request stands, from blocks nanopay proved itself (provedReceivable:
 * fetched, hashed, signature verified, amount from the balances, confirmed);
 * the node's list only says where to look. Shared address: a block of exactly the
 * amount that paid no other request pays it; else the nearest unclaimed
 * payment of another amount (from half to twice the amount) is reported as
 * under- or over-paid. Fresh address: everything the account holds and has
 * waiting counts, summed. The exact amount arriving after the expiry is
 * recorded as a late payment (reported, not paid). Reads the node and the
 * requests store only: no key is unlocked.
 */
export async function nodePaymentStatus(session: RequestsHolder, node: NodeClient, id: string): Promise<NodeStatus> {
  const record = (await session.requests.get(id.toLowerCase())) ?? (await session.requests.get(id));
  if (record === undefined) throw new NanoPayError('INVALID_TRANSACTION_ID', `Unknown transaction id "${id.slice(0, 80)}"`);
  if (record.paidBy !== undefined) return settled(record);
  const wanted = BigInt(record.amountRaw);
  const receivable = await provedReceivable(node, record.address, await node.pending(record.address));
  const now = Date.now();

  if (record.fresh !== undefined) {
    // What the account holds is what its own (verified) head block says, not the node's summary.
    const held = (await readAccountHead({ api: node }, record.address)).state.balance;
    const arrived = held + receivable.reduce((sum, r) => sum + r.amountRaw, 0n);
    const hashes = receivable.map((r) => r.hash);
    if (arrived === wanted) {
      // What the account already holds was received before this look: when it came is not known.
      const seen = [...receivable.map((r) => r.seenAt), ...(held > 0n ? [undefined] : [])];
      const paid = await claim(session, record.id, hashes, arrivedLate(record.expiresAt, seen, now));
      if (paid !== undefined) return settled(paid);
    }
    return unmatched(record, arrived === 0n ? undefined : mismatchOf(arrived, wanted, hashes), now);
  }

  const all = await session.requests.all();
  const claimed = new Set(all.flatMap((r) => r.paidBy ?? []));
  const unclaimed = receivable.filter((r) => !claimed.has(r.hash));
  const exact = unclaimed.find((r) => r.amountRaw === wanted);
  if (exact !== undefined) {
    const paid = await claim(session, record.id, [exact.hash], arrivedLate(record.expiresAt, [exact.seenAt], now));
    if (paid !== undefined) return settled(paid);
  }
  const otherAmounts = new Set(all.filter((r) => r.address === record.address && isOpen(r, now)).map((r) => r.amountRaw));
  const near = nearestPayment(unclaimed.filter((r) => !otherAmounts.has(r.amountRaw.toString())), wanted);
  return unmatched(record, near === undefined ? undefined : mismatchOf(near.amountRaw, wanted, [near.hash]), now);
}

/**
 * Blocks nanopay just received on `address` pay the open request of exactly
 * their amount (their receivable is gone after this); one that came after the
 * request's expiry is recorded as its late payment.
 */
export async function markReceived(session: Session, address: string, blocks: { sourceHash: string; amountRaw: bigint; sourceSeenAt?: number }[]): Promise<void> {
  if (blocks.length === 0) return;
  const now = Date.now();
  await session.requests.update((requests) => {
    const claimed = new Set(Object.values(requests).flatMap((r) => r.paidBy ?? []));
    for (const block of blocks) {
      if (claimed.has(block.sourceHash)) continue;
      const match = Object.values(requests)
        .filter((r) => r.fresh === undefined && r.address === address && r.paidBy === undefined && r.amountRaw === block.amountRaw.toString())
        .sort((a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt))[0];
      if (match === undefined) continue;
      match.paidBy = [block.sourceHash];
      if (arrivedLate(match.expiresAt, [block.sourceSeenAt], now)) match.paidLate = true;
    }
  });
}

/** The fresh accounts of the wallet's requests, for receive to cover. */
export async function freshAccounts(session: Session, wallet: string): Promise<number[]> {
  return [...new Set((await session.requests.all()).flatMap((r) => (r.fresh?.wallet === wallet ? [r.fresh.index] : [])))];
}
