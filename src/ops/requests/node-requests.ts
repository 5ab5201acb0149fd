import { randomBytes, randomUUID } from 'node:crypto';
import type { NodeClient } from '../../api/node-client.js';
import { NanoPayError } from '../../errors.js';
import { MAX_RAW, normalizeAddress } from '../../nano/index.js';
import type { RequestRecord } from '../../wallet/requests.js';
import { isLaneIndex } from '../../wallet/config.js';
import { receivedSources } from '../ledger/chain.js';
import { allProvedReceivable, provedPayment, type ProvedSend } from '../ledger/proofs.js';
import { xnoAndRaw } from '../money.js';
import { arrival, arrivedLate, mismatchMessage, mismatchOf, paidLateMessage, type PaymentMismatch, type Verdict } from './matching.js';
import type { Session } from '../session.js';
import type { Store } from '../../store/store.js';

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

export interface NodeRequestInput {
  baseRaw: bigint;
  to?: string;
  redirectUrl?: string;
  freshAddress?: boolean;
  expiresInS?: number;
}

/**
 * An account of the active wallet that no request used and the ledger has
 * never seen. Called while holding the store's `requests` lock, so two requests
 * made at once (two processes, or two servers on one database) never get the
 * same account; the store's unique index on fresh accounts backs this up.
 */
async function unusedAccount(session: Session, node: NodeClient, store: Store): Promise<{ wallet: string; index: number; address: string }> {
  const active = await session.account();
  const record = session.profile().wallets[active.wallet];
  if (record?.kind === 'private-key') throw new NanoPayError('INVALID_REQUEST', 'A wallet imported from a private key has one account only: --fresh-address needs a seed or mnemonic wallet');
  const known = Object.keys(record?.accounts ?? {}).map(Number);
  const highest = (await store.requests.freshIndexes(active.wallet)).reduce((max, index) => Math.max(max, index), Math.max(active.index, ...known));
  // Lane indexes are the wallet's payment lanes, never a request's address.
  for (let index = highest + 1, tries = 0; tries < 50 && !isLaneIndex(index); index++, tries++) {
    const account = await session.account(active.wallet, index);
    if ((await node.accountInfo(account.address)) !== null || (await node.receivable(account.address)).length > 0) continue;
    // Kept by the request's record alone (its fresh wallet and index, in the store), not in config.json: the store is where they are found again.
    return { wallet: active.wallet, index, address: account.address };
  }
  throw new NanoPayError('CONFLICT', 'Found no unused account among the next 50 of the wallet');
}

/**
 * A request kept by nanopay itself. On a shared address the amount is the
 * base plus an offset no open request to that address uses; on a fresh
 * address (an unused account of the wallet) it is the base itself: every
 * payment to that account belongs to the request, whatever the payer's wallet
 * rounds. Both are chosen and recorded in one hold of the store's `requests`
 * lock; each check of an amount reads only the rows of that address and amount.
 * `keep` stores the record (with what goes with it, in one transaction: the
 * shop's own row), within that hold.
 */
export async function createNodeRequest(
  session: Session,
  node: NodeClient,
  input: NodeRequestInput,
  keep: (record: RequestRecord, store: Store) => Promise<void> = (record, store) => store.requests.insert(record),
): Promise<RequestRecord> {
  const given = input.freshAddress === true ? undefined : input.to === undefined ? await session.address() : normalizeAddress(input.to);
  // The key store is unlocked (a prompt, scrypt) before the lock is taken, not while others wait for it.
  if (input.freshAddress === true) await session.account();
  if (given !== undefined && input.baseRaw + OFFSET_SPACE > MAX_RAW) throw new NanoPayError('AMOUNT_TOO_LARGE', 'The amount leaves no room for the matching offset below 2^128-1 raw');
  const store = await session.dataStore();
  return store.exclusive('requests', async () => {
    // store migrate switches the profile's store while it holds this lock: a request must not be made in the store it left.
    if (session.storeMoved()) {
      throw new NanoPayError('STORE_MOVED', "The profile's store was moved (store migrate) since this process opened it: the request was not made in the old one", {
        hint: 'Run it again; a server (checkout serve, serve) must be restarted to use the new store.',
      });
    }
    const now = Date.now();
    const fresh = given === undefined ? await unusedAccount(session, node, store) : undefined;
    const address = fresh?.address ?? (given as string);
    let amountRaw = input.baseRaw;
    if (fresh === undefined) {
      do amountRaw = input.baseRaw + randomOffset();
      while (await store.requests.amountInUse(address, amountRaw.toString(), new Date(now).toISOString()));
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
    await keep(record, store);
    return record;
  });
}

/**
 * Every payment a fresh account got, each proved (proveSend): those waiting to
 * be received, and those it received (the sources of its own blocks, walked
 * from its verified head), so a refund or a sweep sent from the account does
 * not change what the request was paid.
 */
export async function freshArrivals(node: NodeClient, address: string): Promise<ProvedSend[]> {
  const receivable = await allProvedReceivable(node, address, await node.pending(address));
  const received = await Promise.all((await receivedSources({ api: node }, address)).map((hash) => provedPayment(node, hash, { address })));
  return [...received.reverse(), ...receivable];
}

/** Where a request nanopay keeps stands, with its record. */
export interface NodeStatus extends Verdict {
  record: RequestRecord;
}

function paidMessage(hashes: string[]): string {
  const blocks = hashes.length === 0 ? '' : ` (block ${hashes.join(', ')})`;
  return `The transaction has been paid${blocks}. Receive the pending block to complete the process.`;
}

/** A request whose blocks are recorded: paid, or paid late (after its expiry). */
function settled(record: RequestRecord): NodeStatus {
  const blocks = record.paidBy ?? [];
  if (record.paidLate !== true) return { record, state: 'paid', message: paidMessage(blocks), paid_by: blocks };
  const late = arrival(BigInt(record.amountRaw), blocks);
  return { record, state: 'paid_late', message: paidLateMessage(late, record.expiresAt ?? ''), paid_late: late };
}

function unmatched(record: RequestRecord, mismatch: PaymentMismatch | undefined, now: number): NodeStatus {
  const wanted = BigInt(record.amountRaw);
  if (mismatch !== undefined) return { record, state: mismatch.kind, message: mismatchMessage(mismatch, wanted), mismatch };
  if (record.expiresAt !== undefined && Date.parse(record.expiresAt) <= now) {
    const message = `Not paid by ${record.expiresAt}, when it expired; it waited for exactly ${xnoAndRaw(wanted)} to ${record.address}. A payment arriving now is reported as late, not as paid.`;
    return { record, state: 'expired', message };
  }
  return { record, state: 'waiting', message: `Waiting for exactly ${xnoAndRaw(wanted)} to ${record.address}.` };
}

/** What status reads need of a session: the store (plain data), never the key store. */
export type RequestsHolder = Pick<Session, 'dataStore'>;

/**
 * Where a request stands, from blocks nanopay proved itself (provedReceivable:
 * fetched, hashed, signature verified, amount from the balances, confirmed);
 * the node's list only says where to look. Only what the blocks say belongs to
 * the request is attributed to it. Shared address: a block of exactly its
 * amount (its own offset) that paid no other request pays it; a payment of
 * another amount there may be anyone's (another order's, a few raw short of
 * its own), so it is never reported as this request's, however many there are.
 * Fresh address: everything the account holds and has waiting is the
 * request's, summed: the exact sum pays it, another is under- or overpaid. The
 * exact amount arriving after the expiry is recorded as a late payment
 * (reported, not paid). Reads the node and the requests store only: no key is
 * unlocked.
 */
export async function nodePaymentStatus(session: RequestsHolder, node: NodeClient, id: string): Promise<NodeStatus> {
  const requests = (await session.dataStore()).requests;
  const record = (await requests.get(id.toLowerCase())) ?? (await requests.get(id));
  if (record === undefined) throw new NanoPayError('INVALID_TRANSACTION_ID', `Unknown transaction id "${id.slice(0, 80)}"`);
  if (record.paidBy !== undefined) return settled(record);
  const wanted = BigInt(record.amountRaw);
  const now = Date.now();

  if (record.fresh !== undefined) {
    const arrivals = await freshArrivals(node, record.address);
    const arrived = arrivals.reduce((sum, r) => sum + r.amountRaw, 0n);
    const hashes = arrivals.map((r) => r.hash);
    if (arrived === wanted) {
      const seen = arrivals.map((a) => a.seenAt);
      const paid = await requests.claim(record.id, hashes, (r) => arrivedLate(r.expiresAt, seen, now));
      if (paid !== undefined) return settled(paid);
    }
    return unmatched(record, arrived === 0n ? undefined : mismatchOf(arrived, wanted, hashes), now);
  }

  // On a shared address only the exact amount pays: the node lists what is at least that much, so no flood of
  // smaller sends can push it out of the answer; each listed block is proved, whatever amount the node gives.
  const listed = await node.receivable(record.address, wanted);
  const exact = (await allProvedReceivable(node, record.address, listed.map((r) => r.hash))).filter((r) => r.amountRaw === wanted);
  const claimed = await requests.claimedBy(exact.map((r) => r.hash));
  for (const block of exact.filter((r) => !claimed.has(r.hash))) {
    const paid = await requests.claim(record.id, [block.hash], (r) => arrivedLate(r.expiresAt, [block.seenAt], now));
    if (paid !== undefined) return settled(paid);
  }
  return unmatched(record, undefined, now);
}

/**
 * Blocks nanopay just received on `address` pay the open request of exactly
 * their amount (their receivable is gone after this); one that came after the
 * request's expiry is recorded as its late payment.
 */
export async function markReceived(session: Session, address: string, blocks: { sourceHash: string; amountRaw: bigint; sourceSeenAt?: number }[]): Promise<void> {
  if (blocks.length === 0) return;
  const requests = (await session.dataStore()).requests;
  const now = Date.now();
  for (const block of blocks) await requests.claimOldest(address, block.amountRaw.toString(), block.sourceHash, (r) => arrivedLate(r.expiresAt, [block.sourceSeenAt], now));
}

/** The fresh accounts of the wallet's requests, for receive to cover. */
export async function freshAccounts(session: Session, wallet: string): Promise<number[]> {
  return (await session.dataStore()).requests.freshIndexes(wallet);
}
