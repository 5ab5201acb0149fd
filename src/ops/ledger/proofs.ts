import type { LedgerBackend } from '../../api/backend.js';
import type { RemoteBlockInfo } from '../../api/client.js';
import { NanoPayError } from '../../errors.js';
import { ZERO_HASH, hashBlock, linkAsAccount, normalizeAddress, verifyBlock } from '../../nano/index.js';
import { inconsistent } from './inconsistent.js';

/** A send block nanopay proved from the blocks themselves, not from what a backend said about it. */
export interface ProvedSend {
  hash: string;
  from: string;
  to: string;
  amountRaw: bigint;
  /** As the backend says: a block counts as a payment only once confirmed. */
  confirmed: boolean;
  /** When the backend's node first saw it (local_timestamp, ms), as it says; absent when it does not. */
  seenAt?: number;
}

/** Confirmed sends already proved: a confirmed block never changes, so it is fetched once. */
const provedSends = new Map<string, ProvedSend>();
const PROVED_KEPT = 10_000;

/**
 * Proves a send block: fetched by hash, its hash recomputed from its contents,
 * its signature verified with its account's key, and its amount taken from its
 * balance against its previous block (fetched and hashed too; the signature
 * covers that hash). What a backend claims about the amount or the destination
 * is never used. A block that is no send, or that does not hash or verify, is
 * SERVICE_INCONSISTENT: an honest backend lists no such block.
 */
async function proveSend(api: LedgerBackend, hash: string): Promise<ProvedSend> {
  const key = hash.toUpperCase();
  const kept = provedSends.get(key);
  if (kept !== undefined) return kept;
  const party = { party: api.kind, outcome: 'It was not counted as a payment, and nothing was signed.' };
  const fetch = (h: string, what: string): Promise<RemoteBlockInfo> =>
    api.blockInfo(h).catch((error: unknown) => {
      if (error instanceof NanoPayError && error.status === 404) throw inconsistent(`${what} ${h} is not a known block`, party);
      throw error;
    });
  const info = await fetch(key, 'the send');
  const block = info.contents;
  if (hashBlock(block) !== key) throw inconsistent(`the contents given for block ${key} hash to ${hashBlock(block)}`, party);
  if (!verifyBlock(block)) throw inconsistent(`block ${key} is not signed by its account ${block.account}`, party);
  const previous = block.previous.toUpperCase();
  if (previous === ZERO_HASH) throw inconsistent(`block ${key} opens an account; it is no send`, party);
  const before = (await fetch(previous, 'the block before')).contents;
  if (hashBlock(before) !== previous) throw inconsistent(`the contents given for block ${previous} hash to ${hashBlock(before)}`, party);
  const amountRaw = BigInt(before.balance) - BigInt(block.balance);
  if (amountRaw <= 0n) throw inconsistent(`block ${key} lowers no balance; it is no send`, party);
  const proved: ProvedSend = { hash: key, from: normalizeAddress(block.account), to: linkAsAccount(block.link), amountRaw, confirmed: info.confirmed, ...(info.seenAt === undefined ? {} : { seenAt: info.seenAt }) };
  if (proved.confirmed) {
    if (provedSends.size >= PROVED_KEPT) provedSends.delete(provedSends.keys().next().value as string);
    provedSends.set(key, proved);
  }
  return proved;
}

/**
 * The send block `hash`, proved (proveSend), which must pay what is expected
 * of it (the address, the amount, where known): a payment a backend names.
 */
export async function provedPayment(api: LedgerBackend, hash: string, expected: { address?: string; amountRaw?: bigint }): Promise<ProvedSend> {
  const proved = await proveSend(api, hash);
  if ((expected.address !== undefined && proved.to !== expected.address) || (expected.amountRaw !== undefined && proved.amountRaw !== expected.amountRaw)) {
    throw inconsistent(`it names block ${proved.hash} as the payment of a request, but that block sends ${proved.amountRaw} raw to ${proved.to}`, {
      party: api.kind,
      outcome: 'It was not counted as a payment, and nothing was signed.',
    });
  }
  return proved;
}

/** How many blocks are proved at once: each costs the backend two reads. */
const PROVING_AT_ONCE = 8;

/**
 * The confirmed sends waiting for `address`, each proved (proveSend): the
 * backend's list says which blocks to look at, never what they are worth.
 * One that does not pay `address` is SERVICE_INCONSISTENT; unconfirmed ones are left for later.
 */
export async function provedReceivable(api: LedgerBackend, address: string, hashes: string[]): Promise<ProvedSend[]> {
  const proved = await proveEach(hashes, (h) => proveSend(api, h));
  const stray = proved.find((p) => p.to !== address);
  if (stray !== undefined) throw inconsistent(`it lists block ${stray.hash} as waiting for ${address}, but it pays ${stray.to}`, { party: api.kind });
  return proved.filter((p) => p.confirmed);
}

/** `prove` of each hash, PROVING_AT_ONCE at a time. */
async function proveEach(hashes: string[], prove: (hash: string) => Promise<ProvedSend>): Promise<ProvedSend[]> {
  const proved: ProvedSend[] = [];
  for (let i = 0; i < hashes.length; i += PROVING_AT_ONCE) proved.push(...(await Promise.all(hashes.slice(i, i + PROVING_AT_ONCE).map(prove))));
  return proved;
}

/**
 * Who paid: the accounts that signed these sends to `address`, each block proved (provedPayment), so the
 * payers a shop keeps come from the blocks, not from what a backend says of them.
 */
export async function payersOf(api: LedgerBackend, address: string, hashes: string[]): Promise<string[]> {
  const proved = await proveEach(hashes, (h) => provedPayment(api, h, { address }));
  return [...new Set(proved.map((p) => p.from))];
}
