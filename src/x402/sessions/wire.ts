import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { addressToPublicKey } from '../../nano/index.js';
import { bigintToBytes, hexToBytes } from '../../nano/hex.js';
import { verifyMessage } from '../../nano/ed25519.js';
import { canonicalJson } from '../../ops/spending/seal.js';

/**
 * The `nano-session` scheme's bytes (docs/x402-sessions.md is its spec, with
 * test vectors): what each signature covers, so a second implementation
 * signs and checks the same bytes. Every message starts with its own ASCII
 * tag and is longer than 32 bytes, so no signature over it can pass for a
 * block's (a Nano block signature covers exactly its 32-byte hash).
 */

export const SESSION_SCHEME = 'nano-session' as const;
/** Where a paywall takes session openings, top-ups and closes, under its origin. */
export const SESSIONS_PATH = '/.well-known/x402/sessions';

const TAGS = {
  open: 'nano-session/open/v1\n',
  voucher: 'nano-session/voucher/v1\n',
  close: 'nano-session/close/v1\n',
  receipt: 'nano-session/receipt/v1\n',
  /** A seller's receipt of one `exact` settlement. */
  exactReceipt: 'nano-x402/receipt/v1\n',
} as const;

const ascii = (text: string): Buffer => Buffer.from(text, 'utf8');
const hash32 = (hex: string, what: string): Uint8Array => hexToBytes(hex, 32, what);

/**
 * What the payer's Nano account key signs to open a session: the network,
 * the seller paid, the deposit block and the session key that will sign the
 * vouchers. Ed25519 with BLAKE2b-512, as Nano blocks are signed.
 */
export function openMessage(network: string, payTo: string, depositHash: string, sessionKey: string): Buffer {
  return Buffer.concat([ascii(TAGS.open), ascii(`${network}\n`), hash32(addressToPublicKey(payTo), 'payTo'), hash32(depositHash, 'Deposit block hash'), hash32(sessionKey, 'Session key')]);
}

/**
 * Whether `message` is an opening (openMessage) or a receipt
 * (receiptMessage): what an unlocked session agrees to sign with an account
 * key. Neither moves money, and neither can be 32 bytes.
 */
export function isSessionMessage(message: Uint8Array): boolean {
  const bytes = Buffer.from(message);
  const open = ascii(TAGS.open);
  for (const receipt of [ascii(TAGS.receipt), ascii(TAGS.exactReceipt)]) {
    if (bytes.subarray(0, receipt.length).equals(receipt)) return bytes.length > receipt.length && bytes[receipt.length] === 0x7b;
  }
  if (bytes.length <= open.length + 96 || !bytes.subarray(0, open.length).equals(open)) return false;
  return /^[a-z0-9-]{1,32}:[A-Za-z0-9_-]{1,64}\n$/.test(bytes.subarray(open.length, bytes.length - 96).toString('latin1'));
}

export interface Voucher {
  /** The session id: the hash of its opening deposit block (64 hex). */
  session: string;
  /** Above every counter the seller accepted before in this session. */
  counter: number;
  /** What the buyer allows the session to have cost so far, this call included: cumulative raw, a decimal string. */
  spent: string;
  /** The request it pays for (requestDigest / toolDigest), 64 hex. */
  request: string;
  /** Ed25519 (RFC 8032) by the session key over voucherMessage, 128 hex. */
  signature: string;
}

/** What the session key signs for one call. */
export function voucherMessage(v: Omit<Voucher, 'signature'>): Buffer {
  return Buffer.concat([ascii(TAGS.voucher), hash32(v.session, 'Session id'), bigintToBytes(BigInt(v.counter), 8), bigintToBytes(BigInt(v.spent), 16), hash32(v.request, 'Request digest')]);
}

/** What the session key signs to close its session early. */
export function closeMessage(session: string): Buffer {
  return Buffer.concat([ascii(TAGS.close), hash32(session, 'Session id')]);
}

/** What the seller's Nano account key signs in a receipt: its tag (by scheme), then the receipt's canonical JSON (keys sorted) without its signature. */
export function receiptMessage(receipt: object): Buffer {
  const { seller_signature: _signature, ...signed } = receipt as Record<string, unknown>;
  return Buffer.concat([ascii(signed.scheme === 'exact' ? TAGS.exactReceipt : TAGS.receipt), ascii(canonicalJson(signed))]);
}

const sha256 = (data: Uint8Array | string): Buffer => createHash('sha256').update(data).digest();

/** An HTTP request as a voucher names it: SHA-256 of METHOD LF target LF SHA-256(body), target being the path and query as sent. */
export function requestDigest(method: string, target: string, body: Uint8Array | undefined): string {
  return sha256(Buffer.concat([ascii(`${method.toUpperCase()}\n${target}\n`), sha256(body ?? new Uint8Array())])).toString('hex').toUpperCase();
}

/** A tool call (MCP) as a voucher names it: SHA-256 of "MCP" LF name LF SHA-256(canonical JSON of the arguments). */
export function toolDigest(name: string, args: unknown): string {
  return sha256(Buffer.concat([ascii(`MCP\n${name}\n`), sha256(canonicalJson(args ?? {}))])).toString('hex').toUpperCase();
}

/** The DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410): the 32 key bytes follow it. */
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
/** The DER prefix of an Ed25519 PKCS#8 private key: the 32 seed bytes follow it. */
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** Decoded session keys, by hex: the seller checks every call against the same few (import is a tenth of a check). */
const publicKeys = new Map<string, KeyObject>();

function publicKeyObject(hex: string): KeyObject {
  let key = publicKeys.get(hex);
  if (key === undefined) {
    key = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, hash32(hex, 'Session key')]), format: 'der', type: 'spki' });
    if (publicKeys.size >= 4096) publicKeys.delete(publicKeys.keys().next().value as string);
    publicKeys.set(hex, key);
  }
  return key;
}

/** A new session key pair: the seed (kept by the buyer, never sent) and the public key, 64 hex each. */
export function newSessionKey(): { seed: string; publicKey: string } {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return {
    seed: privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(PKCS8_PREFIX.length).toString('hex').toUpperCase(),
    publicKey: publicKey.export({ format: 'der', type: 'spki' }).subarray(SPKI_PREFIX.length).toString('hex').toUpperCase(),
  };
}

const privateKeys = new Map<string, KeyObject>();

/** Signs `message` with a session key's seed (Ed25519, RFC 8032: OpenSSL's, tens of microseconds). */
export function signWithSessionKey(seed: string, message: Uint8Array): string {
  let key = privateKeys.get(seed);
  if (key === undefined) {
    key = createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, hash32(seed, 'Session key seed')]), format: 'der', type: 'pkcs8' });
    if (privateKeys.size >= 256) privateKeys.delete(privateKeys.keys().next().value as string);
    privateKeys.set(seed, key);
  }
  return sign(null, message, key).toString('hex').toUpperCase();
}

/** Whether `signature` is the session key's over `message`. */
export function verifySessionSignature(sessionKey: string, message: Uint8Array, signature: string): boolean {
  if (!/^[0-9a-fA-F]{128}$/.test(signature) || !/^[0-9a-fA-F]{64}$/.test(sessionKey)) return false;
  try {
    return verify(null, message, publicKeyObject(sessionKey.toUpperCase()), Buffer.from(signature, 'hex'));
  } catch {
    return false;
  }
}

/** Whether `signature` is the Nano account `address`'s over `message` (Ed25519 with BLAKE2b-512). */
export function verifyAccountSignature(address: string, message: Uint8Array, signature: string): boolean {
  return /^[0-9a-fA-F]{128}$/.test(signature) && verifyMessage(message, signature, addressToPublicKey(address));
}
