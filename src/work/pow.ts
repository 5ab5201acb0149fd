import { blake2b } from '@noble/hashes/blake2.js';
import { NanoPayError } from '../errors.js';
import { parseThreshold } from './thresholds.js';

function bytes(hex: string, length: number, what: string): Buffer {
  if (typeof hex !== 'string' || hex.length !== length * 2 || !/^[0-9a-fA-F]+$/.test(hex)) {
    throw new NanoPayError('INVALID_HEX', `${what} must be ${length * 2} hexadecimal characters`);
  }
  return Buffer.from(hex, 'hex');
}

/**
 * The value of a work nonce for a root: blake2b-64 over the nonce as 8
 * little-endian bytes then the 32-byte root, read little-endian. The JSON
 * `work` string is the nonce written big-endian. This is the reference every
 * generated nonce is checked with.
 */
export function workValue(root: string, work: string): string {
  const input = Buffer.alloc(40);
  bytes(work, 8, 'Work').reverse().copy(input, 0);
  bytes(root, 32, 'Work root').copy(input, 8);
  const digest = Buffer.from(blake2b(input, { dkLen: 8 }));
  return digest.readBigUInt64LE(0).toString(16).padStart(16, '0');
}

export function validateWork(root: string, work: string, threshold: string): boolean {
  return BigInt(`0x${workValue(root, work)}`) >= parseThreshold(threshold);
}
