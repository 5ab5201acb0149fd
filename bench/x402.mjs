// npm run bench:x402 — x402 through `nanopay paywall` on the sandbox (dev thresholds, work precomputed off the
// request path, as `work precache` does after each payment): the latency of a paid request against the same request
// unpaid (a free route of the same paywall), and the sustained paid requests per second from 20 payer accounts.
// Afterwards the ledger is counted: every block that got a 200 must be on it once, and no other block of the payers
// may have reached the merchant (0 double settlements, 0 lost payments). Each run starts a new sandbox and paywall;
// BENCH_RUNS runs (3), their median. The breakdown: the paywall's own timing of each step (its
// nanopay_x402_phase_seconds histogram, read on --metrics-listen), the CPU each process spent per paid request, and
// what of this process's CPU went to the sandbox's ledger and to the payers. A benchmark, not a test: it prints figures.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { addressToPublicKey, buildReceiveBlock, buildSendBlock, deriveAccount, generateSeed, hashBlock, linkAsAccount, signBlock, workRoot } from '../dist/nano/index.js';
import { startSandbox } from '../dist/sandbox/index.js';
import { generateWork, shutdownWorkers } from '../dist/work/index.js';
import { encodeHeader, decodeHeader } from '../dist/x402/protocol.js';
import { conditions, histogramSums, latencyTable, median, processCpuSeconds, quantile, repeated, verdict } from './conditions.mjs';

const PAYERS = Number(process.env.BENCH_PAYERS ?? 20);
const LATENCY_RUNS = Number(process.env.BENCH_LATENCY_RUNS ?? 200);
const LOAD_SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 10);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url));
const GOALS = { overheadMs: 25, perSecond: 100 };
const PHASES = ['signature', 'head', 'checks', 'record', 'upstream', 'claim', 'publish', 'confirm', 'settled'];

/** The CPU time (ms) this process spent in a part of its work, summed while the runs go. */
const spent = { sign: 0, work: 0, ledger: 0 };
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
/** The main thread's CPU time (Node.js 23.9 and later), else the process's. */
const threadMs = () => {
  const u = process.threadCpuUsage?.() ?? process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const counted = (part, fn) => {
  const started = threadMs();
  try {
    return fn();
  } finally {
    spent[part] += threadMs() - started;
  }
};
const countedAsync = async (part, fn) => {
  // The work generator answers from its own threads: its wall time here, spent while the rest waits.
  const started = performance.now();
  try {
    return await fn();
  } finally {
    spent[part] += performance.now() - started;
  }
};

async function run() {
  const root = mkdtempSync(join(tmpdir(), 'nanopay-bench-x402-'));
  const sandbox = await startSandbox({ port: 0 });
  const thresholds = sandbox.service.thresholds;
  // The sandbox's ledger (checking and applying each block: what a node does) is timed apart from its HTTP side.
  const publish = sandbox.service.publish.bind(sandbox.service);
  sandbox.service.publish = (...args) => counted('ledger', () => publish(...args));
  const upstream = createServer((req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"answer":42}'));
  await new Promise((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const upstreamUrl = `http://127.0.0.1:${upstream.address().port}`;

  const merchant = deriveAccount({ seed: generateSeed(), index: 0 }).address;
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('NANOPAY_')));
  const env = { ...inherited, HOME: root, NANOPAY_CONFIG_DIR: root, NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: sandbox.url, NO_COLOR: '1' };
  const args = [BIN, 'paywall', '--upstream', upstreamUrl, '--price', '0.001', '--route', 'GET /free=0', '--to', merchant, '--metrics-listen', '127.0.0.1:0', '--json'];
  const paywall = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'ignore'] });
  const started = await new Promise((resolve, reject) => {
    let out = '';
    paywall.stdout.on('data', (d) => {
      out += d;
      if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]));
    });
    paywall.on('close', (code) => reject(new Error(`paywall exited ${code}`)));
  });
  const paywallUrl = started.url;
  const phases = async () => histogramSums(await (await fetch(`${started.metrics_url}/metrics`)).text(), 'nanopay_x402_phase_seconds', 'phase');

  /** A payer with its head and the work for its next block made ahead. */
  async function newPayer() {
    const account = deriveAccount({ seed: generateSeed(), index: 0 });
    const { hash } = sandbox.service.fund(account.address, '10');
    const open = buildReceiveBlock({ address: account.address, frontier: null, balance: 0n, representative: account.address }, { sourceHash: hash, amount: 10n * 10n ** 30n });
    const signed = { ...open, signature: signBlock(open, account.privateKey), work: await generateWork(workRoot(open), thresholds.receive) };
    sandbox.service.publish(signed, 'open');
    const head = { address: account.address, frontier: hashBlock(signed), balance: BigInt(signed.balance), representative: signed.representative };
    return { account, head, work: await generateWork(head.frontier, thresholds.send) };
  }

  async function challenge() {
    const r = await fetch(`${paywallUrl}/paid`);
    await r.arrayBuffer();
    return decodeHeader(r.headers.get('payment-required'), 'PAYMENT-REQUIRED');
  }

  function paymentHeader(payer, required) {
    const requirement = required.accepts[0];
    const block = buildSendBlock(payer.head, { to: requirement.payTo, amount: BigInt(requirement.amount) });
    const signed = { ...block, signature: counted('sign', () => signBlock(block, payer.account.privateKey)), work: payer.work, link_as_account: linkAsAccount(block.link) };
    return { header: encodeHeader({ x402Version: 2, resource: required.resource, accepted: requirement, payload: { block: signed } }), block: signed, hash: hashBlock(signed) };
  }

  /** After a paid 200: the payer's head moves, and the next work is made (off the timed path). */
  async function advance(payer, block, hash) {
    payer.head = { ...payer.head, frontier: hash, balance: BigInt(block.balance) };
    payer.work = await countedAsync('work', () => generateWork(hash, thresholds.send));
  }

  const settledOk = new Set();
  const failures = [];
  async function paidRequest(payer, required) {
    const { header, block, hash } = paymentHeader(payer, required);
    const started = performance.now();
    const r = await fetch(`${paywallUrl}/paid`, { headers: { 'payment-signature': header } });
    await r.arrayBuffer();
    const ms = performance.now() - started;
    if (r.status === 200) {
      const settlement = decodeHeader(r.headers.get('payment-response'), 'PAYMENT-RESPONSE');
      if (settlement.transaction !== hash) failures.push(`settlement names ${settlement.transaction}, not ${hash}`);
      if (settledOk.has(hash)) failures.push(`${hash} answered 200 twice`);
      settledOk.add(hash);
      await advance(payer, block, hash);
    } else failures.push(`HTTP ${r.status} for ${hash}`);
    return ms;
  }

  async function unpaidRequest() {
    const started = performance.now();
    const r = await fetch(`${paywallUrl}/free`);
    await r.arrayBuffer();
    return performance.now() - started;
  }

  const payers = await Promise.all(Array.from({ length: PAYERS }, newPayer));
  const accepts = await challenge();
  for (let i = 0; i < 20; i++) await unpaidRequest();

  const unpaid = [];
  const paid = [];
  const phasesBefore = await phases();
  for (let i = 0; i < LATENCY_RUNS; i++) {
    unpaid.push(await unpaidRequest());
    paid.push(await paidRequest(payers[i % PAYERS], accepts));
  }
  const phasesAfter = await phases();

  let done = 0;
  Object.assign(spent, { sign: 0, work: 0, ledger: 0 });
  const cpu = { paywall: processCpuSeconds(paywall.pid), bench: cpuMs() };
  const until = performance.now() + LOAD_SECONDS * 1000;
  const loadStarted = performance.now();
  await Promise.all(
    payers.map(async (payer) => {
      while (performance.now() < until) {
        await paidRequest(payer, accepts);
        done++;
      }
    }),
  );
  const loadSeconds = (performance.now() - loadStarted) / 1000;
  const perPaid = (ms) => ms / Math.max(done, 1);
  const load = {
    paywallCpu: perPaid((processCpuSeconds(paywall.pid) - cpu.paywall) * 1000),
    benchCpu: perPaid(cpuMs() - cpu.bench),
    sign: perPaid(spent.sign),
    work: perPaid(spent.work),
    ledger: perPaid(spent.ledger),
  };

  // The ledger's count: every send of a payer to the merchant, against the 200s.
  const merchantKey = addressToPublicKey(merchant);
  const payerSet = new Set(payers.map((p) => p.account.address));
  const onLedger = [...sandbox.service.ledger.blocks.values()].filter((b) => b.subtype === 'send' && payerSet.has(b.account) && b.block.link.toUpperCase() === merchantKey);
  const ledgerHashes = new Set(onLedger.map((b) => b.hash));
  const lost = [...ledgerHashes].filter((h) => !settledOk.has(h)).length;
  const unsettled200 = [...settledOk].filter((h) => !ledgerHashes.has(h)).length;
  const double = onLedger.length - ledgerHashes.size + failures.filter((f) => f.includes('twice')).length;

  paywall.kill('SIGTERM');
  await new Promise((resolve) => paywall.once('close', resolve));
  upstream.close();
  await sandbox.close();
  rmSync(root, { recursive: true, force: true });

  const steps = Object.fromEntries(
    PHASES.map((phase) => {
      const a = phasesBefore.get(phase) ?? { sum: 0, count: 0 };
      const b = phasesAfter.get(phase) ?? { sum: 0, count: 0 };
      return [phase, b.count > a.count ? ((b.sum - a.sum) / (b.count - a.count)) * 1000 : NaN];
    }),
  );
  return {
    unpaid: { median: median(unpaid), p99: quantile(unpaid, 0.99) },
    paid: { median: median(paid), p99: quantile(paid, 0.99) },
    perSecond: done / loadSeconds,
    done,
    loadSeconds,
    steps,
    load,
    ledger: { payments: onLedger.length, ok: settledOk.size, double, lost, unsettled200, failures },
  };
}

const machine = conditions();
console.log(`x402 paywall on the sandbox (dev thresholds, work precomputed), ${PAYERS} payers; ${LATENCY_RUNS} sequential requests each way, then ${LOAD_SECONDS} s of load; ${RUNS} runs`);
console.log(machine.line);
const runs = await repeated(RUNS, run, (r, n) => {
  const l = r.ledger;
  const failures = l.failures.length > 0 ? `\n${l.failures.slice(0, 5).join('\n')}` : '';
  return (
    `run ${n}: paid − unpaid ${(r.paid.median - r.unpaid.median).toFixed(1)} ms (paid ${r.paid.median.toFixed(1)}, unpaid ${r.unpaid.median.toFixed(1)}); ` +
    `${r.done} paid in ${r.loadSeconds.toFixed(1)} s = ${r.perSecond.toFixed(0)}/s; double settlements ${l.double}, lost payments ${l.lost}, 200s without a block ${l.unsettled200}, failures ${l.failures.length}${failures}`
  );
});
console.log(machine.after());

const m = (pick) => median(runs.map(pick));
const f = (x) => `${x.toFixed(1)} ms`;
const overhead = m((r) => r.paid.median - r.unpaid.median);
const perSecond = m((r) => r.perSecond);
const double = runs.reduce((n, r) => n + r.ledger.double, 0);
const lost = runs.reduce((n, r) => n + r.ledger.lost + r.ledger.unsettled200, 0);
const failed = runs.reduce((n, r) => n + r.ledger.failures.length, 0);
latencyTable(runs, 'paid (verify, forward, publish, confirm)');
console.log(`Sustained: ${perSecond.toFixed(0)} paid requests/s from ${PAYERS} payers (runs: ${runs.map((r) => r.perSecond.toFixed(0)).join(', ')})`);

console.log('\nWhere a paid request\'s time goes, in the paywall (mean of each step over the sequential paid requests, ms; head, publish and confirm are round trips to the sandbox):');
console.log(`| ${PHASES.join(' | ')} |`);
console.log(`|${PHASES.map(() => '---').join('|')}|`);
console.log(`| ${PHASES.map((phase) => m((r) => r.steps[phase]).toFixed(2)).join(' | ')} |`);
console.log('CPU per paid request under load (ms): paywall process | this process (sandbox, upstream, payers) | of it: the sandbox ledger checking and applying blocks | the payers signing | the payers\' work (wall time; its own threads)');
console.log(`| ${['paywallCpu', 'benchCpu', 'ledger', 'sign', 'work'].map((k) => m((r) => r.load[k]).toFixed(2)).join(' | ')} |`);
const cpuPerPaid = m((r) => r.load.paywallCpu + r.load.benchCpu);
const cores = cpus().length;
console.log(
  `The two processes need ${cpuPerPaid.toFixed(1)} ms of CPU per paid request: ${cores} cores can carry at most ${((cores * 1000) / cpuPerPaid).toFixed(0)}/s, the paywall's one thread ${(1000 / m((r) => r.load.paywallCpu)).toFixed(0)}/s; ` +
    `under load the processes get only part of the cores, and the rate falls with it.`,
);

console.log(`\nGoals: paid − unpaid ≤ ${GOALS.overheadMs} ms median: ${verdict(overhead <= GOALS.overheadMs)} (${f(overhead)}); ≥ ${GOALS.perSecond} paid requests/s from ${PAYERS} payers: ${verdict(perSecond >= GOALS.perSecond)} (${perSecond.toFixed(0)}/s); 0 double settlements and 0 lost payments: ${verdict(double === 0 && lost === 0 && failed === 0)} (${double} double, ${lost} lost, ${failed} failures)`);
await shutdownWorkers();
