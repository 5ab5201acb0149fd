import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { NanoPayError } from '../errors.js';
import { loadEngine, type Engine, type EngineName } from './engines.js';
import { acquire, discard, type SearchWorker } from './pool.js';
import type { SearchJob } from './pow-worker.js';
import { validateWork } from './pow.js';
import { expectedHashes, parseThreshold } from './thresholds.js';

export interface GenerateOptions {
  signal?: AbortSignal;
  /** Worker threads (default: all cores; a search expected to be short runs on this thread, see searchHere). */
  workers?: number;
  /** Force an engine, or one native kernel as `native:KERNEL` (default: NANOPAY_POW_ENGINE, else the fastest that loads). */
  engine?: EngineName | `native:${string}`;
  /**
   * The native kernel for a search on `threads` worker threads, as measured on this machine (kernel-choice.ts);
   * undefined leaves the one the CPU's flags suggest. Asked only for a search that goes to the workers.
   */
  kernel?: (threads: number) => string | undefined;
  /** Hashes tried so far, reported a few times a second. */
  onProgress?: (hashes: number) => void;
  /**
   * Called for each worker whose answer is not the one returned, once it has stopped (possibly
   * after the search settled), with the nonces it tried after it last saw the stop flag clear: a
   * bound on the work it did after the stop.
   */
  onWorkerStopped?: (unseen: number) => void;
}

let nextJob = 1;

/** Engines loaded on this thread, by the name asked for. */
const engines = new Map<string, Engine>();

/**
 * An engine's batch is a fraction of a second of one core (engines.ts). A search expected to take
 * under 1/256 of that (some hundred microseconds with the native kernel, the dev thresholds the
 * sandbox asks for) costs less than starting a worker thread, so it runs here; it gives up after
 * 1/16 of a batch, which it misses with odds of about e^-16, and the workers take over.
 */
const HERE_EXPECTED_SHARE = 256;
const HERE_BUDGET_SHARE = 16;

/** A short search on the calling thread (it blocks for a few milliseconds at most): the nonce, or undefined when the budget ran out. */
function searchHere(root: string, threshold: string, engineName: string): string | undefined {
  let engine = engines.get(engineName);
  if (engine === undefined) {
    engine = loadEngine(engineName);
    engines.set(engineName, engine);
  }
  if (expectedHashes(threshold) > engine.batch / HERE_EXPECTED_SHARE) return undefined;
  const start = randomBytes(8).readBigUInt64LE(0);
  const { nonce } = engine.search(Buffer.from(root, 'hex'), parseThreshold(threshold), start, engine.batch / HERE_BUDGET_SHARE);
  if (nonce === null) return undefined;
  const work = nonce.toString(16).padStart(16, '0');
  // Never trust the searcher: check with the reference implementation.
  if (!validateWork(root, work, threshold)) throw new NanoPayError('INTERNAL_ERROR', `The ${engine.name} kernel returned invalid work ${work}`);
  return work;
}

/** The kernel `generateWork` uses on this machine. */
export function workEngine(preferred = process.env.NANOPAY_POW_ENGINE): EngineName {
  return loadEngine(preferred).name;
}

function checkRoot(root: string): string {
  if (typeof root !== 'string' || !/^[0-9a-fA-F]{64}$/.test(root)) {
    throw new NanoPayError('INVALID_HEX', 'A work root must be 64 hexadecimal characters');
  }
  return root.toUpperCase();
}

const cancelled = (): NanoPayError => new NanoPayError('CANCELLED', 'Proof of work cancelled');

/**
 * Finds a nonce for `root` that meets `threshold`. Unless `workers` is given, a
 * search expected to be short runs on this thread (searchHere); any other runs on
 * worker threads of the pool (the event loop stays free; concurrent searches
 * take turns). Worker i searches
 * its own range from base + i·2^60; the worker that finds a nonce sets the
 * shared stop flag, which the others' kernels read every few thousand nonces;
 * `signal` terminates them all.
 */
export async function generateWork(root: string, threshold: string, opts: GenerateOptions = {}): Promise<string> {
  const checkedRoot = checkRoot(root);
  parseThreshold(threshold);
  // NaN or 0 would start no worker at all, and the search would never end.
  if (opts.workers !== undefined && (!Number.isSafeInteger(opts.workers) || opts.workers < 1)) {
    throw new NanoPayError('USAGE', `The number of work threads must be a whole number of at least 1, not ${opts.workers}`);
  }
  const { signal } = opts;
  if (signal?.aborted) throw cancelled();
  const engine = opts.engine ?? process.env.NANOPAY_POW_ENGINE ?? 'auto';
  const here = opts.workers === undefined ? searchHere(checkedRoot, threshold, engine) : undefined;
  if (here !== undefined) return here;
  // Asked only for a search that needs threads: it reads the process's cgroup files each time.
  const count = opts.workers ?? availableParallelism();
  const kernel = engine === 'auto' || engine === 'native' ? opts.kernel?.(count) : undefined;
  const workers = await acquire(count, signal, cancelled);
  // Aborted between the grant and now: the workers may still be starting; end them.
  if (signal?.aborted) {
    await Promise.all(workers.map(discard));
    throw cancelled();
  }
  return search(workers, { root: checkedRoot, threshold, engine: kernel === undefined ? engine : `native:${kernel}` }, opts);
}

/**
 * Hashes per second of `engine` (`native:KERNEL` for one native kernel) on `threads` worker
 * threads at once, each timing `hashes` nonces: the fixed, short measurement the kernel choice is
 * made from.
 */
export async function timeKernel(engine: string, threads: number, hashes: number): Promise<number> {
  const workers = await acquire(threads, undefined, cancelled);
  const id = nextJob++;
  const answers = await Promise.all(
    workers.map(
      (worker) =>
        new Promise<{ hashes: number; ns: number }>((resolve, reject) =>
          worker.run(
            { id, engine, bench: hashes },
            {
              answer: (answer) => {
                if ('benched' in answer) resolve(answer);
                else if ('error' in answer) reject(new NanoPayError('INTERNAL_ERROR', `Timing the ${engine} kernel failed: ${answer.error}`));
              },
              failed: (why) => reject(new NanoPayError('INTERNAL_ERROR', why)),
            },
          ),
        ),
    ),
  );
  const slowest = Math.max(...answers.map((a) => a.ns));
  return (answers.reduce((sum, a) => sum + a.hashes, 0) * 1e9) / slowest;
}

function search(workers: SearchWorker[], task: { root: string; threshold: string; engine: string }, opts: GenerateOptions): Promise<string> {
  const { signal } = opts;
  const stop = new SharedArrayBuffer(4);
  const flag = new Int32Array(stop);
  const base = randomBytes(8).readBigUInt64LE(0);
  const id = nextJob++;
  let hashes = 0;

  return new Promise<string>((resolve, reject) => {
    let settled = false;
    const finish = (outcome: { work: string } | { error: NanoPayError }): void => {
      // Every way a search ends stops its other workers, which then go back to the pool.
      Atomics.store(flag, 0, 1);
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      if ('work' in outcome) resolve(outcome.work);
      else reject(outcome.error);
    };
    // A cancel ends the workers themselves: none is left searching or holding the process.
    const onAbort = (): void => {
      Atomics.store(flag, 0, 1);
      Promise.all(workers.map(discard)).then(() => finish({ error: cancelled() }));
    };
    signal?.addEventListener('abort', onAbort, { once: true });

    workers.forEach((worker, i) => {
      worker.run(
        {
          id,
          engine: task.engine,
          root: task.root,
          threshold: task.threshold,
          start: ((base + (BigInt(i) << 60n)) & (2n ** 64n - 1n)).toString(),
          stop,
        } satisfies SearchJob,
        {
          answer: (answer) => {
            if (answer.id !== id) return;
            if ('error' in answer) {
              finish({ error: new NanoPayError('INTERNAL_ERROR', `Proof of work failed: ${answer.error}`) });
              return;
            }
            if ('work' in answer && !settled) {
              // Never trust the searcher: check with the reference implementation.
              if (validateWork(task.root, answer.work, task.threshold)) finish({ work: answer.work });
              else finish({ error: new NanoPayError('INTERNAL_ERROR', `The ${task.engine} kernel returned invalid work ${answer.work}`) });
              return;
            }
            if ('unseen' in answer) {
              opts.onWorkerStopped?.(answer.unseen);
              return;
            }
            // Progress from workers still stopping after the search settled is not the search's any more.
            if (settled) return;
            hashes += answer.hashes;
            opts.onProgress?.(hashes);
          },
          // A worker that dies mid-search would otherwise leave the search waiting for ever.
          failed: (why) => finish({ error: new NanoPayError('INTERNAL_ERROR', why) }),
        },
      );
    });
  });
}
