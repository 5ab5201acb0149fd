import { describe, expect, it } from 'vitest';
import { loadEngine } from '../../../src/work/engines.js';
import { addressToPublicKey } from '../../../src/nano/index.js';
import {
  DEV_THRESHOLDS,
  LIVE_THRESHOLDS,
  expectedHashes,
  multiplierOf,
  parseThreshold,
  validateWork,
  workValue,
  type EngineName,
} from '../../../src/work/index.js';
import { vectors } from '../../helpers/ledger/vectors.js';

type Vec = Record<string, any>;

describe('work vectors', () => {
  it.each((vectors.work as Vec[]).map((v) => [v.id, v]))('%s', (_id, v: Vec) => {
    if (v.value !== undefined) expect(workValue(v.root, v.work)).toBe(v.value.toLowerCase());
    expect(validateWork(v.root, v.work, v.threshold)).toBe(v.valid);
    // Hex is accepted in either case.
    expect(workValue(v.root.toLowerCase(), v.work.toUpperCase())).toBe(workValue(v.root, v.work));
    if (v.multiplier_vs_fffffff800000000 !== undefined) {
      const multiplier = multiplierOf(workValue(v.root, v.work), LIVE_THRESHOLDS.send);
      expect(multiplier).toBeCloseTo(Number(v.multiplier_vs_fffffff800000000), 12);
    }
  });

  it('live genesis work meets exactly the thresholds recorded for it', () => {
    const g = vectors.genesis as Vec;
    expect(workValue(g.account_public_key, g.block.work)).toBe(g.work_value);
    for (const [threshold, valid] of Object.entries(g.work_valid_at as Record<string, boolean>)) {
      expect(validateWork(g.account_public_key, g.block.work, threshold)).toBe(valid);
    }
  });

  it('dev genesis work', () => {
    for (const g of vectors.other_genesis as Vec[]) {
      const root = addressToPublicKey(g.block.account);
      if (g.work_value !== undefined) expect(workValue(root, g.block.work)).toBe(g.work_value);
      expect(validateWork(root, g.block.work, g.threshold_epoch1)).toBe(g.work_meets_network_epoch1_threshold);
    }
  });

  it('multiplier', () => {
    for (const m of vectors.difficulty_multiplier as Vec[]) {
      expect(Math.abs(multiplierOf(m.difficulty, m.base) - m.multiplier)).toBeLessThan(m.tolerance);
    }
  });

  it('rejects malformed hex with INVALID_HEX', () => {
    const root = '0'.repeat(64);
    const work = '0'.repeat(16);
    const calls = [
      () => workValue('00', work),
      () => workValue('0'.repeat(63), work),
      () => workValue('0'.repeat(65), work),
      () => workValue(`${'0'.repeat(63)}g`, work),
      () => workValue(root, 'xyz'),
      () => workValue(root, '0'.repeat(17)),
      () => workValue(root, `0x${'0'.repeat(14)}`),
      () => workValue(root, undefined as unknown as string),
      () => validateWork(root, work, 'fff'),
      () => validateWork(root, work, `${'f'.repeat(15)}z`),
    ];
    for (const call of calls) expect(call).toThrow(expect.objectContaining({ code: 'INVALID_HEX' }));
  });
});

describe('thresholds', () => {
  it('are the node\'s epoch-2 values', () => {
    const recorded = vectors.work_thresholds as Vec;
    expect(LIVE_THRESHOLDS).toEqual({ send: recorded.live.epoch_2_send_change, receive: recorded.live.epoch_2_receive_open_epoch });
    expect(DEV_THRESHOLDS).toEqual({ send: recorded.dev.epoch_2, receive: recorded.dev.epoch_2_receive });
  });

  it('parseThreshold takes exactly 16 hex characters in either case', () => {
    expect(parseThreshold('FFFFFFF800000000')).toBe(0xfffffff800000000n);
    expect(parseThreshold('fffffff800000000')).toBe(0xfffffff800000000n);
    for (const bad of ['', 'f'.repeat(15), 'f'.repeat(17), `0x${'f'.repeat(14)}`, ` ${'f'.repeat(15)}`, `-${'f'.repeat(15)}`]) {
      expect(() => parseThreshold(bad)).toThrow(expect.objectContaining({ code: 'INVALID_HEX' }));
    }
  });

  it('expectedHashes is 2^64 / (2^64 - threshold)', () => {
    expect(expectedHashes('ff00000000000000')).toBe(256);
    expect(expectedHashes(LIVE_THRESHOLDS.send)).toBe(2 ** 29);
    expect(expectedHashes(LIVE_THRESHOLDS.receive)).toBe(2 ** 23);
    expect(expectedHashes('0000000000000000')).toBe(1);
  });
});

describe('kernels', () => {
  const engines: EngineName[] = ['native', 'wasm', 'js'];
  // The native addon is built at install; where it could not be, its tests are reported as skipped, never passed.
  const unavailable = (name: EngineName): boolean => loadEngine(name).name !== name;
  const reason = 'the native addon was not built here (npm ci builds it with node-gyp)';

  it.for(engines)('%s finds the vectors\' nonces and agrees with the reference', (name, { skip }) => {
    if (unavailable(name)) skip(reason);
    const engine = loadEngine(name);
    expect(engine.name).toBe(name);
    for (const v of vectors.work as Vec[]) {
      const nonce = BigInt(`0x${v.work}`);
      const value = BigInt(`0x${workValue(v.root, v.work)}`);
      const root = Buffer.from(v.root, 'hex');
      // Searching from a few nonces before, with the exact value as threshold, lands on the vector's nonce.
      expect(engine.search(root, value, nonce - 3n, 8)).toMatchObject({ nonce, hashes: 4, stopped: false });
      expect(engine.search(root, value + 1n, nonce, 1).nonce).toBeNull();
    }
  });

  it.for(engines)('%s reads the stop flag inside its loop and counts the nonces it tried', (name, { skip }) => {
    if (unavailable(name)) skip(reason);
    const engine = loadEngine(name);
    expect(engine.name).toBe(name);
    const root = Buffer.alloc(32);
    const stop = new Int32Array(new SharedArrayBuffer(4));
    // No nonce meets the threshold: without a stop, the whole count is tried.
    expect(engine.search(root, 2n ** 64n - 1n, 0n, 256, stop)).toMatchObject({ nonce: null, hashes: 256, stopped: false });
    Atomics.store(stop, 0, 1);
    // A set flag is seen before the first nonce: a call of a whole batch ends at once.
    expect(engine.search(root, 2n ** 64n - 1n, 0n, engine.batch, stop)).toEqual({ nonce: null, hashes: 0, stopped: true, unseen: 0 });
  });
});
