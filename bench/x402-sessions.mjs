// npm run bench:x402 (its session part; alone: npm run bench:x402-sessions) — Nano sessions through `nanopay paywall
// --sessions` on the sandbox: a request paid by voucher in an open session against the same request unpaid (a free
// route of the same paywall), paid calls per second on one paywall from BENCH_SESSIONS sessions at once, and the time
// to open a session (deposit settled) and to close it (refund sent). The buyers speak the wire as a second
// implementation would (docs/x402-sessions.md): voucher, session key, deposit. Then the paywall is killed (-9) in the
// middle of the load and started again, and every session is closed: each refund must be the deposit less the calls
// that got a 200 (0 raw lost), and every 200 must have carried a voucher the seller kept (0 served unpaid).
// A benchmark, not a test: it prints figures.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { buildReceiveBlock, buildSendBlock, deriveAccount, generateSeed, hashBlock, linkAsAccount, signBlock, workRoot, xnoToRaw } from '../dist/nano/index.js';
import { signMessage } from '../dist/nano/ed25519.js';
import { startSandbox } from '../dist/sandbox/index.js';
import { generateWork, shutdownWorkers } from '../dist/work/index.js';
import { encodeHeader, decodeHeader } from '../dist/x402/protocol.js';
import { closeMessage, newSessionKey, openMessage, requestDigest, signWithSessionKey, voucherMessage } from '../dist/x402/sessions/wire.js';
import { conditions, median, quantile } from './conditions.mjs';

const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 64);
const LATENCY_RUNS = Number(process.env.BENCH_LATENCY_RUNS ?? 500);
const LOAD_SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 5);
const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url));
const PRICE = '0.000001';
const DEPOSIT = '1';
const GOALS = { overheadMs: 2, perSecond: 2000 };
const agent = new Agent({ keepAlive: true, maxSockets: SESSIONS * 2 });

function get(url, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end();
  });
}

function post(url, body) {
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const req = request(url, { agent, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: JSON.parse(Buffer.concat(chunks).toString() || '{}') }));
    });
    req.on('error', reject);
    req.end(data);
  });
}

async function startPaywall(env, upstreamUrl, port = 0) {
  const args = [BIN, 'paywall', '--upstream', upstreamUrl, '--price', PRICE, '--route', 'GET /free=0', '--sessions', '--session-deposit', DEPOSIT, '--port', String(port), '--json'];
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'ignore'] });
  const printed = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]));
    });
    child.once('exit', (code) => reject(new Error(`paywall exited ${code}`)));
  });
  return { child, url: printed.url };
}

/** A buyer account opened on the sandbox with 2 XNO, its session opened with a deposit; returns what a buyer keeps. */
async function openSession(sandbox, offer) {
  const payer = deriveAccount({ seed: generateSeed(), index: 0 });
  const { hash: source } = sandbox.service.fund(payer.address, '2');
  const open = buildReceiveBlock({ address: payer.address, frontier: null, balance: 0n, representative: payer.address }, { sourceHash: source, amount: xnoToRaw('2') });
  const opened = { ...open, signature: signBlock(open, payer.privateKey), work: await generateWork(workRoot(open), sandbox.service.thresholds.receive) };
  sandbox.service.publish(opened, 'open');
  const head = { address: payer.address, frontier: hashBlock(opened), balance: BigInt(opened.balance), representative: opened.representative };
  const unsigned = buildSendBlock(head, { to: offer.payTo, amount: xnoToRaw(DEPOSIT) });
  const work = await generateWork(workRoot(unsigned), offer.extra.workThreshold);
  const block = { ...unsigned, work, signature: signBlock(unsigned, payer.privateKey) };
  const key = newSessionKey();
  const id = hashBlock(block);
  const started = performance.now();
  const answer = await post(offer.extra.sessions, {
    x402Version: 2,
    accepted: offer,
    payload: { block: { ...block, link_as_account: linkAsAccount(block.link) }, deposit: xnoToRaw(DEPOSIT).toString(), sessionKey: key.publicKey, signature: signMessage(openMessage(offer.network, offer.payTo, id, key.publicKey), payer.privateKey) },
  });
  if (answer.status !== 200) throw new Error(`open: ${answer.status} ${JSON.stringify(answer.body)}`);
  return { id, key, payer, offer, counter: 0, spent: 0n, served: 0n, openMs: performance.now() - started };
}

function voucherHeaders(s, path) {
  const unsigned = { session: s.id, counter: s.counter + 1, spent: (s.spent + BigInt(s.offer.amount)).toString(), request: requestDigest('GET', path, undefined) };
  return { 'payment-signature': encodeHeader({ x402Version: 2, accepted: s.offer, payload: { ...unsigned, signature: signWithSessionKey(s.key.seed, voucherMessage(unsigned)) } }) };
}

async function paidCall(base, s, path) {
  const answer = await get(`${base}${path}`, voucherHeaders(s, path));
  s.counter += 1;
  if (answer.status === 200) {
    const standing = decodeHeader(answer.headers['payment-response'], 'PAYMENT-RESPONSE').session;
    s.spent = BigInt(standing.spent_raw);
    s.served += BigInt(s.offer.amount);
  }
  return answer.status;
}

async function main() {
  const before = conditions();
  const root = mkdtempSync(join(tmpdir(), 'nanopay-bench-sessions-'));
  const sandbox = await startSandbox({ port: 0 });
  const upstream = createServer((req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"answer":42}'));
  await new Promise((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const upstreamUrl = `http://127.0.0.1:${upstream.address().port}`;
  const env = { ...Object.fromEntries(Object.entries(process.env).filter(([n]) => !n.startsWith('NANOPAY_'))), HOME: root, NANOPAY_CONFIG_DIR: root, NANOPAY_PASSWORD: 'bench password 1', NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: sandbox.url, NO_COLOR: '1' };
  await new Promise((resolve, reject) => spawn(process.execPath, [BIN, 'wallet', 'create', '--json'], { env, stdio: 'ignore' }).once('exit', (c) => (c === 0 ? resolve() : reject(new Error(`wallet create ${c}`)))));
  let paywall = await startPaywall(env, upstreamUrl);
  try {
    const challenge = await get(`${paywall.url}/data`);
    const offer = decodeHeader(challenge.headers['payment-required'], 'PAYMENT-REQUIRED').accepts.find((a) => a.scheme === 'nano-session');
    const sessions = [];
    for (let i = 0; i < SESSIONS; i++) sessions.push(await openSession(sandbox, offer));

    // Latency: the same request unpaid (a free route) and paid in a session, alternating, one at a time.
    const unpaid = [];
    const paid = [];
    const s0 = sessions[0];
    for (let i = 0; i < 50; i++) await paidCall(paywall.url, s0, '/data');
    for (let i = 0; i < LATENCY_RUNS; i++) {
      let t = performance.now();
      const free = await get(`${paywall.url}/free`);
      unpaid.push(performance.now() - t);
      t = performance.now();
      const status = await paidCall(paywall.url, s0, '/data');
      paid.push(performance.now() - t);
      if (free.status !== 200 || status !== 200) throw new Error(`latency run: ${free.status} / ${status}`);
    }

    // Load: every session calls as fast as it is answered, one call at a time each, for LOAD_SECONDS.
    const loadOn = async (seconds) => {
      let done = 0;
      const until = performance.now() + seconds * 1000;
      const started = performance.now();
      await Promise.all(sessions.map(async (s) => {
        while (performance.now() < until) {
          const status = await paidCall(paywall.url, s, '/data').catch(() => 0);
          if (status === 200) done++;
        }
      }));
      return done / ((performance.now() - started) / 1000);
    };
    const perSecond = await loadOn(LOAD_SECONDS);

    // kill -9 of the seller under load, then started again on the same port: what it served, it kept. BENCH_KILL=0
    // leaves it out (to profile the paywall: NODE_OPTIONS=--cpu-prof writes its profile when it stops).
    if (process.env.BENCH_KILL !== '0') {
      const port = new URL(paywall.url).port;
      const killedUnder = loadOn(2);
      await new Promise((resolve) => setTimeout(resolve, 700));
      paywall.child.kill('SIGKILL');
      await killedUnder;
      paywall = await startPaywall(env, upstreamUrl, Number(port));
    }
    for (const s of sessions) {
      const standing = (await get(`${paywall.url}/.well-known/x402/sessions/${s.id}`)).body;
      const seen = JSON.parse(standing);
      // A call answered 200 the buyer never saw (the kill) is charged but not counted here: the voucher allowed it.
      s.counter = Math.max(s.counter, seen.counter);
      s.spent = BigInt(seen.spent_raw);
    }

    // Close: every refund is the deposit less what was charged, and what was charged is what got a 200 (or was allowed).
    const closeMs = [];
    let lost = 0n;
    let unvouched = 0;
    for (const s of sessions) {
      const t = performance.now();
      const closed = await post(`${paywall.url}/.well-known/x402/sessions/${s.id}/close`, { signature: signWithSessionKey(s.key.seed, closeMessage(s.id)) });
      closeMs.push(performance.now() - t);
      const receipt = closed.body.receipt;
      const charged = BigInt(receipt.spent_raw);
      if (charged < s.served) unvouched++;
      lost += BigInt(receipt.deposit_raw) - charged - BigInt(receipt.refund_raw);
      if (charged > BigInt(receipt.final_voucher?.spent ?? '0')) unvouched++;
    }
    const overhead = median(paid) - median(unpaid);
    console.log(`nano-session through nanopay paywall --sessions (sandbox, ${SESSIONS} sessions, price ${PRICE} XNO, deposit ${DEPOSIT} XNO)`);
    console.log(`  ${before.line}`);
    console.log(`  unpaid / paid in a session: median ${median(unpaid).toFixed(2)} / ${median(paid).toFixed(2)} ms; p99 ${quantile(unpaid, 0.99).toFixed(2)} / ${quantile(paid, 0.99).toFixed(2)} ms`);
    console.log(`  paid − unpaid: median ${overhead.toFixed(2)} ms (goal ≤ ${GOALS.overheadMs} ms: ${overhead <= GOALS.overheadMs ? 'met' : 'missed'})`);
    console.log(`  paid calls per second on one paywall: ${perSecond.toFixed(0)}/s from ${SESSIONS} sessions (goal ≥ ${GOALS.perSecond}/s: ${perSecond >= GOALS.perSecond ? 'met' : 'missed'})`);
    console.log(`  open (deposit settled): median ${median(sessions.map((s) => s.openMs)).toFixed(1)} ms; close (refund sent): median ${median(closeMs).toFixed(1)} ms`);
    console.log(`  after kill -9 of the seller under load: ${lost} raw lost, ${unvouched} sessions charged beyond a voucher or served unpaid`);
    console.log(`  ${before.after()}`);
  } finally {
    const stopped = new Promise((resolve) => paywall.child.once('exit', resolve));
    paywall.child.kill('SIGTERM');
    await stopped;
    upstream.close();
    agent.destroy();
    await sandbox.close();
    await shutdownWorkers();
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
