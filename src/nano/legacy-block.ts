import { blake2b } from '@noble/hashes/blake2.js';
import { addressToPublicKey } from './address.js';
import { bigintToBytes, hexToBytes } from './hex.js';
import { parseRaw } from './units.js';

/**
 * The blocks before state blocks (nano-node's send, receive, open and change), as nodes still serve them:
 * every ledger begins with a legacy `open` block (the genesis), and old chains hold more. nanopay never
 * makes one; it reads them, hashes them and checks them by their own rules. Field names are the node's
 * JSON; a send's `balance` is decimal raw here (the node writes it as 32 hex characters).
 */
export interface LegacySend {
  type: 'send';
  previous: string;
  destination: string;
  balance: string;
  signature?: string;
  work?: string;
}

export interface LegacyReceive {
  type: 'receive';
  previous: string;
  source: string;
  signature?: string;
  work?: string;
}

export interface LegacyOpen {
  type: 'open';
  source: string;
  representative: string;
  account: string;
  signature?: string;
  work?: string;
}

export interface LegacyChange {
  type: 'change';
  previous: string;
  representative: string;
  signature?: string;
  work?: string;
}

export type LegacyBlock = LegacySend | LegacyReceive | LegacyOpen | LegacyChange;

const hash32 = (hex: string, what: string) => hexToBytes(hex, 32, what, 'INVALID_BLOCK');
const key32 = (address: string, what: string) => hexToBytes(addressToPublicKey(address), 32, what, 'INVALID_BLOCK');

/** The fields each legacy type hashes, in order, with no preamble (nano-node's `hash (blake2b_state &)` of each). */
function hashedFields(block: LegacyBlock): Uint8Array[] {
  switch (block.type) {
    case 'send':
      return [hash32(block.previous, 'Block previous'), key32(block.destination, 'Block destination'), bigintToBytes(parseRaw(block.balance), 16)];
    case 'receive':
      return [hash32(block.previous, 'Block previous'), hash32(block.source, 'Block source')];
    case 'open':
      return [hash32(block.source, 'Block source'), key32(block.representative, 'Block representative'), key32(block.account, 'Block account')];
    case 'change':
      return [hash32(block.previous, 'Block previous'), key32(block.representative, 'Block representative')];
  }
}

export function legacyBlockHashBytes(block: LegacyBlock): Uint8Array {
  const h = blake2b.create({ dkLen: 32 });
  for (const field of hashedFields(block)) h.update(field);
  return h.digest();
}
