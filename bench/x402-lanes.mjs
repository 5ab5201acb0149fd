// x402 from one wallet: nanopay's own client (the SDK's fetchWithPayment, the whole guarded path: policy, journal,
// lock, signing, the ledger's confirmation) paying from one wallet with 8 payment lanes (BENCH_LANES). Its node (the
// sandbox) and the paywall are each a process of their own, so the CPU each of the three spends on a payment is
// measured apart. Measures the paid − unpaid latency, the paid requests per second of LANES callers at once, and counts
// the ledger: every payment that got a 200 is on it once, none lost. BENCH_RUNS runs (3), each with a new sandbox,
// paywall and wallet; their median. A benchmark, not a test: it prints figures.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { NanoPay } from '../dist/index.js';
import { KeyStore } from '../dist/wallet/keystore.js';
import { addressToPublicKey, deriveAccount, generateSeed } from '../dist/nano/index.js';
import { shutdownWorkers } from '../dist/work/index.js';
import { conditions, latencyTable, median, processCpuSeconds, quantile, repeated, verdict } from './conditions.mjs';

const LANES = Number(process.env.BENCH_LANES ?? 8);
const LATENCY_RUNS = Number(process.env.BENCH_LATENCY_RUNS ?? 200);
const LOAD_SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 10);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url));
const GOALS = { overheadMs: 25, perSecond: 100 };
const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('NANOPAY_')));

/** Starts a child and resolves to it and its first line of output, parsed. */
async function started(args, env) {
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'ignore'] });
  const printed = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]));
    });
    child.on('close', (code) => reject(new Error(`${args.slice(1, 3).join(' ')} exited ${code}`)));
  });
  return { child, printed };
}

async function run() {
  const root = mkdtempSync(join(tmpdir(), 'nanopay-bench-lanes-'));
  const upstream = createServer((req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"answer":42}'));
  await new Promise((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const upstreamUrl = `http://127.0.0.1:${upstream.address().port}`;
  // The sandbox as `nanopay sandbox` runs it, state in memory, in a process of its own.
  const sandboxModule = new URL('../dist/sandbox/index.js', import.meta.url).href;
  const node = await started(['--input-type=module', '-e', `const s = await (await import('${sandboxModule}')).startSandbox({ port: 0 }); console.log(JSON.stringify({ url: s.url }));`], inherited);
  const nodeUrl = node.printed.url;
  const env = { ...inherited, HOME: root, NANOPAY_CONFIG_DIR: root, NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: nodeUrl, NO_COLOR: '1' };
  const merchant = deriveAccount({ seed: generateSeed(), index: 0 }).address;
  const paywall = await started([BIN, 'paywall', '--upstream', upstreamUrl, '--price', '0.001', '--route', 'GET /free=0', '--to', merchant, '--json'], env);
  const paywallUrl = paywall.printed.url;

  const walletDir = join(root, 'one-wallet');
  const password = 'bench password';
  await KeyStore.create(join(walletDir, 'keystore.json'), password, 2 ** 10);
  // Work made on this machine (dev thresholds), not asked of the sandbox's node.
  const nanopay = new NanoPay({ password, env: { ...inherited, HOME: walletDir, NANOPAY_CONFIG_DIR: walletDir, NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: nodeUrl, NANO_WORK_MODE: 'cpu' } });
  const main = await nanopay.createWallet();
  await fetch(`${nodeUrl}/sandbox/fund`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ address: main.address, amount: '100' }) });
  await nanopay.receive();
  const lanes = await nanopay.setLanes(LANES, { fund: '5' });
  const laneSet = new Set(lanes.lanes.map((l) => l.address));

  const paidOk = new Set();
  const failures = [];
  async function paid() {
    const t = performance.now();
    try {
      const { response, payment } = await nanopay.fetchWithPayment(`${paywallUrl}/paid`, {}, { maxXno: '0.01' });
      await response.arrayBuffer();
      if (response.status !== 200 || payment === undefined) failures.push(`HTTP ${response.status}`);
      else if (paidOk.has(payment.hash)) failures.push(`${payment.hash} paid twice`);
      else paidOk.add(payment.hash);
    } catch (error) {
      failures.push(error.code ?? error.message);
    }
    return performance.now() - t;
  }
  async function unpaid() {
    const t = performance.now();
    await (await fetch(`${paywallUrl}/free`)).arrayBuffer();
    return performance.now() - t;
  }
  for (let i = 0; i < 10; i++) await paid();
  const unpaidMs = [];
  const paidMs = [];
  for (let i = 0; i < LATENCY_RUNS; i++) {
    unpaidMs.push(await unpaid());
    paidMs.push(await paid());
  }

  await nanopay.lanesIdle();
  const pids = { client: process.pid, node: node.child.pid, paywall: paywall.child.pid };
  const cpuBefore = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, processCpuSeconds(pid)]));
  let done = 0;
  const loadMs = [];
  const until = performance.now() + LOAD_SECONDS * 1000;
  const loadStarted = performance.now();
  await Promise.all(
    Array.from({ length: LANES }, async () => {
      while (performance.now() < until) {
        loadMs.push(await paid());
        done++;
      }
    }),
  );
  const loadSeconds = (performance.now() - loadStarted) / 1000;
  await nanopay.lanesIdle();
  const cpu = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, ((processCpuSeconds(pid) - cpuBefore[name]) * 1000) / done]));

  const merchantKey = addressToPublicKey(merchant);
  const dump = (await (await fetch(`${nodeUrl}/sandbox/ledger`)).json()).data;
  const fromLanes = dump.blocks.filter((b) => b.subtype === 'send' && laneSet.has(b.account) && b.link.toUpperCase() === merchantKey);
  const hashes = new Set(fromLanes.map((b) => b.hash));
  await nanopay.session.close();
  for (const child of [paywall.child, node.child]) {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('close', resolve));
  }
  upstream.close();
  rmSync(root, { recursive: true, force: true });
  return {
    unpaid: { median: median(unpaidMs), p99: quantile(unpaidMs, 0.99) },
    paid: { median: median(paidMs), p99: quantile(paidMs, 0.99) },
    perSecond: done / loadSeconds,
    underLoad: { median: median(loadMs), p99: quantile(loadMs, 0.99) },
    done,
    loadSeconds,
    cpu,
    ledger: {
      payments: fromLanes.length,
      double: fromLanes.length - hashes.size,
      lost: [...hashes].filter((h) => !paidOk.has(h)).length,
      unbacked: [...paidOk].filter((h) => !hashes.has(h)).length,
      failures,
    },
  };
}

const machine = conditions();
console.log(`x402 from one wallet: ${LANES} lanes, nanopay's client (SDK fetchWithPayment: 402, policy, journal, sign, present, confirmation seen); ${LATENCY_RUNS} sequential requests each way, then ${LOAD_SECONDS} s of ${LANES} callers at once; ${RUNS} runs`);
console.log(machine.line);
const runs = await repeated(RUNS, run, (r, n) => {
  const l = r.ledger;
  const failures = l.failures.length > 0 ? `\n${l.failures.slice(0, 5).join('\n')}` : '';
  return (
    `run ${n}: paid − unpaid ${(r.paid.median - r.unpaid.median).toFixed(1)} ms (paid ${r.paid.median.toFixed(1)}, unpaid ${r.unpaid.median.toFixed(1)}); ` +
    `${r.done} paid in ${r.loadSeconds.toFixed(1)} s = ${r.perSecond.toFixed(0)}/s; double payments ${l.double}, lost ${l.lost}, paid without a block ${l.unbacked}, failures ${l.failures.length}${failures}`
  );
});
console.log(machine.after());

const m = (pick) => median(runs.map(pick));
const f = (x) => `${x.toFixed(1)} ms`;
const overhead = m((r) => r.paid.median - r.unpaid.median);
const perSecond = m((r) => r.perSecond);
const bad = runs.reduce((n, r) => n + r.ledger.double + r.ledger.lost + r.ledger.unbacked + r.ledger.failures.length, 0);
latencyTable(runs, 'paid from a lane (the whole client path)');
console.log(`Sustained: ${perSecond.toFixed(0)} paid requests/s from one wallet (runs: ${runs.map((r) => r.perSecond.toFixed(0)).join(', ')}); a paid request while ${LANES} are under way: median ${f(m((r) => r.underLoad.median))}, p99 ${f(m((r) => r.underLoad.p99))}`);
const cpuTotal = m((r) => r.cpu.client + r.cpu.node + r.cpu.paywall);
console.log(
  `CPU per paid request under load: client ${m((r) => r.cpu.client).toFixed(1)} ms, node (sandbox) ${m((r) => r.cpu.node).toFixed(1)} ms, paywall ${m((r) => r.cpu.paywall).toFixed(1)} ms ` +
    `(the three on ${cpus().length} cores: at most ${((cpus().length * 1000) / cpuTotal).toFixed(0)} paid req/s)`,
);
console.log(`\nGoals: paid − unpaid ≤ ${GOALS.overheadMs} ms median: ${verdict(overhead <= GOALS.overheadMs)} (${f(overhead)}); ≥ ${GOALS.perSecond} paid requests/s from one wallet: ${verdict(perSecond >= GOALS.perSecond)} (${perSecond.toFixed(0)}/s); every payment once, none lost: ${verdict(bad === 0)}`);
await shutdownWorkers();
