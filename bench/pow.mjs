// npm run bench:pow — proof-of-work speed, measured side by side in one run on the same cores:
// the C reference kernel (1 and all threads), nanopay's generator with each engine (1 and all
// threads), nanocurrency's computeWork, and the latency of whole generateWork searches against
// the time the reference would need. A benchmark, not a test: it prints figures.
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { computeWork } from 'nanocurrency';
import { measure } from '../dist/ops/account/work.js';
import { LIVE_THRESHOLDS, expectedHashes, generateWork, shutdownWorkers, workEngine } from '../dist/work/index.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
/** Time spent on each latency row (searches are random: more of them, a steadier mean). */
const LATENCY_SECONDS = Number(process.env.BENCH_LATENCY_SECONDS ?? SECONDS * 5);
const THREADS = availableParallelism();
const here = fileURLToPath(new URL('.', import.meta.url));
const mhs = (h) => `${(h / 1e6).toFixed(2)} MH/s`;

function reference(threads) {
  const dir = mkdtempSync(join(tmpdir(), 'nanopay-bench-'));
  const binary = join(dir, 'pow_reference');
  // -Wno-psabi: GCC notes that 8-lane vectors change the ABI on CPUs without AVX-512; all calls are inlined.
  const cc = spawnSync('cc', ['-O3', '-march=native', '-pthread', '-Wno-psabi', '-o', binary, join(here, 'pow_reference.c')], { stdio: 'inherit' });
  if (cc.status !== 0) return undefined;
  return (t, seconds = SECONDS) => JSON.parse(execFileSync(binary, [String(t), String(seconds)], { encoding: 'utf8' })).hashes_per_second;
}

/**
 * Whole searches on random roots, as a wallet makes them: `generateWork` on all threads, timed
 * from the call to the validated answer. Each search needs a random number of hashes with the
 * threshold's expected count as its mean, so the mean latency compares with the time the
 * reference would need on average. `refRate` sets how many searches fit in LATENCY_SECONDS.
 */
async function latency(threshold, refRate) {
  const expected = expectedHashes(threshold);
  const runs = Math.min(2000, Math.max(30, Math.round((LATENCY_SECONDS * refRate) / expected)));
  const times = [];
  for (let i = 0; i < runs; i++) {
    const root = randomBytes(32).toString('hex');
    const started = performance.now();
    await generateWork(root, threshold);
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const mean = times.reduce((sum, t) => sum + t, 0) / runs;
  const sd = Math.sqrt(times.reduce((sum, t) => sum + (t - mean) ** 2, 0) / (runs - 1));
  return { expected, runs, mean, sem: sd / Math.sqrt(runs), median: times[Math.floor(runs / 2)] };
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

if (refN !== undefined) {
  console.log(`\nWhole searches, generateWork on ${THREADS} threads, random roots; expected time at the reference's all-thread rate,`);
  console.log('measured just before and just after each row (the machine may be shared):');
  // One search first, so starting the workers (once per process) is not counted.
  await generateWork(randomBytes(32).toString('hex'), 'ff00000000000000');
  const ms = (t) => `${t.toFixed(t < 10 ? 2 : 1)} ms`;
  for (const threshold of ['f000000000000000', 'ffff000000000000', 'fffff80000000000', LIVE_THRESHOLDS.receive]) {
    const before = ref(THREADS, SECONDS / 2);
    const r = await latency(threshold, before);
    const rate = (before + ref(THREADS, SECONDS / 2)) / 2;
    const wanted = (r.expected / rate) * 1000;
    const hashes = r.expected < 1024 ? String(r.expected) : `2^${Math.log2(r.expected)}`;
    console.log(
      `${threshold} (${hashes.padStart(4)} hashes) x${String(r.runs).padEnd(5)} reference ${mhs(rate)}, expected ${ms(wanted).padStart(9)}   mean ${ms(r.mean).padStart(9)} ±${ms(r.sem).padEnd(8)}` +
        ` median ${ms(r.median).padStart(9)}   mean/expected ${(r.mean / wanted).toFixed(2)}x   effective rate ${(wanted / r.mean).toFixed(2)}x reference`,
    );
  }
  await shutdownWorkers();
}
