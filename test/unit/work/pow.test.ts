import { afterAll, describe, expect, it } from 'vitest';
import { addressToPublicKey } from '../../../src/nano/index.js';
import {
  DEV_THRESHOLDS,
  generateWork,
  liveWorkers,
  multiplierOf,
  shutdownWorkers,
  validateWork,
  workValue,
} from '../../../src/work/index.js';
import { vectors } from '../../helpers/vectors.js';

type Vec = Record<string, any>;

afterAll(async () => {
  await shutdownWorkers();
});

describe('work vectors', () => {
  it.each((vectors.work as Vec[]).map((v) => [v.id, v]))('%s', (_id, v: Vec) => {
    if (v.value !== undefined) expect(workValue(v.root, v.work)).toBe(v.value.toLowerCase());
    expect(validateWork(v.root, v.work, v.threshold)).toBe(v.valid);
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
    for (const call of [() => workValue('00', '0'.repeat(16)), () => workValue(root, 'xyz'), () => validateWork(root, '0'.repeat(16), 'fff')]) {
      expect(call).toThrow(expect.objectContaining({ code: 'INVALID_HEX' }));
    }
  });
});

describe('generateWork', () => {
  const root = '718CC2121C3E641059BC1C2CFC45666C99E8AE922F7A807B7D07B62C995D79E2';

  it('finds work that validates at the dev thresholds, on warm workers', async () => {
    for (const threshold of [DEV_THRESHOLDS.send, DEV_THRESHOLDS.receive, DEV_THRESHOLDS.send]) {
      const work = await generateWork(root, threshold);
      expect(work).toMatch(/^[0-9a-f]{16}$/);
      expect(validateWork(root, work, threshold)).toBe(true);
    }
    const warm = liveWorkers();
    await generateWork(root, DEV_THRESHOLDS.receive);
    expect(liveWorkers()).toBe(warm);
  });

  it('cancels every worker on abort', async () => {
    const controller = new AbortController();
    const search = generateWork(root, 'ffffffffffffffff', { signal: controller.signal, workers: 2 });
    setTimeout(() => controller.abort(), 50);
    await expect(search).rejects.toMatchObject({ code: 'CANCELLED' });
    // The same workers answer the next call: none is stuck in the cancelled search.
    const before = liveWorkers();
    expect(validateWork(root, await generateWork(root, DEV_THRESHOLDS.receive, { workers: 2 }), DEV_THRESHOLDS.receive)).toBe(true);
    expect(liveWorkers()).toBe(before);
    await shutdownWorkers();
    expect(liveWorkers()).toBe(0);
  });

  it('refuses bad input before starting workers', async () => {
    await expect(generateWork('zz', DEV_THRESHOLDS.send)).rejects.toMatchObject({ code: 'INVALID_HEX' });
    await expect(generateWork(root, 'nope')).rejects.toMatchObject({ code: 'INVALID_HEX' });
    const aborted = AbortSignal.abort();
    await expect(generateWork(root, DEV_THRESHOLDS.send, { signal: aborted })).rejects.toMatchObject({ code: 'CANCELLED' });
  });
});
