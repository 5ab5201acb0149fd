import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { NanoPayError } from '../errors.js';
import { loadEngine, type EngineName } from './engines.js';
import type { SearchAnswer, SearchJob } from './pow-worker.js';
import { validateWork } from './pow.js';
import { parseThreshold } from './thresholds.js';

// vitest runs the TypeScript sources; workers always run the compiled copy in dist/.
const WORKER_URL = new URL(import.meta.url.endsWith('.ts') ? '../../dist/work/pow-worker.js' : './pow-worker.js', import.meta.url);

export interface GenerateOptions {
  signal?: AbortSignal;
  /** Worker threads (default: all cores). */
  workers?: number;
  /** Force a kernel (default: NANOPAY_POW_ENGINE, else the fastest that loads). */
  engine?: EngineName;
  /** Hashes tried so far, reported a few times a second. */
  onProgress?: (hashes: number) => void;
}

/**
 * Warm pools of search workers, one per engine: started on first use, reused
 * across calls, unref'd while idle so they never keep a process alive.
 */
const idle = new Map<string, Worker[]>();
let live = 0;
let nextJob = 1;

function takeWorker(engine: string): Worker {
  const pool = idle.get(engine) ?? [];
  idle.set(engine, pool);
  const worker = pool.pop();
  if (worker !== undefined) {
    worker.ref();
    return worker;
  }
  live++;
  // The worker is compiled code of ours and needs none of the parent's flags; some
  // (--input-type, as in `node --input-type=module -e`) would even stop it starting.
  const fresh = new Worker(WORKER_URL, { workerData: { engine }, execArgv: [] });
  fresh.once('exit', () => {
    live--;
    const at = pool.indexOf(fresh);
    if (at !== -1) pool.splice(at, 1);
  });
  return fresh;
}

function giveBack(engine: string, worker: Worker): void {
  worker.removeAllListeners('message');
  worker.removeAllListeners('error');
  worker.unref();
  idle.get(engine)?.push(worker);
}

/** Workers alive now (busy or idle); for tests that check nothing leaks. */
export function liveWorkers(): number {
  return live;
}

/** Workers waiting in the pools; equal to liveWorkers() once every search has stopped. */
export function idleWorkers(): number {
  return [...idle.values()].reduce((sum, pool) => sum + pool.length, 0);
}

/** Stops the idle workers. */
export async function shutdownWorkers(): Promise<void> {
  const all = [...idle.values()].flatMap((pool) => pool.splice(0));
  await Promise.all(all.map((w) => w.terminate()));
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

/**
 * Finds a nonce for `root` that meets `threshold` on worker threads (the event
 * loop stays free). Worker i searches its own range from base + i·2^60; the
 * first answer stops the others; `signal` terminates them all.
 */
export async function generateWork(root: string, threshold: string, opts: GenerateOptions = {}): Promise<string> {
  const checkedRoot = checkRoot(root);
  parseThreshold(threshold);
  const count = opts.workers ?? availableParallelism();
  // NaN or 0 would start no worker at all, and the search would never end.
  if (!Number.isSafeInteger(count) || count < 1) {
    throw new NanoPayError('USAGE', `The number of work threads must be a whole number of at least 1, not ${count}`);
  }
  const { signal } = opts;
  if (signal?.aborted) throw new NanoPayError('CANCELLED', 'Proof of work cancelled');
  const engine = opts.engine ?? process.env.NANOPAY_POW_ENGINE ?? 'auto';
  const stop = new SharedArrayBuffer(4);
  const flag = new Int32Array(stop);
  const base = randomBytes(8).readBigUInt64LE(0);
  const id = nextJob++;
  const workers = Array.from({ length: count }, () => takeWorker(engine));
  let hashes = 0;

  return new Promise<string>((resolve, reject) => {
    let settled = false;
    // Set on cancel: the workers are being terminated, so nothing they still say counts
    // and none of them may go back to a pool where another search could take it.
    let cancelling = false;
    const finish = (outcome: { work: string } | { error: NanoPayError }): void => {
      Atomics.store(flag, 0, 1);
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      if ('work' in outcome) resolve(outcome.work);
      else reject(outcome.error);
    };
    // A cancel ends the workers themselves: none is left searching or holding the process.
    const onAbort = (): void => {
      cancelling = true;
      Atomics.store(flag, 0, 1);
      Promise.all(workers.map((w) => w.terminate())).then(() => finish({ error: new NanoPayError('CANCELLED', 'Proof of work cancelled') }));
    };
    signal?.addEventListener('abort', onAbort, { once: true });

    workers.forEach((worker, i) => {
      // A worker that dies mid-search would otherwise leave the search waiting for ever.
      const onExit = (code: number): void => {
        if (!cancelling) finish({ error: new NanoPayError('INTERNAL_ERROR', `A proof of work worker stopped (exit code ${code})`) });
      };
      worker.once('exit', onExit);
      worker.on('message', (answer: SearchAnswer | { engine: string }) => {
        if (cancelling || !('id' in answer) || answer.id !== id) return;
        if ('hashes' in answer) {
          hashes += answer.hashes;
          opts.onProgress?.(hashes);
          return;
        }
        if ('work' in answer) {
          // Never trust the searcher: check with the reference implementation.
          if (validateWork(checkedRoot, answer.work, threshold)) finish({ work: answer.work });
          else finish({ error: new NanoPayError('INTERNAL_ERROR', `The ${engine} kernel returned invalid work ${answer.work}`) });
        } else if ('error' in answer) {
          finish({ error: new NanoPayError('INTERNAL_ERROR', `Proof of work failed: ${answer.error}`) });
        }
        // Any final answer (work, stopped, error) means this worker is idle again.
        worker.off('exit', onExit);
        giveBack(engine, worker);
      });
      worker.once('error', (error) => {
        if (!cancelling) finish({ error: new NanoPayError('INTERNAL_ERROR', `Proof of work worker failed: ${error.message}`) });
        worker.terminate().catch(() => undefined);
      });
      const job: SearchJob = {
        id,
        root: checkedRoot,
        threshold,
        start: ((base + (BigInt(i) << 60n)) & (2n ** 64n - 1n)).toString(),
        stop,
      };
      worker.postMessage(job);
    });
  });
}
