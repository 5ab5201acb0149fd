// npm run bench:x402 — x402 through `nanopay paywall` on the sandbox (dev thresholds, work precomputed off the
// request path, as `work precache` does after each payment): the latency of a paid request against the same request
// unpaid (a free route of the same paywall), and the sustained paid requests per second from 20 payer accounts.
// Afterwards the ledger is counted: every block that got a 200 must be on it once, and no other block of the payers
// may have reached the merchant (0 double settlements, 0 lost payments). Then the one-wallet case: nanopay's own client
// (the SDK's fetchWithPayment, the whole guarded path: policy, journal, lock, signing, the ledger's confirmation) paying
// from one wallet with 8 payment lanes (BENCH_LANES), its node (the sandbox) and its paywall each a process of its own:
// its paid − unpaid latency, the paid requests per second of 8 callers at once, the CPU each process spends per paid
// request, and the ledger counted the same way. A benchmark, not a test: it prints figures, and the load average.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { NanoPay } from '../dist/index.js';
import { KeyStore } from '../dist/wallet/keystore.js';
import { addressToPublicKey, buildReceiveBlock, buildSendBlock, deriveAccount, generateSeed, hashBlock, linkAsAccount, signBlock, workRoot } from '../dist/nano/index.js';
import { startSandbox } from '../dist/sandbox/index.js';
import { generateWork, shutdownWorkers } from '../dist/work/index.js';
import { encodeHeader, decodeHeader } from '../dist/x402/protocol.js';

const PAYERS = Number(process.env.BENCH_PAYERS ?? 20);
const LATENCY_RUNS = Number(process.env.BENCH_LATENCY_RUNS ?? 200);
const LOAD_SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 10);
const LANES = Number(process.env.BENCH_LANES ?? 8);
const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'nanopay-bench-x402-'));

const sandbox = await startSandbox({ port: 0 });
const thresholds = sandbox.service.thresholds;
const upstream = createServer((req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"answer":42}'));
await new Promise((resolve) => upstream.listen(0, '127.0.0.1', resolve));
const upstreamUrl = `http://127.0.0.1:${upstream.address().port}`;

const merchant = deriveAccount({ seed: generateSeed(), index: 0 }).address;
const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('NANOPAY_')));
const env = { ...inherited, HOME: root, NANOPAY_CONFIG_DIR: root, NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: sandbox.url, NO_COLOR: '1' };
const paywall = spawn(process.execPath, [BIN, 'paywall', '--upstream', upstreamUrl, '--price', '0.001', '--route', 'GET /free=0', '--to', merchant, '--json'], { env, stdio: ['ignore', 'pipe', 'ignore'] });
const paywallUrl = await new Promise((resolve, reject) => {
  let out = '';
  paywall.stdout.on('data', (d) => {
    out += d;
    if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]).url);
  });
  paywall.on('close', (code) => reject(new Error(`paywall exited ${code}`)));
});

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

let accepts;
async function challenge() {
  const r = await fetch(`${paywallUrl}/paid`);
  await r.arrayBuffer();
  return decodeHeader(r.headers.get('payment-required'), 'PAYMENT-REQUIRED');
}

function paymentHeader(payer, required) {
  const requirement = required.accepts[0];
  const block = buildSendBlock(payer.head, { to: requirement.payTo, amount: BigInt(requirement.amount) });
  const signed = { ...block, signature: signBlock(block, payer.account.privateKey), work: payer.work, link_as_account: linkAsAccount(block.link) };
  return { header: encodeHeader({ x402Version: 2, resource: required.resource, accepted: requirement, payload: { block: signed } }), block: signed, hash: hashBlock(signed) };
}

/** After a paid 200: the payer's head moves, and the next work is made (off the timed path). */
async function advance(payer, block, hash) {
  payer.head = { ...payer.head, frontier: hash, balance: BigInt(block.balance) };
  payer.work = await generateWork(hash, thresholds.send);
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

const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  return { median: at(0.5), p99: at(0.99) };
};

const payers = await Promise.all(Array.from({ length: PAYERS }, newPayer));
accepts = await challenge();
for (let i = 0; i < 20; i++) await unpaidRequest();

const unpaid = [];
const paid = [];
for (let i = 0; i < LATENCY_RUNS; i++) {
  unpaid.push(await unpaidRequest());
  paid.push(await paidRequest(payers[i % PAYERS], accepts));
}

let done = 0;
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

// The ledger's count: every send of a payer to the merchant, against the 200s.
const merchantKey = addressToPublicKey(merchant);
const payerSet = new Set(payers.map((p) => p.account.address));
const onLedger = [...sandbox.service.ledger.blocks.values()].filter((b) => b.subtype === 'send' && payerSet.has(b.account) && b.block.link.toUpperCase() === merchantKey);
const ledgerHashes = new Set(onLedger.map((b) => b.hash));
const lost = [...ledgerHashes].filter((h) => !settledOk.has(h)).length;
const unsettled200 = [...settledOk].filter((h) => !ledgerHashes.has(h)).length;
const double = onLedger.length - ledgerHashes.size + failures.filter((f) => f.includes('twice')).length;

const u = stats(unpaid);
const p = stats(paid);
const f = (x) => `${x.toFixed(1)} ms`;
console.log(`x402 paywall on the sandbox (dev thresholds, work precomputed), ${PAYERS} payers, ${LATENCY_RUNS} sequential requests each way`);
console.log('| request | median | p99 |');
console.log('|---|---|---|');
console.log(`| unpaid (free route, proxied) | ${f(u.median)} | ${f(u.p99)} |`);
console.log(`| paid (verify, forward, publish, confirm) | ${f(p.median)} | ${f(p.p99)} |`);
console.log(`| paid − unpaid | ${f(p.median - u.median)} | ${f(p.p99 - u.p99)} |`);
console.log(`Sustained: ${done} paid requests in ${loadSeconds.toFixed(1)} s from ${PAYERS} payers = ${(done / loadSeconds).toFixed(0)} paid req/s`);
console.log(`Ledger: ${onLedger.length} payments to the merchant, ${settledOk.size} answered 200; double settlements ${double}, lost payments ${lost}, 200s without a block ${unsettled200}, failures ${failures.length}`);
if (failures.length > 0) console.log(failures.slice(0, 5).join('\n'));

// One wallet, LANES payment lanes, nanopay's own client. Here the sandbox (the node) and the paywall are processes
// of their own, so the CPU each of the three spends on a payment is measured apart.
/** Starts `nanopay ARGS --json` and resolves to the child and its first line, parsed. */
async function started(args, env) {
  const child = spawn(process.execPath, [BIN, ...args, '--json'], { env, stdio: ['ignore', 'pipe', 'ignore'] });
  const printed = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]));
    });
    child.on('close', (code) => reject(new Error(`nanopay ${args[0]} exited ${code}`)));
  });
  return { child, printed };
}
// The sandbox as the first half runs it (state in memory, nothing written per block), in a process of its own.
const sandboxModule = new URL('../dist/sandbox/index.js', import.meta.url).href;
const node = { child: spawn(process.execPath, ['--input-type=module', '-e', `const s = await (await import('${sandboxModule}')).startSandbox({ port: 0 }); console.log(JSON.stringify({ url: s.url }));`], { stdio: ['ignore', 'pipe', 'inherit'] }) };
const nodeUrl = await new Promise((resolve, reject) => {
  let out = '';
  node.child.stdout.on('data', (d) => {
    out += d;
    if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]).url);
  });
  node.child.on('close', (code) => reject(new Error(`the sandbox exited ${code}`)));
});
const laneMerchant = deriveAccount({ seed: generateSeed(), index: 0 }).address;
const lanePaywall = await started(['paywall', '--upstream', upstreamUrl, '--price', '0.001', '--route', 'GET /free=0', '--to', laneMerchant], { ...env, NANOPAY_NODE_URL: nodeUrl });
const lanePaywallUrl = lanePaywall.printed.url;
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
const laneFailures = [];
async function lanePaid() {
  const started = performance.now();
  try {
    const { response, payment } = await nanopay.fetchWithPayment(`${lanePaywallUrl}/paid`, {}, { maxXno: '0.01' });
    await response.arrayBuffer();
    if (response.status !== 200 || payment === undefined) laneFailures.push(`HTTP ${response.status}`);
    else if (paidOk.has(payment.hash)) laneFailures.push(`${payment.hash} paid twice`);
    else paidOk.add(payment.hash);
  } catch (error) {
    laneFailures.push(error.code ?? error.message);
  }
  return performance.now() - started;
}
async function laneUnpaidRequest() {
  const started = performance.now();
  const r = await fetch(`${lanePaywallUrl}/free`);
  await r.arrayBuffer();
  return performance.now() - started;
}
for (let i = 0; i < 10; i++) await lanePaid();
const laneUnpaid = [];
const lanePaidMs = [];
for (let i = 0; i < LATENCY_RUNS; i++) {
  laneUnpaid.push(await laneUnpaidRequest());
  lanePaidMs.push(await lanePaid());
}
/** CPU time (ms) a process of this host used so far, from /proc (Linux): user and system, in clock ticks of 10 ms. */
const cpuOf = (pid) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};
await nanopay.lanesIdle();
const cpuBefore = { client: cpuOf(process.pid), node: cpuOf(node.child.pid), paywall: cpuOf(lanePaywall.child.pid) };
let laneDone = 0;
const laneUntil = performance.now() + LOAD_SECONDS * 1000;
const laneStarted = performance.now();
await Promise.all(
  Array.from({ length: LANES }, async () => {
    while (performance.now() < laneUntil) {
      await lanePaid();
      laneDone++;
    }
  }),
);
const laneSeconds = (performance.now() - laneStarted) / 1000;
await nanopay.lanesIdle();
const cpuPer = Object.fromEntries(Object.entries({ client: process.pid, node: node.child.pid, paywall: lanePaywall.child.pid }).map(([name, pid]) => [name, (cpuOf(pid) - cpuBefore[name]) / laneDone]));
const laneKey = addressToPublicKey(laneMerchant);
const dump = (await (await fetch(`${nodeUrl}/sandbox/ledger`)).json()).data;
const fromLanes = dump.blocks.filter((b) => b.subtype === 'send' && laneSet.has(b.account) && b.link.toUpperCase() === laneKey);
const laneHashes = new Set(fromLanes.map((b) => b.hash));
const lu = stats(laneUnpaid);
const lp = stats(lanePaidMs);
const cpuTotal = cpuPer.client + cpuPer.node + cpuPer.paywall;
console.log('');
console.log(`One wallet, ${LANES} lanes, nanopay's client (SDK fetchWithPayment: 402, policy, journal, sign, present, confirmation seen), ${LATENCY_RUNS} sequential requests each way`);
console.log('| request | median | p99 |');
console.log('|---|---|---|');
console.log(`| unpaid (free route, proxied) | ${f(lu.median)} | ${f(lu.p99)} |`);
console.log(`| paid from a lane (the whole client path) | ${f(lp.median)} | ${f(lp.p99)} |`);
console.log(`| paid − unpaid | ${f(lp.median - lu.median)} | ${f(lp.p99 - lu.p99)} |`);
console.log(`Sustained: ${laneDone} paid requests in ${laneSeconds.toFixed(1)} s from one wallet (${LANES} callers at once) = ${(laneDone / laneSeconds).toFixed(0)} paid req/s`);
console.log(`CPU per paid request: client ${cpuPer.client.toFixed(1)} ms, node (sandbox) ${cpuPer.node.toFixed(1)} ms, paywall ${cpuPer.paywall.toFixed(1)} ms (all three on 2 cores: at most ${(2000 / cpuTotal).toFixed(0)} paid req/s)`);
console.log(`Ledger: ${fromLanes.length} payments from the lanes to the merchant, ${paidOk.size} paid; double payments ${fromLanes.length - laneHashes.size}, lost ${[...laneHashes].filter((h) => !paidOk.has(h)).length}, paid without a block ${[...paidOk].filter((h) => !laneHashes.has(h)).length}, failures ${laneFailures.length}`);
if (laneFailures.length > 0) console.log(laneFailures.slice(0, 5).join('\n'));
console.log(`Load average (1, 5, 15 min) at the end: ${loadavg().map((l) => l.toFixed(2)).join(', ')}`);
await nanopay.session.close();
for (const child of [lanePaywall.child, node.child]) {
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('close', resolve));
}

paywall.kill('SIGTERM');
await new Promise((resolve) => paywall.once('close', resolve));
upstream.close();
await sandbox.close();
await shutdownWorkers();
rmSync(root, { recursive: true, force: true });
