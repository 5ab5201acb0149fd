import { parentPort, workerData } from 'node:worker_threads';
import { loadEngine } from './engines.js';

/** One search: consecutive nonces from `start` until found or the shared stop flag is set. */
export interface SearchJob {
  id: number;
  root: string;
  threshold: string;
  start: string;
  /** Int32 flag shared by every worker of the job: non-zero means stop. */
  stop: SharedArrayBuffer;
}

export type SearchAnswer =
  | { id: number; work: string }
  | { id: number; stopped: true }
  | { id: number; error: string }
  | { id: number; hashes: number };

const engine = loadEngine((workerData as { engine?: string } | undefined)?.engine);
const MASK = 2n ** 64n - 1n;
const PROGRESS_MS = 250;

function search(job: SearchJob): SearchAnswer {
  const stop = new Int32Array(job.stop);
  const root = Buffer.from(job.root, 'hex');
  const threshold = BigInt(`0x${job.threshold}`);
  let nonce = BigInt(job.start);
  let hashes = 0;
  let reported = Date.now();
  while (Atomics.load(stop, 0) === 0) {
    const found = engine.search(root, threshold, nonce, engine.batch);
    if (found !== null) return { id: job.id, work: found.toString(16).padStart(16, '0') };
    nonce = (nonce + BigInt(engine.batch)) & MASK;
    hashes += engine.batch;
    if (Date.now() - reported >= PROGRESS_MS) {
      parentPort?.postMessage({ id: job.id, hashes });
      hashes = 0;
      reported = Date.now();
    }
  }
  return { id: job.id, stopped: true };
}

parentPort?.postMessage({ engine: engine.name });
parentPort?.on('message', (job: SearchJob) => {
  try {
    parentPort?.postMessage(search(job));
  } catch (error) {
    parentPort?.postMessage({ id: job.id, error: error instanceof Error ? error.message : String(error) });
  }
});
