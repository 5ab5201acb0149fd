// npm run bench:checkout — the shop server (checkout serve, issue 26), on the sandbox's node with its WebSocket:
// 1. VIEWERS live pages (Server-Sent Events) over REQUESTS requests (--fresh-addresses); each request is paid, and for every
//    viewer the time from the node accepting the payer's block to the page's "paid" event is taken (both
//    instants in this process; the sandbox runs here): p50, p99, max; the server's memory (RSS, and its peak)
//    with every viewer connected;
// 2. requests created per second through the API (16 at once) with 100,000 requests already in the store, and where a
//    creation's time goes: the store calls (the server's nanopay_store_operation_seconds, read on --metrics-listen; the
//    shop's row and the payment request are one transaction, its commit one fsync), an fsync on this disk, the server's CPU.
// Each part runs BENCH_RUNS times (3; a new server each time) and the median is reported, with the Node.js version, the
// CPU and the load before and after. A benchmark, not a test: it prints figures.
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest, Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { closeSync, fdatasyncSync, openSync, writeSync } from 'node:fs';
import { payUri } from '../dist/ops/requests/payments.js';
import { Session } from '../dist/ops/session.js';
import { startSandbox } from '../dist/sandbox/index.js';
import { conditions, histogramSums, median, processCpuSeconds, quantile, repeated, verdict } from './conditions.mjs';

const VIEWERS = Number(process.env.BENCH_VIEWERS ?? 1000);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 100);
const FILLED = Number(process.env.BENCH_FILLED ?? 100_000);
const CREATED = Number(process.env.BENCH_CREATED ?? 1000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const GOALS = { viewersP99Ms: 1000, createdPerSecond: 200 };
const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url));
const PASSWORD = 'bench password';
const root = mkdtempSync(join(tmpdir(), 'nanopay-bench-checkout-'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const sandbox = await startSandbox({ port: 0 });
const accepted = new Map();
sandbox.service.ledger.listeners.add((block) => accepted.set(block.hash, performance.now()));
const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('NANOPAY_')));
const envOf = (name) => ({
  ...inherited,
  HOME: join(root, name),
  NANOPAY_CONFIG_DIR: join(root, name),
  NANOPAY_PASSWORD: PASSWORD,
  NANOPAY_BACKEND: 'node',
  NANOPAY_NODE_URL: sandbox.url,
  NANOPAY_NODE_WS_URL: sandbox.wsUrl,
  NANOPAY_API_URL: sandbox.url,
  NO_COLOR: '1',
});

function cli(env, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args, '--json'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`nanopay ${args.join(' ')} exited ${code}: ${out}`))));
  });
}

/** checkout serve as a child process; resolves once it listens. */
function serve(env, args = []) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'checkout', 'serve', '--json', '--max-streams', String(VIEWERS * 2), '--max-streams-per-client', String(VIEWERS * 2), ...args], {
      env,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      if (out.includes('\n')) {
        const printed = JSON.parse(out.split('\n')[0]);
        resolve({ child, ...printed, token: readFileSync(printed.token_file, 'utf8').trim() });
      }
    });
    child.on('close', (code) => reject(new Error(`checkout serve exited ${code}`)));
  });
}

function stop(server) {
  return new Promise((resolve) => {
    server.child.removeAllListeners('close');
    server.child.once('close', resolve);
    server.child.kill('SIGTERM');
  });
}

const memory = (pid) => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
};

const api = async (server, path, body) => {
  const r = await fetch(`${server.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${server.token}` },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const answer = await r.json();
  if (!answer.success) throw new Error(JSON.stringify(answer));
  return answer.data;
};


// Part 1: viewers.
const machine = conditions();
console.log(`checkout serve on the sandbox's node: ${VIEWERS} live pages over ${REQUESTS} requests; ${CREATED} requests created (16 at once) over ${FILLED} in the store; ${RUNS} runs`);
console.log(machine.line);
const merchant = envOf('merchant');
const customer = envOf('customer');
await cli(merchant, ['wallet', 'create']);
const { address: payer } = await cli(customer, ['wallet', 'create']);
sandbox.service.fund(payer, String(1000 * RUNS));
await cli(customer, ['receive']);
const session = new Session({ password: async () => PASSWORD, env: customer });

async function viewersRun() {
  // Each request its own account (--fresh-addresses): a confirmation wakes the reads of that request alone, and a read
  // proves only that account's blocks (on one shared address every read proves every payment to it).
  const server = await serve(merchant, ['--fresh-addresses']);
  const requests = [];
  for (let i = 0; i < REQUESTS; i++) requests.push(await api(server, '/api/v1/requests', { amount: '0.01', order_id: `bench-${randomUUID()}` }));

  const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
  const viewers = [];
  for (let v = 0; v < VIEWERS; v++) {
    const request = requests[v % REQUESTS];
    viewers.push(
      await new Promise((resolve, reject) => {
        const viewer = { request, paidAt: undefined, text: '' };
        const req = httpRequest(`${request.checkout_url}/events`, { agent }, (res) => {
          if (res.statusCode !== 200) return reject(new Error(`viewer ${v}: ${res.statusCode}`));
          res.on('data', (d) => {
            viewer.text += d;
            if (viewer.paidAt === undefined && viewer.text.includes('"state":"paid"')) viewer.paidAt = performance.now();
          });
          res.on('error', () => undefined);
          viewer.close = () => req.destroy();
          resolve(viewer);
        });
        req.on('error', reject);
        req.end();
      }),
    );
  }
  await sleep(500);
  const connected = memory(server.child.pid);
  const blockOf = new Map();
  for (const request of requests) {
    const sent = await payUri(session, request.uri, {});
    blockOf.set(request.id, sent.hash);
  }
  const deadline = Date.now() + 60_000;
  while (viewers.some((v) => v.paidAt === undefined) && Date.now() < deadline) await sleep(50);
  const latencies = viewers.filter((v) => v.paidAt !== undefined).map((v) => v.paidAt - accepted.get(blockOf.get(v.request.id)));
  const after = memory(server.child.pid);
  for (const v of viewers) v.close();
  await stop(server);
  return { saw: latencies.length, p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99), max: Math.max(...latencies), rss: connected.rss, peak: after.peak };
}

const viewerRuns = await repeated(RUNS, viewersRun, (r, n) =>
  `viewers run ${n}: ${r.saw} of ${VIEWERS} saw their payment; block accepted -> "paid" on the page p50 ${r.p50.toFixed(0)} ms, p99 ${r.p99.toFixed(0)} ms, max ${r.max.toFixed(0)} ms; server ${r.rss.toFixed(0)} MB RSS with every viewer connected, peak ${r.peak.toFixed(0)} MB`,
);

// Part 2: creation with a full store.
const shop = envOf('shop');
await cli(shop, ['wallet', 'create']);
const first = await cli(shop, ['request', '0.001']);
{
  const filling = new Session({ password: async () => PASSWORD, env: shop });
  const store = await filling.dataStore();
  const now = Date.now();
  const records = Array.from({ length: FILLED }, (_, i) => ({
    id: randomUUID(),
    address: first.receive_address,
    baseRaw: '1000000000000000000000000000',
    amountRaw: (10n ** 27n + BigInt(`0x${randomBytes(6).toString('hex')}`)).toString(),
    createdAt: new Date(now - (FILLED - i) * 1000).toISOString(),
    ...(i % 10 === 3 ? { paidBy: [randomBytes(32).toString('hex').toUpperCase()] } : { expiresAt: new Date(now - 1000).toISOString() }),
  }));
  for (let i = 0; i < FILLED; i += 10_000) await store.requests.importAll(records.slice(i, i + 10_000));
  // One transaction for the history (the store's own create() commits each row: minutes for 100,000).
  const insert = store.db.prepare('INSERT INTO shop_requests (id, status, order_id, doc) VALUES (?, ?, ?, ?)');
  store.db.transaction(() => {
    for (const [i, r] of records.entries()) {
      // A shop's history: settled (paid, or expired unpaid), as requests are a day after they were made.
      const status = r.paidBy === undefined ? 'expired' : 'paid';
      const doc = { id: r.id, status, currency: 'XNO', amount: '0.001', amount_raw: r.amountRaw, receive_address: r.address, uri: `nano:${r.address}`, created_at: r.createdAt, order_id: `old-${i}`, events: 1 };
      insert.run(r.id, status, doc.order_id, JSON.stringify(doc));
    }
  })();
  await store.close();
}
/** One fsync of 4 KiB rewritten in place in the store's directory: what each commit of the store waits for (its WAL's, reused from its start after each checkpoint). */
function fsyncMs(dir) {
  const path = join(dir, 'bench-fsync');
  const fd = openSync(path, 'w');
  const times = [];
  try {
    writeSync(fd, Buffer.alloc(4096), 0, 4096, 0);
    fdatasyncSync(fd);
    for (let i = 0; i < 20; i++) {
      writeSync(fd, Buffer.alloc(4096, i), 0, 4096, 0);
      const started = performance.now();
      fdatasyncSync(fd);
      times.push(performance.now() - started);
    }
  } finally {
    closeSync(fd);
    rmSync(path);
  }
  return median(times);
}

async function creationRun() {
  const full = await serve(shop, ['--metrics-listen', '127.0.0.1:0', ...(process.env.BENCH_POLL === undefined ? [] : ['--poll-interval', process.env.BENCH_POLL])]);
  const scrape = async () => histogramSums(await (await fetch(`${full.metrics_url}/metrics`)).text(), 'nanopay_store_operation_seconds', 'op');
  const before = await scrape();
  const cpuBefore = processCpuSeconds(full.child.pid);
  const started = performance.now();
  const latencies = [];
  let made = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (made < CREATED) {
        made++;
        const sent = performance.now();
        await api(full, '/api/v1/requests', { amount: '0.002', order_id: randomUUID() });
        latencies.push(performance.now() - sent);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpuMs = ((processCpuSeconds(full.child.pid) - cpuBefore) * 1000) / CREATED;
  const after = await scrape();
  const listed = await api(full, '/api/v1/requests?limit=1');
  await stop(full);
  const ops = Object.fromEntries(
    [...after.keys()].flatMap((op) => {
      const a = before.get(op) ?? { sum: 0, count: 0 };
      const b = after.get(op) ?? { sum: 0, count: 0 };
      return b.count > a.count ? [[op, { perRequest: (b.count - a.count) / CREATED, ms: ((b.sum - a.sum) / (b.count - a.count)) * 1000 }]] : [];
    }),
  );
  return { perSecond: CREATED / seconds, p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99), cpuMs, ops, listed: listed.data.length };
}

const creationRuns = await repeated(RUNS, creationRun, (r, n) =>
  `creation run ${n}: ${CREATED} requests in ${(CREATED / r.perSecond).toFixed(1)} s = ${r.perSecond.toFixed(0)}/s; each p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms (16 waiting at once); newest listed ${r.listed}`,
);
const fsync = fsyncMs(join(root, 'shop'));
console.log(machine.after());

const m = (runs, pick) => median(runs.map(pick));
const p99 = m(viewerRuns, (r) => r.p99);
const perSecond = m(creationRuns, (r) => r.perSecond);
console.log(`\nMedian of ${RUNS} runs:`);
console.log(`viewers: ${VIEWERS} live pages over ${REQUESTS} requests; block accepted -> "paid" on the page: p50 ${m(viewerRuns, (r) => r.p50).toFixed(0)} ms, p99 ${p99.toFixed(0)} ms, max ${m(viewerRuns, (r) => r.max).toFixed(0)} ms; server ${m(viewerRuns, (r) => r.rss).toFixed(0)} MB RSS with every viewer connected, peak ${m(viewerRuns, (r) => r.peak).toFixed(0)} MB`);
console.log(`creation: ${perSecond.toFixed(0)}/s with ${FILLED} requests already in the store (runs: ${creationRuns.map((r) => r.perSecond.toFixed(0)).join(', ')})`);
// The store calls the server timed (those made through its request lock, the amount's offset checks, are not among them).
const ops = [...new Set(creationRuns.flatMap((r) => Object.keys(r.ops)))].sort();
const op = (r, name, key) => r.ops[name]?.[key] ?? 0;
console.log('\nWhere a creation\'s time goes (mean per created request): the store calls the server times (calls per request × ms each; shop.create is the one write transaction, the shop\'s row and the payment request, its commit one fsync), an fsync on this disk, the server\'s CPU:');
console.log(`| ${ops.map((name) => `${name} | `).join('')}fsync | server CPU |`);
console.log(`|${[...ops, 'fsync', 'cpu'].map(() => '---').join('|')}|`);
console.log(`| ${ops.map((name) => `${m(creationRuns, (r) => op(r, name, 'perRequest')).toFixed(2)} × ${m(creationRuns, (r) => op(r, name, 'ms')).toFixed(2)} ms | `).join('')}${fsync.toFixed(2)} ms | ${m(creationRuns, (r) => r.cpuMs).toFixed(2)} ms |`);
console.log(`\nGoals: creation ≥ ${GOALS.createdPerSecond}/s with ${FILLED} in the store, 16 at once: ${verdict(perSecond >= GOALS.createdPerSecond)} (${perSecond.toFixed(0)}/s); ${VIEWERS} viewers, block -> page p99 < ${GOALS.viewersP99Ms} ms: ${verdict(p99 < GOALS.viewersP99Ms && viewerRuns.every((r) => r.saw === VIEWERS))} (${p99.toFixed(0)} ms)`);

await sandbox.close();
rmSync(root, { recursive: true, force: true });
