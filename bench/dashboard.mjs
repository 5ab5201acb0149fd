// npm run bench:dashboard — the operator dashboard's orders list with 100,000 requests in the shop's store
// (issue 44): each page (its rows and the selection's totals) asked through the real route by a signed-in operator,
// on SQLite and on PostgreSQL (a private cluster; skipped without Debian's binaries). Goal: every page under 200 ms.
// A benchmark: it prints figures.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LiveChanges } from '../dist/dashboard/live.js';
import { dashboardRoutes } from '../dist/dashboard/routes.js';
import { startHttpServer } from '../dist/http/server.js';
import { addOperator } from '../dist/ops/access/operators.js';
import { SEARCH_COLUMNS, searchValues } from '../dist/store/shop-search.js';
import { PostgresStore } from '../dist/store/postgres.js';
import { SqliteStore } from '../dist/store/sqlite.js';
import { startCluster } from './postgres-cluster.mjs';

const COUNT = Number(process.env.BENCH_REQUESTS ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const GOAL_MS = 200;
const ADDRESS = 'nano_1111111111111111111111111111111111111111111111111111hifc8npp';
const STATUSES = ['waiting', 'paid', 'paid', 'paid', 'expired', 'underpaid', 'overpaid', 'paid_late', 'partially_refunded', 'refunded'];
const START = Date.parse('2026-01-01T00:00:00Z');
const dirs = [];
const tempDir = (name) => {
  const dir = mkdtempSync(join(tmpdir(), `nanopay-bench-${name}-`));
  dirs.push(dir);
  return dir;
};

/** The i-th request: a status of the mix, a time over a year, an amount from 0.001 to 100 XNO, a fifth priced in EUR. */
function request(i) {
  const status = STATUSES[i % STATUSES.length];
  const amountRaw = (BigInt(1 + ((i * 7919) % 100_000)) * 10n ** 27n).toString();
  const created = new Date(START + Math.floor((i / COUNT) * 365 * 86_400_000)).toISOString();
  return {
    id: randomUUID(),
    status,
    currency: 'XNO',
    amount: '1',
    amount_raw: amountRaw,
    receive_address: ADDRESS,
    uri: `nano:${ADDRESS}`,
    created_at: created,
    order_id: `order-${i}`,
    metadata: { cart: i },
    events: 1,
    ...(status === 'underpaid' ? { received_raw: (BigInt(amountRaw) / 2n).toString() } : {}),
    ...(status === 'refunded' || status === 'partially_refunded' ? { refunded_amount_raw: (BigInt(amountRaw) / (status === 'refunded' ? 1n : 3n)).toString() } : {}),
    ...(i % 5 === 0 ? { fiat: { currency: 'EUR', amount: '1.00', rate: '0.8523', rate_source: 'https://rates.example', rate_time: created } } : {}),
  };
}

const COLUMNS = ['id', 'status', 'order_id', 'doc', ...SEARCH_COLUMNS];
const row = (r) => [r.id, r.status, r.order_id, JSON.stringify(r), ...searchValues(r)];

async function fillSqlite(store) {
  const insert = store.db.prepare(`INSERT INTO shop_requests (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map(() => '?').join(', ')})`);
  store.db.transaction(() => {
    for (let i = 0; i < COUNT; i++) insert.run(...row(request(i)));
  })();
}

async function fillPostgres(store) {
  const BATCH = 1000;
  for (let start = 0; start < COUNT; start += BATCH) {
    const values = [];
    const tuples = [];
    for (let i = start; i < Math.min(COUNT, start + BATCH); i++) {
      const base = values.length;
      values.push(...row(request(i)));
      tuples.push(`(${COLUMNS.map((_, c) => `$${base + c + 1}`).join(', ')})`);
    }
    await store.query(`INSERT INTO shop_requests (${COLUMNS.join(', ')}) VALUES ${tuples.join(', ')}`, values);
  }
  await store.query('ANALYZE shop_requests');
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];

async function bench(label, store, fill) {
  let started = performance.now();
  await fill(store);
  const fillS = (performance.now() - started) / 1000;
  await addOperator(store, { name: 'bench', role: 'read', password: 'bench password 12' });
  const server = await startHttpServer({
    host: '127.0.0.1',
    port: 0,
    routes: dashboardRoutes({
      store,
      shopName: 'Bench',
      testMode: () => false,
      secureCookie: false,
      checkoutUrl: (id) => `/checkout/${id}`,
      claimUrl: (token) => `/claim/${token}`,
      refund: () => Promise.reject(new Error('not in a bench')),
      createClaim: () => Promise.reject(new Error('not in a bench')),
      live: new LiveChanges(),
    }),
  });
  try {
    const signedIn = await fetch(`${server.url}/dashboard/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ name: 'bench', password: 'bench password 12' }),
    });
    const cookie = signedIn.headers.get('set-cookie').split(';')[0];
    const deep = `c${Math.floor(COUNT / 20)}`;
    const pages = [
      ['first page (all, newest first, totals of 100,000)', ''],
      ['status paid, one month', 'status=paid&from=2026-06-01&to=2026-06-30'],
      ['deep page (95% down, by keyset)', `after=${deep}`],
      ['by amount, largest first, 10 to 50 XNO', 'sort=amount&dir=desc&min=10&max=50'],
      ['by amount, smallest first, 100 a page', 'sort=amount&dir=asc&limit=100'],
      ['one order id', 'order_id=order-4242'],
    ];
    console.log(`\n${label}: ${COUNT.toLocaleString('en-US')} requests (filled in ${fillS.toFixed(1)} s), ${ROUNDS} rounds each`);
    let worst = 0;
    for (const [name, query] of pages) {
      const times = [];
      for (let round = 0; round < ROUNDS + 2; round++) {
        started = performance.now();
        const answer = await fetch(`${server.url}/dashboard/orders?${query}`, { headers: { cookie } });
        const html = await answer.text();
        if (answer.status !== 200 || !html.includes('Totals of this selection')) throw new Error(`${name}: ${answer.status}`);
        // The first two warm the caches: a dashboard is looked at more than once.
        if (round >= 2) times.push(performance.now() - started);
      }
      times.sort((a, b) => a - b);
      const p95 = percentile(times, 0.95);
      worst = Math.max(worst, p95);
      console.log(`  ${name.padEnd(52)} median ${percentile(times, 0.5).toFixed(1).padStart(6)} ms   p95 ${p95.toFixed(1).padStart(6)} ms`);
    }
    console.log(`  worst p95 ${worst.toFixed(1)} ms: ${worst < GOAL_MS ? 'under' : 'OVER'} the ${GOAL_MS} ms goal`);
  } finally {
    await server.close();
    await store.close();
  }
}

try {
  const dir = tempDir('dashboard');
  await bench('SQLite', await SqliteStore.open(join(dir, 'store.sqlite'), join(dir, 'locks'), 'bench'), fillSqlite);
  const cluster = await startCluster(tempDir('pg'));
  if (cluster.skipped !== undefined) console.log(`\nPostgreSQL: skipped (${cluster.skipped})`);
  else {
    try {
      await bench('PostgreSQL', await PostgresStore.open(await cluster.database()), fillPostgres);
    } finally {
      await cluster.stop();
    }
  }
} finally {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}
