import { ed25519 } from '@noble/curves/ed25519.js';
import { eddsa } from '@noble/curves/abstract/edwards.js';
import { blake2b } from '@noble/hashes/blake2.js';
import { bytesToHex, hexToBytes } from './hex.js';

/** Standard ed25519 clamping; Nano changes only the hash (blake2b-512 for SHA-512). */
function clamp(bytes: Uint8Array): Uint8Array {
  bytes[0] = (bytes[0] as number) & 248;
  bytes[31] = ((bytes[31] as number) & 127) | 64;
  return bytes;
}

const nanoEd25519 = eddsa(ed25519.Point, (message: Uint8Array) => blake2b(message, { dkLen: 64 }), {
  adjustScalarBytes: clamp,
  zip215: false,
});

export function getPublicKey(privateKey: string): string {
  return bytesToHex(nanoEd25519.getPublicKey(hexToBytes(privateKey, 32, 'Private key', 'INVALID_PRIVATE_KEY')));
}

export function signMessage(message: Uint8Array, privateKey: string): string {
  return bytesToHex(nanoEd25519.sign(message, hexToBytes(privateKey, 32, 'Private key', 'INVALID_PRIVATE_KEY')));
}

export function verifyMessage(message: Uint8Array, signature: string, publicKey: string): boolean {
  try {
    return nanoEd25519.verify(hexToBytes(signature, 64, 'Signature'), message, hexToBytes(publicKey, 32, 'Public key'));
  } catch {
    return false;
  }
}
