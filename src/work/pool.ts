import { Worker } from 'node:worker_threads';
import type { BenchJob, SearchAnswer, SearchJob } from './pow-worker.js';

// vitest runs the TypeScript sources; workers always run the compiled copy in dist/.
const WORKER_URL = new URL(import.meta.url.endsWith('.ts') ? '../../dist/work/pow-worker.js' : './pow-worker.js', import.meta.url);

/** What a search hears from one of its workers. */
export interface Listener {
  answer(answer: SearchAnswer): void;
  /** The worker failed or exited before its final answer. */
  failed(why: string): void;
}

/** A search thread of the pool. */
export interface SearchWorker {
  /** Posts a job; its answers go to `listener` until the final one, which gives the worker back. */
  run(job: SearchJob | BenchJob, listener: Listener): void;
}

interface Slot extends SearchWorker {
  thread: Worker;
  listener: Listener | undefined;
  /** How many workers the search it serves asked for; 0 while idle. */
  asked: number;
}

interface Waiter {
  count: number;
  grant(workers: Slot[]): void;
}

/**
 * One pool of search threads per process, shared by every engine (a worker loads the kernel a job
 * names): started on first use, reused across searches, unref'd while idle so they never keep a
 * process alive. Searches are served in order, and one starts only when the threads busy with
 * others plus its own stay within the largest number any of them asked for: a search waits for
 * the workers of the previous one to drain instead of starting more threads than there are cores.
 */
const pool = new Set<Slot>();
const idle: Slot[] = [];
const queue: Waiter[] = [];
let live = 0;

const isFinal = (answer: SearchAnswer): boolean => 'work' in answer || 'stopped' in answer || 'benched' in answer || 'error' in answer;

function forget(slot: Slot): void {
  pool.delete(slot);
  const at = idle.indexOf(slot);
  if (at !== -1) idle.splice(at, 1);
}

function release(slot: Slot): void {
  slot.listener = undefined;
  slot.asked = 0;
  slot.thread.unref();
  idle.push(slot);
  serve();
}

function start(): Slot {
  // The worker is compiled code of ours and needs none of the parent's flags; some
  // (--input-type, as in `node --input-type=module -e`) would even stop it starting.
  const thread = new Worker(WORKER_URL, { execArgv: [] });
  const slot: Slot = {
    thread,
    listener: undefined,
    asked: 0,
    run(job, listener) {
      slot.listener = listener;
      thread.postMessage(job);
    },
  };
  live++;
  pool.add(slot);
  thread.on('message', (answer: SearchAnswer) => {
    slot.listener?.answer(answer);
    if (isFinal(answer) && pool.has(slot)) release(slot);
  });
  thread.on('error', (error) => slot.listener?.failed(`Proof of work worker failed: ${error.message}`));
  thread.once('exit', (code) => {
    live--;
    const listener = slot.listener;
    slot.listener = undefined;
    forget(slot);
    listener?.failed(`A proof of work worker stopped (exit code ${code})`);
    serve();
  });
  return slot;
}

function serve(): void {
  for (let head = queue[0]; head !== undefined; head = queue[0]) {
    let busy = 0;
    let limit = head.count;
    for (const slot of pool) {
      if (slot.asked === 0) continue;
      busy++;
      limit = Math.max(limit, slot.asked);
    }
    if (busy + head.count > limit) return;
    queue.shift();
    const granted = idle.splice(Math.max(0, idle.length - head.count));
    while (granted.length < head.count) granted.push(start());
    for (const slot of granted) {
      slot.asked = head.count;
      slot.thread.ref();
    }
    head.grant(granted);
  }
}

/** `count` workers for one search, as soon as the pool can give them; rejects with `cancelled` on abort. */
export function acquire(count: number, signal: AbortSignal | undefined, cancelled: () => Error): Promise<SearchWorker[]> {
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      const at = queue.indexOf(waiter);
      if (at !== -1) queue.splice(at, 1);
      reject(cancelled());
      serve();
    };
    const waiter: Waiter = {
      count,
      grant: (workers) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(workers);
      },
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    queue.push(waiter);
    serve();
  });
}

/** Ends a worker now (a cancelled search): nothing it still says is heard, and it never goes back to the pool. */
export async function discard(worker: SearchWorker): Promise<void> {
  const slot = worker as Slot;
  slot.listener = undefined;
  forget(slot);
  serve();
  await slot.thread.terminate();
}

/** Workers alive now (busy or idle); for tests that check nothing leaks. */
export function liveWorkers(): number {
  return live;
}

/** Workers waiting in the pool; equal to liveWorkers() once every search has stopped. */
export function idleWorkers(): number {
  return idle.length;
}

/** Stops the idle workers. */
export async function shutdownWorkers(): Promise<void> {
  const all = idle.splice(0);
  for (const slot of all) pool.delete(slot);
  await Promise.all(all.map((slot) => slot.thread.terminate()));
}
