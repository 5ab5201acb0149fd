import { blake2b } from '@noble/hashes/blake2.js';
import { parentPort } from 'node:worker_threads';

/** One search: nonces start, start + stride, … until found or the shared stop flag is set. */
export interface SearchJob {
  id: number;
  root: string;
  threshold: string;
  start: string;
  stride: string;
  /** Int32 flag shared by every worker of the job: non-zero means stop. */
  stop: SharedArrayBuffer;
}

export type SearchAnswer = { id: number; work: string } | { id: number; stopped: true } | { id: number; error: string };

const BATCH = 4096;
const MASK = 2n ** 64n - 1n;

function search(job: SearchJob): SearchAnswer {
  const stop = new Int32Array(job.stop);
  const input = Buffer.alloc(40);
  Buffer.from(job.root, 'hex').copy(input, 8);
  const threshold = BigInt(`0x${job.threshold}`);
  const stride = BigInt(job.stride);
  let nonce = BigInt(job.start);
  for (;;) {
    for (let i = 0; i < BATCH; i++) {
      input.writeBigUInt64LE(nonce, 0);
      const value = Buffer.from(blake2b(input, { dkLen: 8 })).readBigUInt64LE(0);
      if (value >= threshold) return { id: job.id, work: nonce.toString(16).padStart(16, '0') };
      nonce = (nonce + stride) & MASK;
    }
    if (Atomics.load(stop, 0) !== 0) return { id: job.id, stopped: true };
  }
}

parentPort?.on('message', (job: SearchJob) => {
  try {
    parentPort?.postMessage(search(job));
  } catch (error) {
    parentPort?.postMessage({ id: job.id, error: error instanceof Error ? error.message : String(error) });
  }
});
