import { NanoPayError } from '../errors.js';
import {
  MAX_RAW,
  ZERO_HASH,
  addressToPublicKey,
  hashBlock,
  isValidAddress,
  publicKeyToAddress,
  verifyBlock,
  workRoot,
  type StateBlock,
  type Subtype,
} from '../nano/index.js';
import { parseThreshold, validateWork, type Thresholds } from '../work/index.js';

/** A block as the ledger keeps it. */
export interface LedgerBlock {
  hash: string;
  block: StateBlock;
  subtype: Subtype;
  account: string;
  amount: bigint;
  balance: bigint;
  height: number;
  /** Seconds since the epoch when the sandbox applied it (the node's local_timestamp). */
  timestamp: number;
  successor: string | null;
}

/** A block as the node's block_info gives it, both sides of the sandbox; `contents` in the form each asks for. */
export function blockInfoOf(stored: LedgerBlock, contents: unknown): Record<string, unknown> {
  return {
    block_account: stored.account,
    amount: stored.amount.toString(),
    balance: stored.balance.toString(),
    height: String(stored.height),
    local_timestamp: String(stored.timestamp),
    successor: stored.successor ?? '0'.repeat(64),
    confirmed: 'true',
    contents,
    subtype: stored.subtype,
  };
}

export interface AccountRecord {
  address: string;
  frontier: string;
  balance: bigint;
  representative: string;
  height: number;
  openBlock: string;
}

/** A send waiting for its destination to receive it. */
export interface Receivable {
  hash: string;
  /** Public key of the destination (the send's link). */
  destination: string;
  source: string;
  amount: bigint;
  received: boolean;
}

/** A block that passed every check and can be applied as it is. */
export interface VerifiedBlock {
  stored: LedgerBlock;
  /** The send it receives, for open and receive blocks. */
  source: Receivable | undefined;
}

export interface ProcessOptions {
  /** The subtype the client claims; it must match what the ledger computes. */
  subtype?: string;
  /**
   * Blocks the sandbox signs itself (faucet sends from genesis) skip the work
   * check: they mint test funds and must stay instant even at live thresholds.
   */
  skipWork?: boolean;
  now?: number;
}

const HEX64 = /^[0-9A-Fa-f]{64}$/;

function reject(code: string, message: string): never {
  throw new NanoPayError(code, message);
}

/**
 * Checks the fields of a submitted block and returns it in canonical form:
 * nano_ addresses, upper-case hashes and signature, lower-case work, link as
 * 64 hex (an address is accepted for it), balance without leading zeros.
 */
export function parseBlock(input: unknown): StateBlock {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) reject('INVALID_BLOCK', 'The block must be a JSON object');
  const b = input as Record<string, unknown>;
  if (b.type !== 'state') reject('INVALID_BLOCK', 'Only state blocks are accepted ("type": "state")');
  const text = (field: string): string => {
    const value = b[field];
    if (typeof value !== 'string') reject('INVALID_BLOCK', `The block field "${field}" must be a string`);
    return value;
  };
  const [account, previous, representative, balance, link, signature, work] = ['account', 'previous', 'representative', 'balance', 'link', 'signature', 'work'].map(text) as [
    string, string, string, string, string, string, string,
  ];
  if (!isValidAddress(account)) reject('INVALID_BLOCK', 'The block account is not a valid address');
  if (!isValidAddress(representative)) reject('INVALID_BLOCK', 'The block representative is not a valid address');
  if (!HEX64.test(previous)) reject('INVALID_BLOCK', 'The block previous must be 64 hex characters');
  if (!HEX64.test(link) && !isValidAddress(link)) reject('INVALID_BLOCK', 'The block link must be 64 hex characters or an address');
  if (!/^\d{1,39}$/.test(balance) || BigInt(balance) > MAX_RAW) reject('INVALID_BLOCK', 'The block balance must be a decimal raw amount from 0 to 2^128-1');
  if (!/^[0-9A-Fa-f]{128}$/.test(signature)) reject('INVALID_BLOCK', 'The block signature must be 128 hex characters');
  if (!/^[0-9A-Fa-f]{16}$/.test(work)) reject('INVALID_BLOCK', 'The block work must be 16 hex characters');
  return {
    type: 'state',
    account: publicKeyToAddress(addressToPublicKey(account)),
    previous: previous.toUpperCase(),
    representative: publicKeyToAddress(addressToPublicKey(representative)),
    balance: BigInt(balance).toString(),
    link: HEX64.test(link) ? link.toUpperCase() : addressToPublicKey(link),
    signature: signature.toUpperCase(),
    work: work.toLowerCase(),
  };
}

/** The easier of two thresholds (the lower 64-bit value). */
function easiest(thresholds: Thresholds): string {
  return parseThreshold(thresholds.send) <= parseThreshold(thresholds.receive) ? thresholds.send : thresholds.receive;
}

/**
 * A Nano ledger that validates like a node and keeps what the service reads:
 * accounts, blocks by hash in arrival order, and receivables.
 *
 * Check order (each failure has its own code):
 *  1. fields (INVALID_BLOCK), 2. already known (BLOCK_EXISTS),
 *  3. signature (BLOCK_BAD_SIGNATURE),
 *  4. work against the easiest advertised threshold, before any ledger state,
 *     as the node's block processor filters (BLOCK_INSUFFICIENT_WORK),
 *  5. the chain: previous known (BLOCK_GAP_PREVIOUS), same account
 *     (BLOCK_ACCOUNT_MISMATCH), previous is the frontier and an open block is
 *     the first (BLOCK_FORK),
 *  6. the subtype from the balance change and its arithmetic (receivable
 *     exists, is for this account, is unspent, amount exact), then the
 *     client's subtype claim (INVALID_BLOCK),
 *  7. work against the threshold of that subtype: send/change use the send
 *     threshold, open/receive the receive one (BLOCK_INSUFFICIENT_WORK).
 */
export class Ledger {
  readonly accounts = new Map<string, AccountRecord>();
  readonly blocks = new Map<string, LedgerBlock>();
  readonly order: string[] = [];
  readonly receivables = new Map<string, Receivable>();
  /** The unreceived sends by destination key, oldest first: account_info asks for them on every read, so never a scan of every send. */
  private readonly unreceived = new Map<string, Map<string, Receivable>>();
  /** Told of every block applied from now on (the node side's confirmation topic). */
  readonly listeners = new Set<(stored: LedgerBlock) => void>();

  constructor(readonly thresholds: Thresholds) {}

  /** The genesis account holds the whole supply, as on the real network. */
  createGenesis(genesis: { address: string; sign: (block: StateBlock) => string }, now = Date.now()): void {
    const unsigned: StateBlock = {
      type: 'state',
      account: genesis.address,
      previous: ZERO_HASH,
      representative: genesis.address,
      balance: MAX_RAW.toString(),
      link: addressToPublicKey(genesis.address),
    };
    const block: StateBlock = { ...unsigned, signature: genesis.sign(unsigned), work: '0'.repeat(16) };
    this.insert({ hash: hashBlock(block), block, subtype: 'open', account: genesis.address, amount: MAX_RAW, balance: MAX_RAW, height: 1, timestamp: seconds(now), successor: null });
  }

  account(address: string): AccountRecord | undefined {
    return this.accounts.get(addressToPublicKey(address));
  }

  /** Unreceived sends to `address`, oldest first. */
  pendingFor(address: string): Receivable[] {
    return [...(this.unreceived.get(addressToPublicKey(address))?.values() ?? [])];
  }

  /** Validates and applies a block; throws the node-like rejection otherwise. */
  process(input: unknown, options: ProcessOptions = {}): LedgerBlock {
    const verified = this.verify(input, options);
    this.apply(verified);
    return verified.stored;
  }

  /** Every check of `process` without changing the ledger (see the class comment for the order). */
  verify(input: unknown, options: ProcessOptions = {}): VerifiedBlock {
    const block = parseBlock(input);
    const hash = hashBlock(block);
    if (this.blocks.has(hash)) reject('BLOCK_EXISTS', `Block ${hash} is already in the ledger`);
    // Checked in full, as a node checks each block, also where its signer shares this process (tests, benches).
    if (!verifyBlock(block, block.signature, { remembered: false })) reject('BLOCK_BAD_SIGNATURE', 'The block signature does not match the block and its account');
    const root = workRoot(block);
    const work = block.work as string;
    const minimum = easiest(this.thresholds);
    if (!options.skipWork && !validateWork(root, work, minimum)) reject('BLOCK_INSUFFICIENT_WORK', `The work does not meet the minimum threshold ${minimum}`);

    const key = addressToPublicKey(block.account);
    const account = this.accounts.get(key);
    const isOpen = block.previous === ZERO_HASH;
    if (isOpen && account !== undefined) reject('BLOCK_FORK', `Fork: account ${block.account} is already open`);
    if (!isOpen) {
      const previous = this.blocks.get(block.previous);
      if (previous === undefined) reject('BLOCK_GAP_PREVIOUS', `The previous block ${block.previous} is not in the ledger`);
      if (previous.account !== block.account) reject('BLOCK_ACCOUNT_MISMATCH', `The previous block ${block.previous} belongs to another account`);
      if (account?.frontier !== block.previous) {
        reject('BLOCK_FORK', `Fork: ${block.previous} already has a successor; the account frontier is ${account?.frontier}`);
      }
    }

    const before = account?.balance ?? 0n;
    const after = BigInt(block.balance);
    let subtype: Subtype;
    let source: Receivable | undefined;
    if (after < before) {
      subtype = 'send';
    } else if (after > before || isOpen) {
      // As on a node, a block that does not lower the balance and names a link
      // receives that link; an open block can only receive.
      subtype = isOpen ? 'open' : 'receive';
      source = this.receivableFor(block.link, key, block.account, after - before);
    } else {
      if (block.link !== ZERO_HASH) reject('BLOCK_BALANCE_MISMATCH', 'The balance did not change, so the link must be zero (a change block)');
      subtype = 'change';
    }
    const claimed = options.subtype;
    // The toolset labels open blocks "receive": that claim is accepted for an open.
    if (claimed !== undefined && claimed !== subtype && !(claimed === 'receive' && subtype === 'open')) {
      reject('INVALID_BLOCK', `The block is a ${subtype}, not a ${claimed}`);
    }
    if (!options.skipWork) {
      const threshold = subtype === 'send' || subtype === 'change' ? this.thresholds.send : this.thresholds.receive;
      if (!validateWork(root, work, threshold)) reject('BLOCK_INSUFFICIENT_WORK', `The work does not meet the ${subtype} threshold ${threshold}`);
    }

    const stored: LedgerBlock = {
      hash,
      block,
      subtype,
      account: block.account,
      amount: after > before ? after - before : before - after,
      balance: after,
      height: (account?.height ?? 0) + 1,
      timestamp: seconds(options.now ?? Date.now()),
      successor: null,
    };
    return { stored, source };
  }

  /** Applies a block `verify` accepted; the ledger must not have changed in between. */
  apply({ stored, source }: VerifiedBlock): void {
    if (source !== undefined) this.markReceived(source);
    this.insert(stored);
  }

  private markReceived(source: Receivable): void {
    source.received = true;
    this.unreceived.get(source.destination)?.delete(source.hash);
  }

  private receivableFor(link: string, key: string, address: string, amount: bigint): Receivable {
    if (link === ZERO_HASH) reject('BLOCK_UNRECEIVABLE', 'The balance rose (or the account opens) but the link names no send to receive');
    const source = this.receivables.get(link);
    if (source === undefined) reject('BLOCK_UNRECEIVABLE', `Block ${link} is not a send in the ledger`);
    if (source.destination !== key) reject('BLOCK_UNRECEIVABLE', `Block ${link} was not sent to ${address}`);
    if (source.received) reject('BLOCK_ALREADY_RECEIVED', `Block ${link} has already been received`);
    if (source.amount !== amount) {
      reject('BLOCK_BALANCE_MISMATCH', `The balance must rise by exactly ${source.amount} raw (the amount sent), not ${amount}`);
    }
    return source;
  }

  private insert(stored: LedgerBlock): void {
    const key = addressToPublicKey(stored.account);
    const account = this.accounts.get(key);
    if (account !== undefined) (this.blocks.get(account.frontier) as LedgerBlock).successor = stored.hash;
    this.blocks.set(stored.hash, stored);
    this.order.push(stored.hash);
    this.accounts.set(key, {
      address: stored.account,
      frontier: stored.hash,
      balance: stored.balance,
      representative: stored.block.representative,
      height: stored.height,
      openBlock: account?.openBlock ?? stored.hash,
    });
    if (stored.subtype === 'send') {
      const receivable: Receivable = { hash: stored.hash, destination: stored.block.link, source: stored.account, amount: stored.amount, received: false };
      this.receivables.set(stored.hash, receivable);
      let waiting = this.unreceived.get(receivable.destination);
      if (waiting === undefined) this.unreceived.set(receivable.destination, (waiting = new Map()));
      waiting.set(stored.hash, receivable);
    }
    for (const listener of this.listeners) listener(stored);
  }

  /** Plain JSON (bigints as strings) for the state file. */
  snapshot(): LedgerSnapshot {
    return {
      blocks: this.order.map((hash) => {
        const b = this.blocks.get(hash) as LedgerBlock;
        return { ...b, amount: b.amount.toString(), balance: b.balance.toString() };
      }),
    };
  }

  /**
   * Rebuilds from a snapshot by replaying its blocks in order. Signatures and
   * work are not checked again (they were when the blocks arrived), but every
   * hash and chain link is, so a damaged file is refused rather than served.
   */
  static restore(thresholds: Thresholds, snapshot: LedgerSnapshot): Ledger {
    const ledger = new Ledger(thresholds);
    for (const [index, b] of snapshot.blocks.entries()) {
      const block = parseBlock(b.block);
      const account = ledger.accounts.get(addressToPublicKey(block.account));
      const consistent = hashBlock(block) === b.hash && block.previous === (account?.frontier ?? ZERO_HASH) && BigInt(b.balance) === BigInt(block.balance);
      if (!consistent) throw new Error(`block ${index + 1} (${String(b.hash)}) does not fit the chain before it`);
      // The first block is genesis: it opens with the supply and receives nothing.
      if (index > 0 && (b.subtype === 'open' || b.subtype === 'receive')) {
        const source = ledger.receivables.get(block.link);
        if (source === undefined || source.received) throw new Error(`block ${index + 1} receives ${block.link}, which is not receivable`);
        ledger.markReceived(source);
      }
      ledger.insert({ ...b, block, amount: BigInt(b.amount), balance: BigInt(b.balance), successor: null });
    }
    return ledger;
  }
}

function seconds(ms: number): number {
  return Math.floor(ms / 1000);
}

export interface LedgerSnapshot {
  blocks: (Omit<LedgerBlock, 'amount' | 'balance'> & { amount: string; balance: string })[];
}
