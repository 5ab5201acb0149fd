// npm run bench:pow — proof-of-work speed, measured side by side in one run on the same cores:
// the C reference kernel (1 and all threads), nanopay's generator with each engine (1 and all
// threads), and nanocurrency's computeWork. A benchmark, not a test: it prints figures.
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { computeWork } from 'nanocurrency';
import { measure } from '../dist/ops/work.js';
import { LIVE_THRESHOLDS, expectedHashes, shutdownWorkers, workEngine } from '../dist/work/index.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const THREADS = availableParallelism();
const here = fileURLToPath(new URL('.', import.meta.url));
const mhs = (h) => `${(h / 1e6).toFixed(2)} MH/s`;

function reference(threads) {
  const dir = mkdtempSync(join(tmpdir(), 'nanopay-bench-'));
  const binary = join(dir, 'pow_reference');
  const cc = spawnSync('cc', ['-O3', '-march=native', '-pthread', '-o', binary, join(here, 'pow_reference.c')], { stdio: 'inherit' });
  if (cc.status !== 0) return undefined;
  return (t) => JSON.parse(execFileSync(binary, [String(t), String(SECONDS)], { encoding: 'utf8' })).hashes_per_second;
}

/** computeWork runs until it finds work: time many searches whose expected length is known. */
async function nanocurrencyRate() {
  const threshold = 'fffffc0000000000';
  const started = Date.now();
  let runs = 0;
  while (Date.now() - started < SECONDS * 1000 || runs < 3) {
    await computeWork(randomBytes(32).toString('hex'), { workThreshold: threshold });
    runs++;
  }
  return (runs * expectedHashes(threshold)) / ((Date.now() - started) / 1000);
}

console.log(`Machine: ${cpus()[0]?.model ?? 'unknown CPU'}, ${THREADS} threads, Node ${process.version}; ${SECONDS} s per figure`);
console.log(`nanopay engine in use: ${workEngine()}\n`);
const rows = [];
const ref = reference();
const ref1 = ref?.(1);
const refN = ref?.(THREADS);
if (ref1 !== undefined) rows.push(['C reference (8 lanes)', ref1, refN]);
else console.log('No C compiler: the reference kernel was not built.');

const engines = {};
for (const engine of ['native', 'wasm', 'js']) {
  if (engine === 'native' && workEngine('native') !== 'native') continue;
  const one = (await measure(engine, 1, SECONDS * 1000)).hashes_per_second;
  const all = (await measure(engine, THREADS, SECONDS * 1000)).hashes_per_second;
  engines[engine] = { one, all };
  rows.push([`nanopay ${engine}`, one, all]);
}
await shutdownWorkers();
const nc = await nanocurrencyRate();
rows.push(['nanocurrency computeWork (main thread only)', nc, undefined]);

for (const [name, one, all] of rows) console.log(`${name.padEnd(44)} 1 thread ${mhs(one).padStart(12)}   ${THREADS} threads ${all === undefined ? '          -' : mhs(all).padStart(12)}`);
const best = engines[workEngine()];
console.log('');
if (refN !== undefined && best !== undefined) console.log(`nanopay/reference, all threads: ${(best.all / refN).toFixed(2)}x  (1 thread: ${(best.one / ref1).toFixed(2)}x)`);
if (best !== undefined) console.log(`nanopay/nanocurrency, 1 thread: ${(best.one / nc).toFixed(2)}x   all threads: ${(best.all / nc).toFixed(2)}x`);
if (engines.wasm !== undefined) console.log(`WASM fallback/nanocurrency, 1 thread: ${(engines.wasm.one / nc).toFixed(2)}x`);
if (best !== undefined) {
  console.log(`Expected live send (${LIVE_THRESHOLDS.send}): ${(expectedHashes(LIVE_THRESHOLDS.send) / best.all).toFixed(1)} s; live receive (${LIVE_THRESHOLDS.receive}): ${(expectedHashes(LIVE_THRESHOLDS.receive) / best.all).toFixed(2)} s`);
}
