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
import { validateWork, type Thresholds } from '../work/index.js';

/** A block as the ledger keeps it. */
export interface LedgerBlock {
  hash: string;
  block: StateBlock;
  subtype: Subtype;
  account: string;
  amount: bigint;
  balance: bigint;
  height: number;
  timestamp: number;
  successor: string | null;
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
  destination: string;
  source: string;
  amount: bigint;
  received: boolean;
}

const HEX64 = /^[0-9A-Fa-f]{64}$/;

function reject(code: string, message: string): never {
  throw new NanoPayError(code, message);
}

function checkShape(input: unknown): StateBlock {
  const b = input as Record<string, unknown>;
  if (typeof b !== 'object' || b === null || Array.isArray(b)) reject('INVALID_BLOCK', 'The block must be a JSON object');
  if (b.type !== 'state') reject('INVALID_BLOCK', 'Only state blocks are accepted ("type": "state")');
  for (const field of ['account', 'previous', 'representative', 'balance', 'link', 'signature', 'work']) {
    if (typeof b[field] !== 'string') reject('INVALID_BLOCK', `The block field "${field}" must be a string`);
  }
  const s = b as Record<string, string>;
  if (!isValidAddress(s.account as string)) reject('INVALID_BLOCK', 'The block account is not a valid address');
  if (!isValidAddress(s.representative as string)) reject('INVALID_BLOCK', 'The block representative is not a valid address');
  if (!HEX64.test(s.previous as string)) reject('INVALID_BLOCK', 'The block previous must be 64 hex characters');
  if (!HEX64.test(s.link as string) && !isValidAddress(s.link as string)) reject('INVALID_BLOCK', 'The block link must be 64 hex characters');
  if (!/^\d{1,39}$/.test(s.balance as string) || BigInt(s.balance as string) > MAX_RAW) reject('INVALID_BLOCK', 'The block balance must be a decimal raw amount up to 2^128-1');
  if (!/^[0-9A-Fa-f]{128}$/.test(s.signature as string)) reject('INVALID_BLOCK', 'The block signature must be 128 hex characters');
  if (!/^[0-9A-Fa-f]{16}$/.test(s.work as string)) reject('INVALID_BLOCK', 'The block work must be 16 hex characters');
  const link = HEX64.test(s.link as string) ? (s.link as string).toUpperCase() : addressToPublicKey(s.link as string);
  return {
    type: 'state',
    account: publicKeyToAddress(addressToPublicKey(s.account as string)),
    previous: (s.previous as string).toUpperCase(),
    representative: publicKeyToAddress(addressToPublicKey(s.representative as string)),
    balance: BigInt(s.balance as string).toString(),
    link,
    signature: (s.signature as string).toUpperCase(),
    work: (s.work as string).toLowerCase(),
  };
}

export interface ProcessOptions {
  /** The subtype the client claims; it must match what the ledger computes. */
  subtype?: string;
  /** Blocks the sandbox makes itself (the faucet) carry no work. */
  skipWork?: boolean;
  now?: number;
}

/**
 * A Nano ledger that validates like a node: shape, duplicates, signature, the
 * account chain (gap, fork, account), the balance arithmetic of the subtype,
 * receivables (exists, for this account, not yet received), then work against
 * the advertised thresholds. Rejections carry their own code and message.
 */
export class Ledger {
  readonly accounts = new Map<string, AccountRecord>();
  readonly blocks = new Map<string, LedgerBlock>();
  readonly order: string[] = [];
  readonly receivables = new Map<string, Receivable>();

  constructor(readonly thresholds: Thresholds) {}

  /** The genesis account holds the whole supply, as on the real network. */
  createGenesis(genesis: { address: string; signature: (block: StateBlock) => string }, now = Date.now()): void {
    const publicKey = addressToPublicKey(genesis.address);
    const unsigned: StateBlock = { type: 'state', account: genesis.address, previous: ZERO_HASH, representative: genesis.address, balance: MAX_RAW.toString(), link: publicKey };
    const block: StateBlock = { ...unsigned, signature: genesis.signature(unsigned), work: '0'.repeat(16) };
    const hash = hashBlock(block);
    this.insert({ hash, block, subtype: 'open', account: genesis.address, amount: MAX_RAW, balance: MAX_RAW, height: 1, timestamp: Math.floor(now / 1000), successor: null });
  }

  account(address: string): AccountRecord | undefined {
    return this.accounts.get(addressToPublicKey(address));
  }

  /** Unreceived sends to `address`, oldest first. */
  pendingFor(address: string): Receivable[] {
    const key = addressToPublicKey(address);
    return [...this.receivables.values()].filter((r) => !r.received && r.destination === key);
  }

  process(input: unknown, options: ProcessOptions = {}): LedgerBlock {
    const block = checkShape(input);
    const hash = hashBlock(block);
    if (this.blocks.has(hash)) reject('BLOCK_EXISTS', `Block ${hash} is already in the ledger`);
    if (!verifyBlock(block)) reject('BLOCK_BAD_SIGNATURE', 'The block signature does not match the block and its account');

    const key = addressToPublicKey(block.account);
    const account = this.accounts.get(key);
    const isOpen = block.previous === ZERO_HASH;
    if (isOpen && account !== undefined) reject('BLOCK_FORK', `Fork: account ${block.account} is already open`);
    if (!isOpen) {
      const previous = this.blocks.get(block.previous);
      if (previous === undefined) reject('BLOCK_GAP_PREVIOUS', `The previous block ${block.previous} is not in the ledger`);
      if (previous.account !== block.account) reject('BLOCK_ACCOUNT_MISMATCH', 'The previous block belongs to another account');
      if (account?.frontier !== block.previous) {
        reject('BLOCK_FORK', `Fork: ${block.previous} already has a successor; the account frontier is ${account?.frontier}`);
      }
    }

    const before = account?.balance ?? 0n;
    const after = BigInt(block.balance);
    let subtype: Subtype;
    let amount: bigint;
    let source: Receivable | undefined;
    if (after < before) {
      subtype = 'send';
      amount = before - after;
    } else if (after > before) {
      subtype = isOpen ? 'open' : 'receive';
      amount = after - before;
      source = this.receivables.get(block.link);
      if (source === undefined) reject('BLOCK_UNRECEIVABLE', `Block ${block.link} is not a pending send`);
      if (source.destination !== key) reject('BLOCK_UNRECEIVABLE', `Block ${block.link} was not sent to ${block.account}`);
      if (source.received) reject('BLOCK_ALREADY_RECEIVED', `Block ${block.link} has already been received`);
      if (source.amount !== amount) {
        reject('BLOCK_BALANCE_MISMATCH', `The balance must rise by exactly ${source.amount} raw (the amount sent), not ${amount}`);
      }
    } else {
      if (isOpen) reject('INVALID_BLOCK', 'An open block must receive a pending send');
      if (block.link !== ZERO_HASH) reject('BLOCK_BALANCE_MISMATCH', 'The balance did not change, so the link must be zero (a change block)');
      subtype = 'change';
      amount = 0n;
    }
    const claimed = options.subtype;
    if (claimed !== undefined && claimed !== subtype && !(claimed === 'receive' && subtype === 'open')) {
      reject('INVALID_BLOCK', `The block is a ${subtype}, not a ${claimed}`);
    }
    if (!options.skipWork) {
      const threshold = subtype === 'send' || subtype === 'change' ? this.thresholds.send : this.thresholds.receive;
      if (!validateWork(workRoot(block), block.work as string, threshold)) {
        reject('BLOCK_INSUFFICIENT_WORK', `The work does not meet the ${subtype} threshold ${threshold}`);
      }
    }

    const stored: LedgerBlock = {
      hash,
      block,
      subtype,
      account: block.account,
      amount,
      balance: after,
      height: (account?.height ?? 0) + 1,
      timestamp: Math.floor((options.now ?? Date.now()) / 1000),
      successor: null,
    };
    if (source !== undefined) source.received = true;
    this.insert(stored);
    return stored;
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
      this.receivables.set(stored.hash, { hash: stored.hash, destination: stored.block.link, source: stored.account, amount: stored.amount, received: false });
    }
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

  /** Rebuilds from a snapshot by replaying its blocks in order (no re-validation: they were valid). */
  static restore(thresholds: Thresholds, snapshot: LedgerSnapshot): Ledger {
    const ledger = new Ledger(thresholds);
    for (const b of snapshot.blocks) {
      const stored: LedgerBlock = { ...b, amount: BigInt(b.amount), balance: BigInt(b.balance), successor: null };
      if (stored.subtype === 'open' || stored.subtype === 'receive') {
        const source = ledger.receivables.get(stored.block.link);
        if (source !== undefined) source.received = true;
      }
      ledger.insert(stored);
    }
    return ledger;
  }
}

export interface LedgerSnapshot {
  blocks: (Omit<LedgerBlock, 'amount' | 'balance'> & { amount: string; balance: string })[];
}
