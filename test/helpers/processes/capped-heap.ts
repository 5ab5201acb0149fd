import { spawn } from 'node:child_process';
import { BIN } from './cli.js';

export interface CappedRun {
  code: number | null;
  /** Lines (LF) and bytes written to stdout, counted as they stream: nothing of it is kept but its head. */
  lines: number;
  bytes: number;
  head: string;
  stderr: string;
}

/**
 * The built CLI with its JavaScript heap capped at `heapMb`: how a test shows that a command streams. Output held
 * whole (100,000 records are 100 MB and more of objects) cannot fit in a small heap; a page at a time does. Peak RSS
 * is a poorer witness: it follows when the garbage collector runs, which depends on the load and the Node.js version.
 */
export function runWithCappedHeap(args: string[], env: NodeJS.ProcessEnv, heapMb: number): Promise<CappedRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [`--max-old-space-size=${heapMb}`, BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const run: CappedRun = { code: null, lines: 0, bytes: 0, head: '', stderr: '' };
    child.stdout.on('data', (chunk: Buffer) => {
      run.bytes += chunk.length;
      if (run.head.length < 100_000) run.head += chunk.toString();
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) run.lines++;
    });
    child.stderr.on('data', (d: Buffer) => (run.stderr = (run.stderr + d.toString()).slice(-4000)));
    child.on('error', reject);
    child.on('close', (code) => resolve({ ...run, code }));
  });
}
