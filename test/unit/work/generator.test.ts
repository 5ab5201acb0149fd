import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { availableParallelism } from 'node:os';
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  DEV_THRESHOLDS,
  generateWork,
  idleWorkers,
  liveWorkers,
  shutdownWorkers,
  validateWork,
  type EngineName,
} from '../../../src/work/index.js';
import { vectors } from '../../helpers/ledger/vectors.js';

type Vec = Record<string, any>;

/** Every search thread the pool starts, so a test can make one die. */
const threads = vi.hoisted(() => [] as import('node:worker_threads').Worker[]);
vi.mock('node:worker_threads', async (original) => {
  const actual = await original<typeof import('node:worker_threads')>();
  class Recorded extends actual.Worker {
    constructor(...args: ConstructorParameters<typeof actual.Worker>) {
      super(...args);
      threads.push(this);
    }
  }
  return { ...actual, Worker: Recorded };
});

/** What the engines of the calling thread answer instead of searching (undefined: they search), to steer its short searches. */
const here = vi.hoisted(() => ({ nonce: undefined as bigint | null | undefined }));
vi.mock('../../../src/work/engines.js', async (original) => {
  const actual = await original<typeof import('../../../src/work/engines.js')>();
  return {
    ...actual,
    loadEngine: (preferred?: string) => {
      const engine = actual.loadEngine(preferred);
      return {
        ...engine,
        search: (...args: Parameters<typeof engine.search>) =>
          here.nonce === undefined ? engine.search(...args) : { nonce: here.nonce, hashes: 1, stopped: false, unseen: 1 },
      };
    },
  };
});

const root = '718CC2121C3E641059BC1C2CFC45666C99E8AE922F7A807B7D07B62C995D79E2';
/** No nonce can reach it: a search for it runs until it is cancelled. */
const IMPOSSIBLE = 'ffffffffffffffff';
const randomRoot = (): string => randomBytes(32).toString('hex').toUpperCase();
/** How long vi.waitFor may poll: a guard against a hang on a busy machine, not a measurement. */
const SETTLE = { timeout: 10_000 };

/** Starts a search that never ends and resolves once its workers are really hashing. */
async function runningSearch(workers: number): Promise<{ search: Promise<string>; cancel: () => void }> {
  const controller = new AbortController();
  let search!: Promise<string>;
  // Progress comes back over the event loop, so seeing it also shows the loop is not blocked.
  await new Promise<void>((started) => {
    search = generateWork(root, IMPOSSIBLE, { signal: controller.signal, workers, onProgress: () => started() });
    search.catch(() => started());
  });
  return { search, cancel: () => controller.abort() };
}

/** Waits until the workers of earlier searches have stopped and gone back to the pool, then ends them. */
async function drain(): Promise<void> {
  await vi.waitFor(() => expect(idleWorkers()).toBe(liveWorkers()), SETTLE);
  await shutdownWorkers();
}

// Each test counts workers from an empty pool.
beforeEach(async () => {
  here.nonce = undefined;
  await drain();
});
afterAll(drain);

describe('generateWork', () => {
  it.each([1, 2])('finds work that validates for random roots at the dev thresholds on %i worker(s)', async (workers) => {
    for (let i = 0; i < 4; i++) {
      const r = randomRoot();
      for (const threshold of [DEV_THRESHOLDS.send, DEV_THRESHOLDS.receive]) {
        const work = await generateWork(r, threshold, { workers });
        expect(work).toMatch(/^[0-9a-f]{16}$/);
        expect(validateWork(r, work, threshold)).toBe(true);
      }
    }
  });

  it('finds work for the vectors\' roots on every engine, reusing warm workers', async () => {
    for (const engine of ['native', 'wasm', 'js'] as EngineName[]) {
      for (const v of vectors.work as Vec[]) {
        const work = await generateWork(v.root.toLowerCase(), DEV_THRESHOLDS.send, { engine, workers: 2 });
        expect(validateWork(v.root, work, DEV_THRESHOLDS.send)).toBe(true);
      }
    }
    await vi.waitFor(() => expect(idleWorkers()).toBe(liveWorkers()), SETTLE);
    const warm = liveWorkers();
    await generateWork(root, DEV_THRESHOLDS.receive, { engine: 'js', workers: 2 });
    expect(liveWorkers()).toBe(warm);
  });

  it('the first nonce found stops the other workers, which wait idle in the pool', async () => {
    const work = await generateWork(root, DEV_THRESHOLDS.send, { workers: 3 });
    expect(validateWork(root, work, DEV_THRESHOLDS.send)).toBe(true);
    // Every worker answers "stopped" (or the nonce) and goes back to the pool: none keeps hashing.
    await vi.waitFor(() => expect(idleWorkers()).toBe(3), SETTLE);
    expect(liveWorkers()).toBe(3);
    await shutdownWorkers();
    expect(liveWorkers()).toBe(0);
  });

  it.each([1, 2, 3])('many searches in a row, on every engine, leave exactly %i worker(s) alive', async (workers) => {
    const engines: EngineName[] = ['native', 'wasm', 'js'];
    for (let i = 0; i < 24; i++) {
      const r = randomRoot();
      // The easy dev receive threshold: the losing workers are still mid-batch when the next search starts.
      const work = await generateWork(r, DEV_THRESHOLDS.receive, { workers, engine: engines[i % engines.length] });
      expect(validateWork(r, work, DEV_THRESHOLDS.receive)).toBe(true);
      expect(liveWorkers()).toBe(workers);
    }
  });

  // The kernels read the flag before every 4096 nonces (the JS one every 64); a batch used to be 2^20.
  it.each([
    ['native', 'fffff00000000000', 4096],
    ['wasm', 'fffff00000000000', 4096],
    ['js', 'fff0000000000000', 64],
  ] as [EngineName, string, number][])('after an answer, every other %s worker (threshold %s) stops within %i nonces of the stop', async (engine, threshold, bound) => {
    const workers = 3;
    const searches = 4;
    const unseen: number[] = [];
    for (let i = 0; i < searches; i++) {
      const r = randomRoot();
      const work = await generateWork(r, threshold, { workers, engine, onWorkerStopped: (n) => unseen.push(n) });
      expect(validateWork(r, work, threshold)).toBe(true);
    }
    await vi.waitFor(() => expect(unseen).toHaveLength(searches * (workers - 1)), SETTLE);
    for (const n of unseen) expect(n).toBeLessThanOrEqual(bound);
  });

  it('reports progress while the event loop stays free', async () => {
    const { search, cancel } = await runningSearch(2);
    // Timers still fire while the search runs.
    for (let i = 0; i < 3; i++) await new Promise((r) => setTimeout(r, 1));
    cancel();
    await expect(search).rejects.toMatchObject({ code: 'CANCELLED' });
  });

  it('cancel rejects with CANCELLED and ends every worker of the search', async () => {
    const { search, cancel } = await runningSearch(3);
    expect(liveWorkers()).toBe(3);
    cancel();
    await expect(search).rejects.toMatchObject({ code: 'CANCELLED' });
    expect(liveWorkers()).toBe(0);
    expect(idleWorkers()).toBe(0);
  });

  it('cancel while the workers are still starting ends them too', async () => {
    const controller = new AbortController();
    const search = generateWork(root, IMPOSSIBLE, { signal: controller.signal, workers: 2 });
    controller.abort();
    await expect(search).rejects.toMatchObject({ code: 'CANCELLED' });
    expect(liveWorkers()).toBe(0);
  });

  it('a search started while another is being cancelled gets workers of its own and finishes', async () => {
    const { search: cancelled, cancel } = await runningSearch(2);
    cancel();
    const next = generateWork(root, DEV_THRESHOLDS.send, { workers: 2 });
    await expect(cancelled).rejects.toMatchObject({ code: 'CANCELLED' });
    expect(validateWork(root, await next, DEV_THRESHOLDS.send)).toBe(true);
    // Only the second search's workers remain, idle.
    await vi.waitFor(() => expect(idleWorkers()).toBe(2), SETTLE);
    expect(liveWorkers()).toBe(2);
  });

  it('a worker that dies mid-search fails the search; the others stop and stay in the pool', async () => {
    const { search } = await runningSearch(2);
    const [dying] = threads.slice(-2);
    await dying?.terminate();
    await expect(search).rejects.toMatchObject({ code: 'INTERNAL_ERROR', message: expect.stringMatching(/worker stopped/) });
    await vi.waitFor(() => expect(idleWorkers()).toBe(1), SETTLE);
    expect(liveWorkers()).toBe(1);
    // The pool starts a thread in place of the dead one.
    const work = await generateWork(root, DEV_THRESHOLDS.send, { workers: 2 });
    expect(validateWork(root, work, DEV_THRESHOLDS.send)).toBe(true);
    expect(liveWorkers()).toBe(2);
  });

  it('refuses bad input before starting workers', async () => {
    await expect(generateWork('zz', DEV_THRESHOLDS.send)).rejects.toMatchObject({ code: 'INVALID_HEX' });
    await expect(generateWork(`${root.slice(1)}G`, DEV_THRESHOLDS.send)).rejects.toMatchObject({ code: 'INVALID_HEX' });
    await expect(generateWork(root, 'nope')).rejects.toMatchObject({ code: 'INVALID_HEX' });
    // The threshold has no default: leaving it out is an error, not the live or an easier value.
    await expect(generateWork(root, undefined as unknown as string)).rejects.toMatchObject({ code: 'INVALID_HEX' });
    for (const workers of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      await expect(generateWork(root, DEV_THRESHOLDS.send, { workers })).rejects.toMatchObject({ code: 'USAGE' });
    }
    await expect(generateWork(root, DEV_THRESHOLDS.send, { signal: AbortSignal.abort() })).rejects.toMatchObject({ code: 'CANCELLED' });
    expect(liveWorkers()).toBe(0);
  });

  it('idle warm workers do not keep a process alive', () => {
    // The built module, as a user's script would load it; no shutdownWorkers() call.
    const entry = new URL('../../../dist/work/index.js', import.meta.url).href;
    const script = `const { generateWork } = await import(${JSON.stringify(entry)});
console.log(await generateWork(${JSON.stringify(root)}, ${JSON.stringify(DEV_THRESHOLDS.send)}, { workers: 2 }));`;
    // The timeout only guards against a hang; no assertion is made on how long it takes.
    const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: fileURLToPath(new URL('../../..', import.meta.url)),
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(validateWork(root, result.stdout.trim(), DEV_THRESHOLDS.send)).toBe(true);
  });
});

describe('a search expected to be short, with no worker count asked', () => {
  it('runs on the calling thread on every engine: no worker starts', async () => {
    const started = threads.length;
    for (const engine of ['native', 'wasm', 'js'] as EngineName[]) {
      const r = randomRoot();
      const work = await generateWork(r, DEV_THRESHOLDS.receive, { engine });
      expect(validateWork(r, work, DEV_THRESHOLDS.receive)).toBe(true);
    }
    // The dev send threshold (1024 hashes on average) is short for the native and WASM kernels too.
    for (const engine of ['native', 'wasm'] as EngineName[]) {
      const work = await generateWork(root, DEV_THRESHOLDS.send, { engine });
      expect(validateWork(root, work, DEV_THRESHOLDS.send)).toBe(true);
    }
    expect(threads.length).toBe(started);
    expect(liveWorkers()).toBe(0);
  });

  it('goes to the workers when it is long for the kernel: the dev send threshold on the JS one', async () => {
    const work = await generateWork(root, DEV_THRESHOLDS.send, { engine: 'js' });
    expect(validateWork(root, work, DEV_THRESHOLDS.send)).toBe(true);
    expect(liveWorkers()).toBe(availableParallelism());
  });

  it('hands over to the workers when its budget runs out', async () => {
    here.nonce = null;
    const work = await generateWork(root, DEV_THRESHOLDS.send);
    expect(validateWork(root, work, DEV_THRESHOLDS.send)).toBe(true);
    expect(liveWorkers()).toBe(availableParallelism());
  });

  it('fails with INTERNAL_ERROR when the kernel answers a nonce that does not validate', async () => {
    here.nonce = 0n;
    expect(validateWork(root, '0000000000000000', DEV_THRESHOLDS.send)).toBe(false);
    await expect(generateWork(root, DEV_THRESHOLDS.send)).rejects.toMatchObject({ code: 'INTERNAL_ERROR', message: expect.stringMatching(/invalid work 0000000000000000/) });
    expect(liveWorkers()).toBe(0);
  });
});

describe('a search expected to be long, with no worker count asked', () => {
  it('runs on one worker per core, the event loop free', async () => {
    const controller = new AbortController();
    let search!: Promise<string>;
    await new Promise<void>((progressed) => {
      search = generateWork(root, IMPOSSIBLE, { signal: controller.signal, onProgress: () => progressed() });
      search.catch(() => progressed());
    });
    expect(liveWorkers()).toBe(availableParallelism());
    controller.abort();
    await expect(search).rejects.toMatchObject({ code: 'CANCELLED' });
  });
});
