import { NanoPayError } from '../errors.js';

const HEX = /^[0-9a-fA-F]*$/;

/** Checks a hex string of an exact byte length; `what` names it in the error. */
export function assertHex(hex: string, bytes: number, what: string, code = 'INVALID_HEX'): string {
  if (typeof hex !== 'string' || hex.length !== bytes * 2 || !HEX.test(hex)) {
    throw new NanoPayError(code, `${what} must be ${bytes * 2} hexadecimal characters`);
  }
  return hex;
}

export function hexToBytes(hex: string, bytes: number, what: string, code = 'INVALID_HEX'): Uint8Array {
  assertHex(hex, bytes, what, code);
  return Uint8Array.from(Buffer.from(hex, 'hex'));
}

export function bytesToHex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex').toUpperCase();
}

/** Big-endian unsigned integer of `bytes` length. */
export function bigintToBytes(value: bigint, bytes: number): Uint8Array {
  const out = new Uint8Array(bytes);
  let v = value;
  for (let i = bytes - 1; i >= 0; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}

/** A 32-byte hash or key in upper-case hex. */
export function parseHash(hex: string, what: string): string {
  return assertHex(typeof hex === 'string' ? hex.trim() : hex, 32, what).toUpperCase();
}
