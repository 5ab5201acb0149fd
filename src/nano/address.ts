import { blake2b } from '@noble/hashes/blake2.js';
import { NanoPayError } from '../errors.js';
import { bytesToHex, hexToBytes } from './hex.js';
import { quote } from './quote.js';

const ALPHABET = '13456789abcdefghijkmnopqrstuwxyz';
const ALPHABET_INDEX = new Map([...ALPHABET].map((c, i) => [c, i]));
const ADDRESS = /^(nano_|xrb_)([13][13456789abcdefghijkmnopqrstuwxyz]{51})([13456789abcdefghijkmnopqrstuwxyz]{8})$/;

export type AddressPrefix = 'nano_' | 'xrb_';

/**
 * Addresses decoded and keys encoded lately (each checksums with blake2b): a
 * server sees the same few accounts again and again, in every block it hashes.
 */
const REMEMBERED = 2048;
const decoded = new Map<string, string>();
const named = new Map<string, string>();

function remember(map: Map<string, string>, from: string, to: string): void {
  map.set(from, to);
  if (map.size > REMEMBERED) map.delete(map.keys().next().value as string);
}

/** Nano's base32: big-endian bit string, 5 bits a character. */
function encodeBase32(bytes: Uint8Array, leadingPadBits: number): string {
  let bits = 0n;
  for (const byte of bytes) bits = (bits << 8n) | BigInt(byte);
  const totalBits = bytes.length * 8 + leadingPadBits;
  let out = '';
  for (let shift = totalBits - 5; shift >= 0; shift -= 5) {
    out += ALPHABET[Number((bits >> BigInt(shift)) & 31n)];
  }
  return out;
}

function decodeBase32(text: string): bigint {
  let bits = 0n;
  for (const c of text) bits = (bits << 5n) | BigInt(ALPHABET_INDEX.get(c) ?? 0);
  return bits;
}

/** The checksum is blake2b-40 of the public key, byte-reversed. */
function checksum(publicKey: Uint8Array): Uint8Array {
  return blake2b(publicKey, { dkLen: 5 }).reverse();
}

export function publicKeyToAddress(publicKey: string | Uint8Array, prefix: AddressPrefix = 'nano_'): string {
  const key = typeof publicKey === 'string' ? hexToBytes(publicKey, 32, 'Public key') : publicKey;
  if (key.length !== 32) throw new NanoPayError('INVALID_HEX', 'Public key must be 32 bytes');
  const hex = bytesToHex(key);
  const found = prefix === 'nano_' ? named.get(hex) : undefined;
  if (found !== undefined) return found;
  const address = prefix + encodeBase32(key, 4) + encodeBase32(checksum(key), 0);
  if (prefix === 'nano_') remember(named, hex, address);
  return address;
}

function invalid(address: unknown, why: string): never {
  throw new NanoPayError('INVALID_ADDRESS', `Invalid Nano address ${quote(address, '(value not shown)')}: ${why}`, {
    hint: 'A Nano address starts with nano_ (or xrb_) followed by 60 characters.',
  });
}

/** Returns the 64-hex (upper case) public key of an address; INVALID_ADDRESS otherwise. */
export function addressToPublicKey(address: string): string {
  const found = decoded.get(address);
  if (found !== undefined) return found;
  const key = decodeAddress(address);
  remember(decoded, address, key);
  return key;
}

function decodeAddress(address: string): string {
  if (typeof address !== 'string') invalid(address, 'not a string');
  if (!address.startsWith('nano_') && !address.startsWith('xrb_')) invalid(address, 'must start with nano_ or xrb_');
  const body = address.slice(address.indexOf('_') + 1);
  if (body.length !== 60) invalid(address, `expected 60 characters after the prefix, got ${body.length}`);
  const match = ADDRESS.exec(address);
  if (!match) invalid(address, 'contains characters outside the Nano alphabet');
  const keyBits = decodeBase32(match[2] as string);
  const key = new Uint8Array(32);
  let v = keyBits;
  for (let i = 31; i >= 0; i--) {
    key[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  if (encodeBase32(checksum(key), 0) !== match[3]) invalid(address, 'checksum does not match');
  return bytesToHex(key);
}

export function isValidAddress(address: string): boolean {
  // Most strings asked about are not addresses (a block's link is 64 hex): told without building an error.
  if (typeof address !== 'string' || !ADDRESS.test(address)) return false;
  try {
    addressToPublicKey(address);
    return true;
  } catch {
    return false;
  }
}

/** The same account in the nano_ form. */
export function normalizeAddress(address: string): string {
  return publicKeyToAddress(addressToPublicKey(address));
}
