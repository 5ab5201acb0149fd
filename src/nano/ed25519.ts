import { eddsa, edwards, type EdDSA } from '@noble/curves/abstract/edwards.js';
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

/**
 * Keys, signatures and verifications a process makes before the base point gets noble's
 * precomputed tables (window 6, its default). Building them costs about as much as twenty
 * signatures, each with a verification, made without them: a command makes a few, so it never
 * builds them, while a long-running process (serve, the sandbox) has them after its first dozen
 * blocks and then signs as fast as before.
 */
const USES_BEFORE_TABLES = 24;

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
    const Point = edwards(EDWARDS25519);
    Point.BASE.precompute(1);
    curve = { eddsa: eddsa(Point, (message: Uint8Array) => blake2b(message, { dkLen: 64 }), { adjustScalarBytes: clamp, zip215: false }), uses: 0 };
  }
  if (++curve.uses === USES_BEFORE_TABLES) curve.eddsa.Point.BASE.precompute(6);
  return curve.eddsa;
}

export function getPublicKey(privateKey: string): string {
  return bytesToHex(nanoEd25519().getPublicKey(hexToBytes(privateKey, 32, 'Private key', 'INVALID_PRIVATE_KEY')));
}

export function signMessage(message: Uint8Array, privateKey: string): string {
  return bytesToHex(nanoEd25519().sign(message, hexToBytes(privateKey, 32, 'Private key', 'INVALID_PRIVATE_KEY')));
}

export function verifyMessage(message: Uint8Array, signature: string, publicKey: string): boolean {
  try {
    return nanoEd25519().verify(hexToBytes(signature, 64, 'Signature'), message, hexToBytes(publicKey, 32, 'Public key'));
  } catch {
    return false;
  }
}
