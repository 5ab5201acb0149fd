import type { LedgerBackend } from '../../api/backend.js';
import type { RemoteBlockInfo } from '../../api/client.js';
import { NanoPayError } from '../../errors.js';
import { MAX_RAW, ZERO_HASH, addressToPublicKey, hashBlock, linkAsAccount, normalizeAddress, signedByAccount, verifyBlock } from '../../nano/index.js';
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
 * How many blocks proving one send may read. A state block holds its balance, so a send costs two reads; a
 * legacy chain (every ledger's genesis, old accounts without epoch blocks) is walked block by block, and an
 * honest one that long is not worth the node's time.
 */
const PROOF_READS = 64;

interface Proof {
  api: LedgerBackend;
  party: { party: LedgerBackend['kind']; outcome: string };
  reads: number;
}

/** Block `hash`, fetched, with contents that hash to it: everything else about it rests on that hash. */
async function fetchChecked(proof: Proof, hash: string, what: string): Promise<RemoteBlockInfo> {
  if (++proof.reads > PROOF_READS) {
    throw new NanoPayError('UNSUPPORTED_BLOCK', `Proving ${what} ${hash} needs more than ${PROOF_READS} blocks of a legacy chain`, {
      hint: 'Receive it with another wallet, or ask the sender to send from an account with state blocks.',
    });
  }
  const info = await proof.api.blockInfo(hash).catch((error: unknown) => {
    if (error instanceof NanoPayError && error.status === 404) throw inconsistent(`${what} ${hash} is not a known block`, proof.party);
    throw error;
  });
  const computed = hashBlock(info.contents);
  if (computed !== hash) throw inconsistent(`the contents given for block ${hash} hash to ${computed}`, proof.party);
  return info;
}

/**
 * The balance of an account after its block `hash`, from the blocks themselves: a state block and a legacy
 * send hold it; a legacy change keeps the balance before it, a legacy receive adds its source's amount, and a
 * legacy open holds its source's amount (the genesis open, whose source is its own account, holds every raw
 * there is). Each block's hash is checked, and the chain hangs from a signed block's previous.
 */
async function balanceAfter(proof: Proof, hash: string): Promise<bigint> {
  const block = (await fetchChecked(proof, hash, 'the block before')).contents;
  switch (block.type) {
    case 'state':
    case 'send':
      return BigInt(block.balance);
    case 'change':
      return balanceAfter(proof, block.previous.toUpperCase());
    case 'receive': {
      const [before, source] = await Promise.all([balanceAfter(proof, block.previous.toUpperCase()), proveSendIn(proof, block.source.toUpperCase())]);
      return before + source.amountRaw;
    }
    case 'open':
      return addressToPublicKey(block.account) === block.source.toUpperCase() ? MAX_RAW : (await proveSendIn(proof, block.source.toUpperCase())).amountRaw;
  }
}

/**
 * Proves a send block: fetched by hash, its hash recomputed from its contents,
 * its signature verified with its account's key, and its amount taken from its
 * balance against the balance before it (balanceAfter its previous block, whose
 * hash the signature covers). A legacy send names no account: the one the
 * backend gives is taken only because its key signed the block. What a backend
 * claims about the amount or the destination is never used. A block that is no
 * send, or that does not hash or verify, is SERVICE_INCONSISTENT: an honest
 * backend lists no such block.
 */
async function proveSendIn(proof: Proof, hash: string): Promise<ProvedSend> {
  const kept = provedSends.get(hash);
  if (kept !== undefined) return kept;
  const info = await fetchChecked(proof, hash, 'the send');
  const block = info.contents;
  let from: string;
  let to: string;
  let previous: string;
  if (block.type === 'state') {
    if (!verifyBlock(block)) throw inconsistent(`block ${hash} is not signed by its account ${block.account}`, proof.party);
    [from, to, previous] = [normalizeAddress(block.account), linkAsAccount(block.link), block.previous.toUpperCase()];
    if (previous === ZERO_HASH) throw inconsistent(`block ${hash} opens an account; it is no send`, proof.party);
  } else if (block.type === 'send') {
    if (!signedByAccount(block, info.account)) throw inconsistent(`the legacy send ${hash} is not signed by ${info.account}, the account it is said to be on`, proof.party);
    [from, to, previous] = [normalizeAddress(info.account), normalizeAddress(block.destination), block.previous.toUpperCase()];
  } else {
    throw inconsistent(`block ${hash} is a legacy ${block.type} block; it is no send`, proof.party);
  }
  const amountRaw = (await balanceAfter(proof, previous)) - BigInt(block.balance);
  if (amountRaw <= 0n) throw inconsistent(`block ${hash} lowers no balance; it is no send`, proof.party);
  const proved: ProvedSend = { hash, from, to, amountRaw, confirmed: info.confirmed, ...(info.seenAt === undefined ? {} : { seenAt: info.seenAt }) };
  if (proved.confirmed) {
    if (provedSends.size >= PROVED_KEPT) provedSends.delete(provedSends.keys().next().value as string);
    provedSends.set(hash, proved);
  }
  return proved;
}

function proofOn(api: LedgerBackend, outcome = 'It was not counted as a payment, and nothing was signed.'): Proof {
  return { api, party: { party: api.kind, outcome }, reads: 0 };
}

function proveSend(api: LedgerBackend, hash: string): Promise<ProvedSend> {
  return proveSendIn(proofOn(api), hash.toUpperCase());
}

/** The balance of an account after its block `hash` (a checked block of the account, say its head), by balanceAfter's rules. */
export function provedBalanceAfter(api: LedgerBackend, hash: string): Promise<bigint> {
  return balanceAfter(proofOn(api, 'Nothing was signed.'), hash.toUpperCase());
}

/** The representative of an account after its block `hash`: the one the last state, open or change block up its chain names. */
export async function representativeAfter(api: LedgerBackend, hash: string): Promise<string> {
  const proof = proofOn(api, 'Nothing was signed.');
  for (let at = hash.toUpperCase(); ; ) {
    const block = (await fetchChecked(proof, at, 'the block before')).contents;
    if (block.type === 'send' || block.type === 'receive') at = block.previous.toUpperCase();
    else return block.representative;
  }
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

/** A block listed as waiting that nanopay could not prove, and why: it is neither counted nor received. */
export interface RefusedBlock {
  hash: string;
  error: NanoPayError;
}

/** Failures that are the block's own (what the backend served of it), not the backend's reach: they refuse that block alone. */
const BLOCK_FAULTS = new Set(['SERVICE_INCONSISTENT', 'UNSUPPORTED_BLOCK', 'INVALID_DATA', 'BLOCK_NOT_FOUND']);

/**
 * The confirmed sends waiting for `address`, each proved (proveSend): the
 * backend's list says which blocks to look at, never what they are worth.
 * One that cannot be proved, or does not pay `address`, is refused alone (the
 * others still count); unconfirmed ones are left for later. A backend that
 * cannot be reached fails the whole call.
 */
export async function provedReceivable(api: LedgerBackend, address: string, hashes: string[]): Promise<{ sends: ProvedSend[]; refused: RefusedBlock[] }> {
  const refused: RefusedBlock[] = [];
  const proved = await proveEach(hashes, async (hash) => {
    try {
      const send = await proveSend(api, hash);
      if (send.to !== address) throw inconsistent(`it lists block ${send.hash} as waiting for ${address}, but it pays ${send.to}`, { party: api.kind });
      return send;
    } catch (error) {
      if (!(error instanceof NanoPayError && BLOCK_FAULTS.has(error.code))) throw error;
      refused.push({ hash: hash.toUpperCase(), error });
      return undefined;
    }
  });
  return { sends: proved.filter((p): p is ProvedSend => p?.confirmed === true), refused };
}

/**
 * provedReceivable where any block that cannot be proved fails the call with its reason: for what judges
 * an account as a whole (a request's status, a lane's funds, a sweep), a backend that lies is said so.
 */
export async function allProvedReceivable(api: LedgerBackend, address: string, hashes: string[]): Promise<ProvedSend[]> {
  const { sends, refused } = await provedReceivable(api, address, hashes);
  if (refused[0] !== undefined) throw refused[0].error;
  return sends;
}

/** `prove` of each hash, PROVING_AT_ONCE at a time. */
async function proveEach<T>(hashes: string[], prove: (hash: string) => Promise<T>): Promise<T[]> {
  const proved: T[] = [];
  for (let i = 0; i < hashes.length; i += PROVING_AT_ONCE) proved.push(...(await Promise.all(hashes.slice(i, i + PROVING_AT_ONCE).map(prove))));
  return proved;
}

/**
 * Who paid, and how much: these sends to `address`, each block proved (provedPayment), so the payers and
 * amounts a shop keeps come from the blocks, not from what a backend says of them.
 */
export function paymentsOf(api: LedgerBackend, address: string, hashes: string[]): Promise<ProvedSend[]> {
  return proveEach(hashes, (h) => provedPayment(api, h, { address }));
}
