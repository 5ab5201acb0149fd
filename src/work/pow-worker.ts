import { parentPort } from 'node:worker_threads';
import { loadEngine, type Engine } from './engines.js';

/** A kernel timed: `bench` nonces from 0 at a threshold none meets, on this thread. */
export interface BenchJob {
  id: number;
  engine: string;
  bench: number;
}

/** One search: consecutive nonces from `start` until found or the shared stop flag is set. */
export interface SearchJob {
  id: number;
  /** The kernel asked for (the fastest that loads when it does not). */
  engine: string;
  root: string;
  threshold: string;
  start: string;
  /** Int32 flag shared by every worker of the job: non-zero means stop. */
  stop: SharedArrayBuffer;
}

/**
 * A job's answers: progress (`hashes` since the last report), then one final answer, after which
 * the worker is idle. `hashes` on a final answer completes the count; `unseen` bounds the nonces
 * tried after the stop flag was set.
 */
export type SearchAnswer =
  | { id: number; hashes: number }
  | { id: number; work: string; hashes: number; unseen: number }
  | { id: number; stopped: true; hashes: number; unseen: number }
  | { id: number; benched: true; hashes: number; ns: number }
  | { id: number; error: string };

const MASK = 2n ** 64n - 1n;
const PROGRESS_MS = 250;
/** Loaded once per worker and engine name: a worker serves every search of the process. */
const engines = new Map<string, Engine>();

function engineFor(name: string): Engine {
  let engine = engines.get(name);
  if (engine === undefined) {
    engine = loadEngine(name);
    engines.set(name, engine);
  }
  return engine;
}

function search(job: SearchJob): SearchAnswer {
  const engine = engineFor(job.engine);
  const stop = new Int32Array(job.stop);
  const root = Buffer.from(job.root, 'hex');
  const threshold = BigInt(`0x${job.threshold}`);
  let nonce = BigInt(job.start);
  let hashes = 0;
  let unseen = 0;
  let reported = Date.now();
  while (Atomics.load(stop, 0) === 0) {
    const result = engine.search(root, threshold, nonce, engine.batch, stop);
    hashes += result.hashes;
    unseen = result.unseen;
    if (result.nonce !== null) {
      // The other workers stop now, without waiting for the answer to reach the main thread.
      Atomics.store(stop, 0, 1);
      return { id: job.id, work: result.nonce.toString(16).padStart(16, '0'), hashes, unseen };
    }
    if (result.stopped) break;
    nonce = (nonce + BigInt(result.hashes)) & MASK;
    if (Date.now() - reported >= PROGRESS_MS) {
      parentPort?.postMessage({ id: job.id, hashes });
      hashes = 0;
      reported = Date.now();
    }
  }
  return { id: job.id, stopped: true, hashes, unseen };
}

/** The threshold no value meets: a bench never stops early. */
const NEVER_MET = 2n ** 64n - 1n;

function bench(job: BenchJob): SearchAnswer {
  const engine = engineFor(job.engine);
  const root = new Uint8Array(32);
  const started = process.hrtime.bigint();
  const { hashes } = engine.search(root, NEVER_MET, 0n, job.bench);
  return { id: job.id, benched: true, hashes, ns: Number(process.hrtime.bigint() - started) };
}

parentPort?.on('message', (job: SearchJob | BenchJob) => {
  try {
    parentPort?.postMessage('bench' in job ? bench(job) : search(job));
  } catch (error) {
    parentPort?.postMessage({ id: job.id, error: error instanceof Error ? error.message : String(error) });
  }
});
