import { createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { blake2b } from '@noble/hashes/blake2.js';
import { entropyToMnemonic, generateMnemonic as bip39Generate, mnemonicToEntropy, validateMnemonic } from '@scure/bip39';
import { wordlist } from '@scure/bip39/wordlists/english.js';
import { NanoPayError } from '../errors.js';
import { publicKeyToAddress } from './address.js';
import { getPublicKey } from './ed25519.js';
import { assertHex, bytesToHex, hexToBytes } from './hex.js';

export interface Account {
  privateKey: string;
  publicKey: string;
  address: string;
}

/**
 * What an account can be derived from. A 64-hex seed uses the node's derivation,
 * a 128-hex seed BIP39/SLIP-0010 (m/44'/165'/index'); a mnemonic is BIP39 unless
 * `legacy` says it encodes a 64-hex seed, as some mobile wallets show it.
 */
export type AccountSource =
  | { seed: string; index?: number }
  | { mnemonic: string; passphrase?: string; legacy?: boolean; index?: number }
  | { privateKey: string };

const HARDENED = 0x80000000;

function checkIndex(index: number, max: number): number {
  if (!Number.isInteger(index) || index < 0 || index > max) {
    throw new NanoPayError('INVALID_SEED', `Account index must be an integer from 0 to ${max}`);
  }
  return index;
}

/** The node's derivation: blake2b-256(seed || index as 4 big-endian bytes). */
function legacyPrivateKey(seed: Uint8Array, index: number): string {
  const input = new Uint8Array(36);
  input.set(seed);
  new DataView(input.buffer).setUint32(32, checkIndex(index, 0xffffffff));
  return bytesToHex(blake2b(input, { dkLen: 32 }));
}

/** SLIP-0010 ed25519 along m/44'/165'/index' (all hardened, as ed25519 requires). */
function bip44PrivateKey(bip39Seed: Uint8Array, index: number): string {
  let node = createHmac('sha512', 'ed25519 seed').update(bip39Seed).digest();
  for (const segment of [44, 165, checkIndex(index, HARDENED - 1)]) {
    const data = Buffer.alloc(37);
    node.copy(data, 1, 0, 32);
    data.writeUInt32BE(segment + HARDENED, 33);
    node = createHmac('sha512', node.subarray(32)).update(data).digest();
  }
  return bytesToHex(node.subarray(0, 32));
}

/**
 * BIP39's seed: PBKDF2-HMAC-SHA512, 2048 rounds, of the NFKD mnemonic salted with "mnemonic" and the NFKD
 * passphrase. Node's native PBKDF2 takes about 2 ms where the JavaScript one takes 60 ms or more, and every
 * command that signs for a mnemonic wallet derives.
 */
function bip39Seed(mnemonic: string, passphrase: string): Uint8Array {
  return pbkdf2Sync(mnemonic.normalize('NFKD'), `mnemonic${passphrase}`.normalize('NFKD'), 2048, 64, 'sha512');
}

function normalizeMnemonic(mnemonic: string): string {
  return mnemonic.normalize('NFKD').trim().toLowerCase().split(/\s+/).join(' ');
}

function checkMnemonic(mnemonic: string, wordCounts: number[]): string {
  const words = normalizeMnemonic(mnemonic).split(' ');
  if (!wordCounts.includes(words.length)) {
    throw new NanoPayError('INVALID_MNEMONIC', `Mnemonic must have ${wordCounts.join(' or ')} words, got ${words.length}`);
  }
  const unknown = words.filter((w) => !wordlist.includes(w));
  if (unknown.length > 0) {
    throw new NanoPayError('INVALID_MNEMONIC', `Mnemonic has ${unknown.length} word(s) not in the BIP39 English list`, {
      hint: 'Check the spelling of each word.',
    });
  }
  const phrase = words.join(' ');
  if (!validateMnemonic(phrase, wordlist)) {
    throw new NanoPayError('INVALID_MNEMONIC', 'Mnemonic checksum does not match: a word is wrong or out of order');
  }
  return phrase;
}

function fromPrivateKey(privateKey: string): Account {
  assertHex(privateKey, 32, 'Private key', 'INVALID_PRIVATE_KEY');
  const publicKey = getPublicKey(privateKey);
  return { privateKey: privateKey.toUpperCase(), publicKey, address: publicKeyToAddress(publicKey) };
}

export function deriveAccount(source: AccountSource): Account {
  if ('privateKey' in source) return fromPrivateKey(source.privateKey);
  const index = source.index ?? 0;
  if ('seed' in source) {
    const { seed } = source;
    if (typeof seed === 'string' && seed.length === 64) {
      return fromPrivateKey(legacyPrivateKey(hexToBytes(seed, 32, 'Seed', 'INVALID_SEED'), index));
    }
    if (typeof seed === 'string' && seed.length === 128) {
      return fromPrivateKey(bip44PrivateKey(hexToBytes(seed, 64, 'Seed', 'INVALID_SEED'), index));
    }
    throw new NanoPayError('INVALID_SEED', 'Seed must be 64 hex characters (Nano seed) or 128 (BIP39 seed)');
  }
  if (source.legacy) {
    const entropy = mnemonicToEntropy(checkMnemonic(source.mnemonic, [24]), wordlist);
    return fromPrivateKey(legacyPrivateKey(entropy, index));
  }
  return fromPrivateKey(bip44PrivateKey(bip39Seed(checkMnemonic(source.mnemonic, [12, 24]), source.passphrase ?? ''), index));
}

/** A new random 64-hex Nano seed (node derivation). */
export function generateSeed(): string {
  return bytesToHex(randomBytes(32));
}

/** A new BIP39 mnemonic: 24 words (256-bit) by default, or 12. */
export function generateMnemonic(words: 12 | 24 = 24): string {
  return bip39Generate(wordlist, words === 24 ? 256 : 128);
}

/** The 24-word form of a 64-hex seed, as legacy mobile wallets show it. */
export function seedToLegacyMnemonic(seed: string): string {
  return entropyToMnemonic(hexToBytes(seed, 32, 'Seed', 'INVALID_SEED'), wordlist);
}
