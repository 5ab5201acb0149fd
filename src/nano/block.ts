import { blake2b } from '@noble/hashes/blake2.js';
import { NanoPayError } from '../errors.js';
import { addressToPublicKey, isValidAddress, publicKeyToAddress } from './address.js';
import { signMessage, verifyMessage, type KeyHolder } from './ed25519.js';
import { assertHex, bigintToBytes, bytesToHex, hexToBytes } from './hex.js';
import { legacyBlockHashBytes, type LegacyBlock } from './legacy-block.js';
import { MAX_RAW, parseRaw } from './units.js';

/** A state block in the node's JSON field names. `balance` is decimal raw. */
export interface StateBlock {
  type: 'state';
  account: string;
  previous: string;
  representative: string;
  balance: string;
  link: string;
  signature?: string;
  work?: string;
}

export type Subtype = 'open' | 'receive' | 'send' | 'change';

/** Any block a node serves: a state block, or one of the legacy types every ledger begins with. */
export type LedgerBlock = StateBlock | LegacyBlock;

export function isStateBlock(block: LedgerBlock): block is StateBlock {
  return block.type === 'state';
}

export const ZERO_HASH = '0'.repeat(64);

/** Representative for new accounts, the one the published toolset uses. */
export const DEFAULT_REPRESENTATIVE = 'nano_37imps4zk1dfahkqweqa91xpysacb7scqxf3jqhktepeofcxqnpx531b3mnt';

/** State blocks hash behind a 32-byte preamble whose last byte is 6 (the state block type). */
const PREAMBLE = bigintToBytes(6n, 32);

/** A link is 64 hex, or an address standing for its public key. */
function linkBytes(link: string): Uint8Array {
  // Only a link with an address prefix is tried as one: a refused address is an exception, and hashes come by the thousand.
  const hex = /^(nano|xrb)_/.test(link) && isValidAddress(link) ? addressToPublicKey(link) : link;
  return hexToBytes(hex, 32, 'Block link', 'INVALID_BLOCK');
}

function blockHashBytes(block: LedgerBlock): Uint8Array {
  if (!isStateBlock(block)) return legacyBlockHashBytes(block);
  const h = blake2b.create({ dkLen: 32 });
  h.update(PREAMBLE);
  h.update(hexToBytes(addressToPublicKey(block.account), 32, 'Block account'));
  h.update(hexToBytes(block.previous, 32, 'Block previous', 'INVALID_BLOCK'));
  h.update(hexToBytes(addressToPublicKey(block.representative), 32, 'Block representative'));
  h.update(bigintToBytes(parseRaw(block.balance), 16));
  h.update(linkBytes(block.link));
  return h.digest();
}

export function hashBlock(block: LedgerBlock): string {
  return bytesToHex(blockHashBytes(block));
}

export function signBlock(block: StateBlock, key: string | KeyHolder): string {
  return signMessage(blockHashBytes(block), key);
}

/** Signs a block by its hash alone (64 hex): what a signer that never sees the block, such as an unlocked session, signs. */
export function signBlockHash(hash: string, key: string | KeyHolder): string {
  return signMessage(hexToBytes(hash, 32, 'Block hash', 'INVALID_BLOCK'), key);
}

/** Verifies `signature` (or the block's own) against the block account's key. */
export function verifyBlock(block: StateBlock, signature: string | undefined = block.signature, options: { remembered?: boolean } = {}): boolean {
  if (signature === undefined) return false;
  try {
    return verifyMessage(blockHashBytes(block), signature, addressToPublicKey(block.account), options.remembered ?? true);
  } catch {
    return false;
  }
}

/**
 * Whether `signature` (or the block's own) is `account`'s over the block's hash: a legacy block (but an open)
 * does not name its account, so the caller says whose chain it is on.
 */
export function signedByAccount(block: LedgerBlock, account: string, signature: string | undefined = block.signature): boolean {
  if (signature === undefined) return false;
  try {
    return verifyMessage(blockHashBytes(block), signature, addressToPublicKey(account), true);
  } catch {
    return false;
  }
}

/** The root proof of work is made for: previous, or the account key for a first block. */
export function workRoot(block: Pick<StateBlock, 'account' | 'previous'>): string {
  const previous = assertHex(block.previous, 32, 'Block previous', 'INVALID_BLOCK').toUpperCase();
  return previous === ZERO_HASH ? addressToPublicKey(block.account) : previous;
}

export function linkAsAccount(link: string): string {
  return publicKeyToAddress(linkBytes(link));
}

/** What block builders need to know about an account: its ledger head. */
export interface AccountState {
  address: string;
  /** Hash of the head block; null for an account that has no block yet. */
  frontier: string | null;
  balance: bigint;
  representative: string;
}

function nextBlock(state: AccountState, balance: bigint, link: string, representative = state.representative): StateBlock {
  return {
    type: 'state',
    account: state.address,
    previous: state.frontier === null ? ZERO_HASH : assertHex(state.frontier, 32, 'Frontier').toUpperCase(),
    representative,
    balance: balance.toString(),
    link,
  };
}

function positive(amount: bigint): bigint {
  if (amount <= 0n) throw new NanoPayError('INVALID_NUMBER_FORMAT', 'Amount must be greater than zero');
  return amount;
}

/** An unsigned send of `amount` raw to `to`; refuses more than the balance. */
export function buildSendBlock(state: AccountState, send: { to: string; amount: bigint }): StateBlock {
  const amount = positive(send.amount);
  if (state.frontier === null || amount > state.balance) {
    throw new NanoPayError('INSUFFICIENT_FUNDS', `Insufficient funds: balance is ${state.balance} raw, send needs ${amount} raw`);
  }
  return nextBlock(state, state.balance - amount, addressToPublicKey(send.to));
}

/** An unsigned receive of a pending send; an open block when the account has none yet. */
export function buildReceiveBlock(state: AccountState, receive: { sourceHash: string; amount: bigint }): StateBlock {
  const balance = state.balance + positive(receive.amount);
  if (balance > MAX_RAW) throw new NanoPayError('AMOUNT_TOO_LARGE', 'Balance would exceed 2^128-1 raw');
  return nextBlock(state, balance, assertHex(receive.sourceHash, 32, 'Source hash').toUpperCase());
}

export function buildChangeBlock(state: AccountState, change: { representative: string }): StateBlock {
  if (state.frontier === null) throw new NanoPayError('ACCOUNT_NOT_FOUND', 'An account must be opened before changing its representative');
  addressToPublicKey(change.representative);
  return nextBlock(state, state.balance, ZERO_HASH, change.representative);
}
