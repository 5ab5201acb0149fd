import { eddsa, edwards, type EdDSA, type EdwardsPoint, type EdwardsPointCons } from '@noble/curves/abstract/edwards.js';
import { mod, pow2 } from '@noble/curves/abstract/modular.js';
import { blake2b } from '@noble/hashes/blake2.js';
import { bytesToHex, hexToBytes } from './hex.js';

/** Standard ed25519 clamping; Nano changes only the hash (blake2b-512 for SHA-512). */
function clamp(bytes: Uint8Array): Uint8Array {
  bytes[0] = (bytes[0] as number) & 248;
  bytes[31] = ((bytes[31] as number) & 127) | 64;
  return bytes;
}

const P = 2n ** 255n - 19n;

/** edwards25519 (RFC 8032 §5.1), as in @noble/curves' ed25519 (which would build its own curve on import). */
const EDWARDS25519 = {
  p: P,
  n: 2n ** 252n + 27742317777372353535851937790883648493n,
  h: 8n,
  a: P - 1n,
  d: 0x52036cee2b6ffe738cc740797779e89800700a4d4141d8ab75eb4dca135978a3n,
  Gx: 0x216936d3cd6e53fec0a4e231fdd6dc5c692cc7609525a7b2c9562d608f25d51an,
  Gy: 0x6666666666666666666666666666666666666666666666666666666666666658n,
} as const;

/** x^((p-5)/8) by the addition chain of @noble/curves' ed25519 (RFC 8032 §5.1.3). */
function powP58(x: bigint): bigint {
  const x2 = (x * x) % P;
  const b2 = (x2 * x) % P;
  const b4 = (pow2(b2, 2n, P) * b2) % P;
  const b5 = (pow2(b4, 1n, P) * x) % P;
  const b10 = (pow2(b5, 5n, P) * b5) % P;
  const b20 = (pow2(b10, 10n, P) * b10) % P;
  const b40 = (pow2(b20, 20n, P) * b20) % P;
  const b80 = (pow2(b40, 40n, P) * b40) % P;
  const b160 = (pow2(b80, 80n, P) * b80) % P;
  const b240 = (pow2(b160, 80n, P) * b80) % P;
  const b250 = (pow2(b240, 10n, P) * b10) % P;
  return (pow2(b250, 2n, P) * x) % P;
}

/** √(-1) mod p. */
const SQRT_M1 = 19681161376707505956807079304988542015446066515923890162744021073123829784752n;

/**
 * √(u/v) as RFC 8032 §5.1.3 decodes a point, as @noble/curves' ed25519 does it: one
 * exponentiation by a fixed chain, where the generic curve's square root takes several
 * (decoding a key or a signature's R is on every verification).
 */
function uvRatio(u: bigint, v: bigint): { isValid: boolean; value: bigint } {
  const v3 = mod(v * v * v, P);
  const v7 = mod(v3 * v3 * v, P);
  let x = mod(u * v3 * powP58(u * v7), P);
  const vx2 = mod(v * x * x, P);
  const root2 = mod(x * SQRT_M1, P);
  const useRoot1 = vx2 === u;
  const useRoot2 = vx2 === mod(-u, P);
  const noRoot = vx2 === mod(-u * SQRT_M1, P);
  if (useRoot2 || noRoot) x = root2;
  // The non-negative (even) root.
  if ((x & 1n) === 1n) x = mod(-x, P);
  return { isValid: useRoot1 || useRoot2, value: x };
}

/**
 * Keys, signatures and verifications a process makes before the base point gets noble's
 * precomputed tables (window 6, its default). Building them costs about as much as twenty
 * signatures, each with a verification, made without them: a command makes a few, so it never
 * builds them, while a long-running process (serve, the sandbox) has them after its first dozen
 * blocks and then signs as fast as before.
 */
const USES_BEFORE_TABLES = 24;
/**
 * Uses after which the base point's tables widen to window 8 (33 rows of 128 points, about 1 MB, built in the time
 * of about sixty signatures): each signature and verification then takes a quarter fewer additions for its multiple
 * of the base point. Only a process that signs or verifies all day (a paywall, a node, an agent) gets there.
 */
const USES_BEFORE_WIDE_TABLES = 1000;

interface Curve {
  eddsa: EdDSA;
  uses: number;
}

let curve: Curve | undefined;

/**
 * A curve of our own, made on first use: commands that sign nothing do not pay for it, and its
 * base point's tables are ours to size without touching @noble/curves' shared ed25519.
 */
function nanoEd25519(): EdDSA {
  if (curve === undefined) {
    const Point = edwards(EDWARDS25519, { uvRatio });
    Point.BASE.precompute(1);
    curve = { eddsa: eddsa(Point, (message: Uint8Array) => blake2b(message, { dkLen: 64 }), { adjustScalarBytes: clamp, zip215: false }), uses: 0 };
  }
  curve.uses++;
  if (curve.uses === USES_BEFORE_TABLES) curve.eddsa.Point.BASE.precompute(6);
  else if (curve.uses === USES_BEFORE_WIDE_TABLES) curve.eddsa.Point.BASE.precompute(8);
  return curve.eddsa;
}

export function getPublicKey(privateKey: string): string {
  return bytesToHex(nanoEd25519().getPublicKey(hexToBytes(privateKey, 32, 'Private key', 'INVALID_PRIVATE_KEY')));
}

const scalarOf = (...parts: Uint8Array[]): bigint => mod(littleEndian(blake2b(Buffer.concat(parts), { dkLen: 64 })), EDWARDS25519.n);

/** What signing derives from a private key (RFC 8032 §5.1.5): the secret scalar, the nonce prefix, the public key's bytes. */
interface Expanded {
  prefix: Uint8Array;
  scalar: bigint;
  pointBytes: Uint8Array;
}

/** Something that holds a private key (an account): what signing derives from it is kept as long as it is. */
export interface KeyHolder {
  readonly privateKey: string;
}

/**
 * Expanded keys by their holder, so an account that signs again and again (a
 * payment lane) does not derive its public key (a multiple of the base point)
 * for each signature. Weak: the expansion lives exactly as long as the account
 * object holding the key itself, and goes with it (a session locked, a command ended).
 */
const expandedKeys = new WeakMap<KeyHolder, Expanded>();

function expand(privateKey: string): Expanded {
  return nanoEd25519().utils.getExtendedPublicKey(hexToBytes(privateKey, 32, 'Private key', 'INVALID_PRIVATE_KEY'));
}

function expandedOf(key: string | KeyHolder): Expanded {
  if (typeof key === 'string') return expand(key);
  let found = expandedKeys.get(key);
  if (found === undefined) expandedKeys.set(key, (found = expand(key.privateKey)));
  return found;
}

/**
 * RFC 8032 §5.1.6 signing, as noble's own sign (its constant-time multiple
 * of the base point), with the key it derives kept: the signature made is
 * remembered as verified, so the account's head, read back from a node (a
 * wallet's next payment builds on it), costs no verification.
 */
export function signMessage(message: Uint8Array, key: string | KeyHolder): string {
  const ed = nanoEd25519();
  const { prefix, scalar, pointBytes } = expandedOf(key);
  const r = scalarOf(prefix, message);
  const R = ed.Point.BASE.multiply(r).toBytes();
  const s = mod(r + scalarOf(R, pointBytes, message) * scalar, EDWARDS25519.n);
  const signature = bytesToHex(Buffer.concat([R, Buffer.from(s.toString(16).padStart(64, '0'), 'hex').reverse()]));
  remember(`${bytesToHex(pointBytes)}${signature}${bytesToHex(message)}`);
  return signature;
}

/** How many passed verifications are remembered (about 300 bytes each). */
const VERIFIED_MAX = 4096;
/**
 * Verifications that passed, by key, signature and message, oldest first: a
 * block comes back to be checked again (a paywall reads each payer's
 * frontier, the very block it verified as that payer's last payment), and a
 * verification costs milliseconds. Only the same three inputs find an entry:
 * it answers what verifying them again would.
 */
const verified = new Set<string>();

/** The window of a key's own table (43 rows of 32 points, about 350 KB): 43 additions for its multiple, where one without a table takes about 250 doublings and 50 additions. */
const KEY_WINDOW = 6;
/** Keys with a table, most recently used last. */
const TABLED_MAX = 32;
/**
 * A key gets its table on this many verifications: building it costs about
 * eight verifications (each then costs 0.3 of one without), so a key used a
 * few times (a new account's open, receive and send) never pays for one.
 */
const USES_BEFORE_TABLE = 8;
/** Keys counted towards their table. */
const COUNTED_MAX = 1024;
const tabled = new Map<string, EdwardsPoint | null>();
const uses = new Map<string, number>();

/**
 * The decoded point of a key verified against often, with its table (a
 * server sees the same payers again and again); null for a key of small
 * order (refused, as noble refuses it); undefined before, and for a key
 * that is not a point: noble's own verification then answers.
 */
function keyPoint(Point: EdwardsPointCons, hex: string, bytes: Uint8Array): EdwardsPoint | null | undefined {
  const found = tabled.get(hex);
  if (found !== undefined) {
    tabled.delete(hex);
    tabled.set(hex, found);
    return found;
  }
  const count = (uses.get(hex) ?? 0) + 1;
  if (count < USES_BEFORE_TABLE) {
    uses.set(hex, count);
    if (uses.size > COUNTED_MAX) uses.delete(uses.keys().next().value as string);
    return undefined;
  }
  uses.delete(hex);
  let point: EdwardsPoint;
  try {
    point = Point.fromBytes(bytes, false);
  } catch {
    return undefined;
  }
  const entry = point.isSmallOrder() ? null : point.precompute(KEY_WINDOW);
  tabled.set(hex, entry);
  if (tabled.size > TABLED_MAX) tabled.delete(tabled.keys().next().value as string);
  return entry;
}

const littleEndian = (bytes: Uint8Array): bigint => BigInt(`0x${Buffer.from(bytes).reverse().toString('hex') || '0'}`);

/**
 * noble's verification (RFC 8032 §5.1.7, strict: canonical R and A, S below
 * the order, A not of small order, the cofactored equation [8][S]B =
 * [8]R + [8][k]A) with A taken decoded, and its multiple from its table.
 */
function verifyWith(A: EdwardsPoint, Point: EdwardsPointCons, signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  const r = signature.subarray(0, 32);
  let R: EdwardsPoint;
  let SB: EdwardsPoint;
  try {
    R = Point.fromBytes(r, false);
    SB = Point.BASE.multiplyUnsafe(littleEndian(signature.subarray(32, 64)));
  } catch {
    return false;
  }
  const k = mod(littleEndian(blake2b(Uint8Array.from([...r, ...publicKey, ...message]), { dkLen: 64 })), EDWARDS25519.n);
  return R.add(A.multiplyUnsafe(k)).subtract(SB).clearCofactor().is0();
}

/** `remembered`: false to verify in full even what passed before or was signed here (a node's own check of each block). */
export function verifyMessage(message: Uint8Array, signature: string, publicKey: string, remembered = true): boolean {
  const key = `${publicKey.toUpperCase()}${signature.toUpperCase()}${bytesToHex(message)}`;
  if (remembered && verified.has(key)) return true;
  let valid: boolean;
  try {
    const ed = nanoEd25519();
    const sig = hexToBytes(signature, 64, 'Signature');
    const pub = hexToBytes(publicKey, 32, 'Public key');
    const A = keyPoint(ed.Point, publicKey.toUpperCase(), pub);
    valid = A === null ? false : A === undefined ? ed.verify(sig, message, pub) : verifyWith(A, ed.Point, sig, message, pub);
  } catch {
    return false;
  }
  if (valid) remember(key);
  return valid;
}

function remember(key: string): void {
  verified.add(key);
  if (verified.size > VERIFIED_MAX) verified.delete(verified.values().next().value as string);
}
