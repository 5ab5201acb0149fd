import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { NanoPayError } from '../errors.js';
import type { SearchAnswer, SearchJob } from './pow-worker.js';
import { validateWork } from './pow.js';
import { parseThreshold } from './thresholds.js';

// vitest runs the TypeScript sources; workers always run the compiled copy in dist/.
const WORKER_URL = new URL(import.meta.url.endsWith('.ts') ? '../../dist/work/pow-worker.js' : './pow-worker.js', import.meta.url);

/**
 * A warm pool of search workers: started on first use, reused across calls,
 * unref'd while idle so they never keep a process alive.
 */
const idle: Worker[] = [];
let live = 0;
let nextJob = 1;

function takeWorker(): Worker {
  const worker = idle.pop();
  if (worker !== undefined) {
    worker.ref();
    return worker;
  }
  live++;
  const fresh = new Worker(WORKER_URL);
  fresh.once('exit', () => {
    live--;
    const at = idle.indexOf(fresh);
    if (at !== -1) idle.splice(at, 1);
  });
  return fresh;
}

function giveBack(worker: Worker): void {
  worker.removeAllListeners('message');
  worker.removeAllListeners('error');
  worker.unref();
  idle.push(worker);
}

/** Workers alive now (busy or idle); for tests that check nothing leaks. */
export function liveWorkers(): number {
  return live;
}

/** Stops the idle workers. */
export async function shutdownWorkers(): Promise<void> {
  await Promise.all(idle.splice(0).map((w) => w.terminate()));
}

function checkRoot(root: string): string {
  if (typeof root !== 'string' || !/^[0-9a-fA-F]{64}$/.test(root)) {
    throw new NanoPayError('INVALID_HEX', 'A work root must be 64 hexadecimal characters');
  }
  return root.toUpperCase();
}

/**
 * Finds a nonce for `root` that meets `threshold` on worker threads (the event
 * loop stays free). Each worker walks its own residue class from a random
 * start; the first answer stops the others; `signal` stops them all.
 */
export async function generateWork(root: string, threshold: string, opts: { signal?: AbortSignal; workers?: number } = {}): Promise<string> {
  const checkedRoot = checkRoot(root);
  parseThreshold(threshold);
  const { signal } = opts;
  if (signal?.aborted) throw new NanoPayError('CANCELLED', 'Proof of work cancelled');
  const count = Math.max(1, opts.workers ?? availableParallelism());
  const stop = new SharedArrayBuffer(4);
  const flag = new Int32Array(stop);
  const start = randomBytes(8).readBigUInt64LE(0);
  const id = nextJob++;
  const workers = Array.from({ length: count }, takeWorker);

  return new Promise<string>((resolve, reject) => {
    let pending = count;
    let outcome: { work: string } | { error: NanoPayError } | undefined;
    const settle = (): void => {
      signal?.removeEventListener('abort', onAbort);
      if (outcome === undefined) reject(new NanoPayError('INTERNAL_ERROR', 'Proof of work ended without an answer'));
      else if ('work' in outcome) resolve(outcome.work);
      else reject(outcome.error);
    };
    const finish = (result: { work: string } | { error: NanoPayError }): void => {
      outcome ??= result;
      Atomics.store(flag, 0, 1);
    };
    const onAbort = (): void => finish({ error: new NanoPayError('CANCELLED', 'Proof of work cancelled') });
    signal?.addEventListener('abort', onAbort, { once: true });

    workers.forEach((worker, i) => {
      const done = (): void => {
        giveBack(worker);
        if (--pending === 0) settle();
      };
      worker.on('message', (answer: SearchAnswer) => {
        if (answer.id !== id) return;
        if ('work' in answer) {
          // Never trust the searcher: check with the reference implementation.
          if (validateWork(checkedRoot, answer.work, threshold)) finish({ work: answer.work });
          else finish({ error: new NanoPayError('WORK_SERVER_ERROR', `The local generator returned invalid work ${answer.work}`) });
        } else if ('error' in answer) {
          finish({ error: new NanoPayError('INTERNAL_ERROR', `Proof of work failed: ${answer.error}`) });
        }
        done();
      });
      worker.once('error', (error) => {
        finish({ error: new NanoPayError('INTERNAL_ERROR', `Proof of work worker failed: ${error.message}`) });
        worker.removeAllListeners('message');
        worker.terminate().catch(() => undefined);
        if (--pending === 0) settle();
      });
      const job: SearchJob = {
        id,
        root: checkedRoot,
        threshold,
        start: ((start + BigInt(i)) & (2n ** 64n - 1n)).toString(),
        stride: String(count),
        stop,
      };
      worker.postMessage(job);
    });
  });
}
