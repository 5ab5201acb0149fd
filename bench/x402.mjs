// npm run bench:x402 — x402 through `nanopay paywall` on the sandbox (dev thresholds, work precomputed off the
// request path, as `work precache` does after each payment): the latency of a paid request against the same request
// unpaid (a free route of the same paywall), and the sustained paid requests per second from 20 payer accounts.
// Afterwards the ledger is counted: every block that got a 200 must be on it once, and no other block of the payers
// may have reached the merchant (0 double settlements, 0 lost payments). A benchmark, not a test: it prints figures.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { addressToPublicKey, buildReceiveBlock, buildSendBlock, deriveAccount, generateSeed, hashBlock, linkAsAccount, signBlock, workRoot } from '../dist/nano/index.js';
import { startSandbox } from '../dist/sandbox/index.js';
import { generateWork, shutdownWorkers } from '../dist/work/index.js';
import { encodeHeader, decodeHeader } from '../dist/x402/protocol.js';

const PAYERS = Number(process.env.BENCH_PAYERS ?? 20);
const LATENCY_RUNS = Number(process.env.BENCH_LATENCY_RUNS ?? 200);
const LOAD_SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 10);
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

paywall.kill('SIGTERM');
await new Promise((resolve) => paywall.once('close', resolve));
upstream.close();
await sandbox.close();
await shutdownWorkers();
rmSync(root, { recursive: true, force: true });
