// npm run bench:pow — proof-of-work speed, measured side by side in one run on the same cores:
// every native kernel as nanopay measures them to choose (the fastest on one thread and on all of them),
// the C reference kernel and the chosen kernels, in turns (BENCH_ROUNDS rounds, 1 and all threads),
// nanopay's other engines, nanocurrency's computeWork, and the latency of whole generateWork searches
// against the time the reference would need. A benchmark, not a test: it prints figures.
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { computeWork } from 'nanocurrency';
import { measure } from '../dist/ops/account/work.js';
import { LIVE_THRESHOLDS, expectedHashes, generateWork, measureKernels, shutdownWorkers, workEngine } from '../dist/work/index.js';

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
    await generateWork(root, threshold, { kernel: pick });
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

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const load = () => loadavg().map((l) => l.toFixed(2)).join(', ');

console.log(`Machine: ${cpus()[0]?.model ?? 'unknown CPU'}, ${THREADS} threads, Node ${process.version}; ${SECONDS} s per figure`);
console.log(`nanopay engine in use: ${workEngine()}; load average at the start: ${load()}\n`);

// The choice nanopay makes on this machine at first use (kernel-choice.ts): each kernel timed for a fixed number of
// nonces, on one thread and on all of them, the fastest kept for each.
const choice = workEngine() === 'native' ? await measureKernels() : undefined;
if (choice !== undefined) {
  console.log('Every native kernel, as nanopay measures them to choose (under a second):');
  for (const kernel of [...new Set(choice.rates.map((r) => r.kernel))]) {
    const rate = (t) => choice.rates.find((r) => r.kernel === kernel && r.threads === t)?.hashes_per_second;
    const marks = [kernel === choice.one ? 'chosen for 1 thread' : '', kernel === choice.all ? `chosen for ${THREADS} threads` : ''].filter((m) => m !== '').join(', ');
    console.log(`  ${kernel.padEnd(12)} 1 thread ${mhs(rate(1)).padStart(12)}   ${THREADS} threads ${THREADS === 1 ? '          -' : mhs(rate(THREADS)).padStart(12)}   ${marks}`);
  }
  console.log('');
}
const rows = [];
const ref = reference();
if (ref === undefined) console.log('No C compiler: the reference kernel was not built.');

/**
 * The reference and the engine in use, measured in turns (ROUNDS rounds of: reference 1 thread, engine 1 thread,
 * reference all threads, engine all threads), so that a load that comes and goes on a shared machine falls on
 * both: the ratio is the median of the rounds' ratios, each of which is printed beside it.
 */
const best = workEngine();
/** The kernel a wallet of this machine searches with, once it has chosen (the flags' one without the addon). */
const pick = (threads) => (choice === undefined ? undefined : threads === 1 ? choice.one : choice.all);
const inUse = (threads) => (choice === undefined ? best : `native:${threads === 1 ? choice.one : choice.all}`);
const rounds = { ref1: [], refN: [], one: [], all: [], ratio1: [], ratioN: [] };
for (let round = 0; round < (ref === undefined ? 1 : ROUNDS); round++) {
  for (const [threads, refKey, key, ratioKey] of [[1, 'ref1', 'one', 'ratio1'], [THREADS, 'refN', 'all', 'ratioN']]) {
    const refRate = ref?.(threads);
    const rate = (await measure(inUse(threads), threads, SECONDS * 1000)).hashes_per_second;
    rounds[key].push(rate);
    if (refRate === undefined) continue;
    rounds[refKey].push(refRate);
    rounds[ratioKey].push(rate / refRate);
  }
}
const ref1 = ref === undefined ? undefined : median(rounds.ref1);
const refN = ref === undefined ? undefined : median(rounds.refN);
if (ref !== undefined) rows.push([`C reference (8 lanes), median of ${ROUNDS}`, ref1, refN]);
const engines = { [best]: { one: median(rounds.one), all: median(rounds.all) } };
const chosen = choice === undefined ? best : `${best} ${choice.one}${choice.one === choice.all ? '' : ` / ${choice.all}`} (chosen)`;
rows.push([`nanopay ${chosen}${ref === undefined ? '' : `, median of ${ROUNDS}`}`, engines[best].one, engines[best].all]);
for (const engine of ['native', 'wasm', 'js']) {
  if (engine === best || (engine === 'native' && workEngine('native') !== 'native')) continue;
  const one = (await measure(engine, 1, SECONDS * 1000)).hashes_per_second;
  const all = (await measure(engine, THREADS, SECONDS * 1000)).hashes_per_second;
  engines[engine] = { one, all };
  rows.push([`nanopay ${engine}`, one, all]);
}
await shutdownWorkers();
const nc = await nanocurrencyRate();
rows.push(['nanocurrency computeWork (main thread only)', nc, undefined]);

for (const [name, one, all] of rows) console.log(`${name.padEnd(44)} 1 thread ${mhs(one).padStart(12)}   ${THREADS} threads ${all === undefined ? '          -' : mhs(all).padStart(12)}`);
const ours = engines[best];
const spread = (ratios) => `${median(ratios).toFixed(2)}x (rounds: ${ratios.map((r) => r.toFixed(2)).join(', ')})`;
console.log('');
if (ref !== undefined) console.log(`nanopay ${chosen}/reference, all threads: ${spread(rounds.ratioN)}; 1 thread: ${spread(rounds.ratio1)}`);
console.log(`nanopay/nanocurrency, 1 thread: ${(ours.one / nc).toFixed(2)}x   all threads: ${(ours.all / nc).toFixed(2)}x`);
if (engines.wasm !== undefined) console.log(`WASM fallback/nanocurrency, 1 thread: ${(engines.wasm.one / nc).toFixed(2)}x`);
console.log(`Expected live send (${LIVE_THRESHOLDS.send}): ${(expectedHashes(LIVE_THRESHOLDS.send) / ours.all).toFixed(1)} s; live receive (${LIVE_THRESHOLDS.receive}): ${(expectedHashes(LIVE_THRESHOLDS.receive) / ours.all).toFixed(2)} s`);
console.log(`Load average at the end of the rates: ${load()}`);

if (refN !== undefined) {
  console.log(`\nWhole searches, generateWork on ${THREADS} threads, random roots; expected time at the reference's all-thread rate,`);
  console.log('measured just before and just after each row (the machine may be shared):');
  // One search first, so starting the workers (once per process) is not counted.
  await generateWork(randomBytes(32).toString('hex'), 'ff00000000000000', { kernel: pick });
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
