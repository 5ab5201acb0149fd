import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { loadEngine } from '../../../src/work/engines.js';
import { addressToPublicKey } from '../../../src/nano/index.js';
import {
  DEV_THRESHOLDS,
  generateWork,
  liveWorkers,
  multiplierOf,
  shutdownWorkers,
  validateWork,
  workValue,
  type EngineName,
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

describe('kernels', () => {
  const engines: EngineName[] = ['native', 'wasm', 'js'];

  it.each(engines)('%s finds the vectors\' nonces and agrees with the reference', (name) => {
    const engine = loadEngine(name);
    // The native addon is built at install; where it could not be, the fallback is what runs.
    if (name === 'native' && engine.name !== 'native') return;
    expect(engine.name).toBe(name);
    for (const v of vectors.work as Vec[]) {
      const nonce = BigInt(`0x${v.work}`);
      const value = BigInt(`0x${workValue(v.root, v.work)}`);
      const root = Buffer.from(v.root, 'hex');
      // Searching from a few nonces before, with the exact value as threshold, lands on the vector's nonce.
      expect(engine.search(root, value, nonce - 3n, 8)).toBe(nonce);
      expect(engine.search(root, value + 1n, nonce, 1)).toBeNull();
    }
  });
});

describe('generateWork', () => {
  const root = '718CC2121C3E641059BC1C2CFC45666C99E8AE922F7A807B7D07B62C995D79E2';
  const randomRoot = (): string => randomBytes(32).toString('hex').toUpperCase();

  it.each([1, 2])('finds work that validates for random roots on %i worker(s)', async (workers) => {
    for (let i = 0; i < 4; i++) {
      const r = randomRoot();
      for (const threshold of [DEV_THRESHOLDS.send, DEV_THRESHOLDS.receive, 'fff0000000000000']) {
        const work = await generateWork(r, threshold, { workers });
        expect(work).toMatch(/^[0-9a-f]{16}$/);
        expect(validateWork(r, work, threshold)).toBe(true);
      }
    }
  });

  it('finds work for the vectors\' roots on every engine, on warm workers', async () => {
    for (const engine of ['native', 'wasm', 'js'] as EngineName[]) {
      for (const v of vectors.work as Vec[]) {
        const work = await generateWork(v.root, DEV_THRESHOLDS.send, { engine, workers: 2 });
        expect(validateWork(v.root, work, DEV_THRESHOLDS.send)).toBe(true);
      }
    }
    const warm = liveWorkers();
    await generateWork(root, DEV_THRESHOLDS.receive, { workers: 2 });
    expect(liveWorkers()).toBe(warm);
  });

  it('reports progress and keeps the event loop free while it searches', async () => {
    const controller = new AbortController();
    let ticks = 0;
    let progress = 0;
    const timer = setInterval(() => ticks++, 10);
    const search = generateWork(root, 'ffffffffffffffff', { signal: controller.signal, workers: 2, onProgress: (h) => (progress = h) });
    await new Promise((r) => setTimeout(r, 600));
    controller.abort();
    await expect(search).rejects.toMatchObject({ code: 'CANCELLED' });
    clearInterval(timer);
    expect(ticks).toBeGreaterThan(20);
    expect(progress).toBeGreaterThan(0);
  });

  it('cancel ends every worker of the search', async () => {
    await shutdownWorkers();
    expect(liveWorkers()).toBe(0);
    const controller = new AbortController();
    const search = generateWork(root, 'ffffffffffffffff', { signal: controller.signal, workers: 3 });
    await new Promise((r) => setTimeout(r, 100));
    expect(liveWorkers()).toBe(3);
    controller.abort();
    await expect(search).rejects.toMatchObject({ code: 'CANCELLED' });
    expect(liveWorkers()).toBe(0);
  });

  it('refuses bad input before starting workers', async () => {
    await expect(generateWork('zz', DEV_THRESHOLDS.send)).rejects.toMatchObject({ code: 'INVALID_HEX' });
    await expect(generateWork(root, 'nope')).rejects.toMatchObject({ code: 'INVALID_HEX' });
    const aborted = AbortSignal.abort();
    await expect(generateWork(root, DEV_THRESHOLDS.send, { signal: aborted })).rejects.toMatchObject({ code: 'CANCELLED' });
  });
});
