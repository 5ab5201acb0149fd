import { NanoPayError } from '../errors.js';

export interface Thresholds {
  send: string;
  receive: string;
}

/** Epoch-2 base thresholds of the live network: send/change and receive/open. */
export const LIVE_THRESHOLDS = { send: 'fffffff800000000', receive: 'fffffe0000000000' } as const satisfies Thresholds;

/** The node's dev-network thresholds: what the sandbox asks for by default. */
export const DEV_THRESHOLDS = { send: 'ffc0000000000000', receive: 'f000000000000000' } as const satisfies Thresholds;

const TWO_64 = 2n ** 64n;

export function parseThreshold(hex: string): bigint {
  if (typeof hex !== 'string' || !/^[0-9a-fA-F]{16}$/.test(hex)) {
    throw new NanoPayError('INVALID_HEX', 'A work threshold must be 16 hexadecimal characters');
  }
  return BigInt(`0x${hex}`);
}

/** How much harder `difficulty` is than `base`: (2^64 - base) / (2^64 - difficulty). */
export function multiplierOf(difficulty: string, base: string): number {
  return Number(TWO_64 - parseThreshold(base)) / Number(TWO_64 - parseThreshold(difficulty));
}

/** Hashes needed on average to meet a threshold, for progress and ETA display. */
export function expectedHashes(threshold: string): number {
  return Number(TWO_64) / Number(TWO_64 - parseThreshold(threshold));
}
