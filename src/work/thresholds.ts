import { NanoPayError } from '../errors.js';

export interface Thresholds {
  send: string;
  receive: string;
  /**
   * What every block of an account not yet upgraded to epoch 2 needs (and a block receiving a send made
   * before the upgrade), when the backend's network is known: a fresh dev or beta ledger's accounts are all so.
   */
  epoch1?: string;
}

/** Epoch-2 base thresholds of the live network: send/change and receive/open. */
export const LIVE_THRESHOLDS = { send: 'fffffff800000000', receive: 'fffffe0000000000' } as const satisfies Thresholds;

/** The node's dev-network thresholds: what the sandbox asks for by default. */
export const DEV_THRESHOLDS = { send: 'ffc0000000000000', receive: 'f000000000000000' } as const satisfies Thresholds;

/** A node's thresholds by the network its `version` names (nano-node's nano/lib/config.cpp), epoch 1's included. */
export const NETWORK_THRESHOLDS: Record<'live' | 'beta' | 'dev', Required<Thresholds>> = {
  live: { ...LIVE_THRESHOLDS, epoch1: 'ffffffc000000000' },
  beta: { send: 'fffff00000000000', receive: 'ffffe00000000000', epoch1: 'fffff00000000000' },
  dev: { ...DEV_THRESHOLDS, epoch1: 'fe00000000000000' },
};

/** The harder of two thresholds. */
export function harderThreshold(a: string, b: string): string {
  return parseThreshold(b) > parseThreshold(a) ? b : a;
}

/**
 * What the blocks of an account at `epoch` (a node's account_version) need: below epoch 2, the epoch-1
 * threshold for every subtype (nano-node's work_thresholds by block details). Unknown epoch: as given.
 */
export function thresholdsAtEpoch(thresholds: Thresholds, epoch: number | undefined): Thresholds {
  if (epoch === undefined || epoch >= 2 || thresholds.epoch1 === undefined) return thresholds;
  return { ...thresholds, send: harderThreshold(thresholds.send, thresholds.epoch1), receive: harderThreshold(thresholds.receive, thresholds.epoch1) };
}

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
