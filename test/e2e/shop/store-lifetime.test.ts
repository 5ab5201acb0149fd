import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCommand, type RunResult } from '../../helpers/processes/cli.js';
import { tempDir } from '../../helpers/processes/temp.js';

/**
 * The SQLite store in a process of its own, as a user's program runs it: many statements, each left to the garbage
 * collector, on the main thread and in a worker thread that then ends. On Node 24 with better-sqlite3 12 (whose
 * objects use node::ObjectWrap, which Node 24 gave an environment cleanup hook) a statement collected while no
 * JavaScript context was entered aborted the whole process (`Assertion failed: (env) != nullptr` in
 * node::RemoveEnvironmentCleanupHook), a few thousand statements in, or as a worker ended.
 */
const STORE = new URL('../../../dist/store/sqlite.js', import.meta.url).href;
const READS = 20_000;

const SCRIPT = `
import { Worker, isMainThread, workerData } from 'node:worker_threads';
import { join } from 'node:path';
const { SqliteStore } = await import(${JSON.stringify(STORE)});
async function use(dir, name, close) {
  const store = await SqliteStore.open(join(dir, name + '.sqlite'), dir, name);
  for (let i = 0; i < ${READS}; i++) await store.requests.get('r' + i);
  if (close) await store.close();
}
if (isMainThread) {
  const dir = process.argv[2];
  await use(dir, 'main', true);
  const code = await new Promise((resolve, reject) => {
    const worker = new Worker(new URL(import.meta.url), { workerData: dir });
    worker.once('error', reject);
    worker.once('exit', resolve);
  });
  console.log('worker exit ' + code);
} else {
  // Left open, as a session leaves its store: the worker's end closes it.
  await use(workerData, 'worker', false);
}
`;

async function run(dir: string): Promise<RunResult> {
  const script = join(dir, 'program.mjs');
  await writeFile(script, SCRIPT);
  return runCommand(process.execPath, [script, dir], { env: process.env });
}

describe('the SQLite store in a program of its own', () => {
  it(`survives ${READS} statements left to the garbage collector, on the main thread and in a worker that ends with its store open`, async () => {
    const dir = await tempDir('nanopay-store-life-');
    const result = await run(dir);
    expect(result.stderr).not.toContain('Assertion failed');
    expect({ code: result.code, signal: result.signal, stdout: result.stdout.trim() }).toEqual({ code: 0, signal: null, stdout: 'worker exit 0' });
  });
});
