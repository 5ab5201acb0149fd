// npm run bench:store — the store with many payment requests (node backend, issue 27):
// 1. `request` and `status` (the built CLI, one process each, through an unlocked session) with 0, 10,000 and
//    100,000 requests in the store: median time and peak memory (max RSS), as a ratio to the empty store
//    (goal <= 1.2x at 100,000), on SQLite and on PostgreSQL;
// 2. requests created per second by one process through the store, one after another and 16 at once;
// 3. on PostgreSQL, how long a status change takes to reach a subscriber on another connection.
// PostgreSQL is a private cluster started here (Debian's binaries, as the postgres user when run as root, a new
// database for each case); without it, its rows are skipped. A benchmark: it prints figures.
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { requestPayment } from '../dist/ops/requests/payments.js';
import { Session } from '../dist/ops/session.js';
import { startSandbox } from '../dist/sandbox/index.js';
import { PostgresStore } from '../dist/store/postgres.js';
import { startCluster } from './postgres-cluster.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SIZES = (process.env.BENCH_SIZES ?? '0,10000,100000').split(',').map(Number);
const CREATED = Number(process.env.BENCH_CREATED ?? 1000);
const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url));
const PASSWORD = 'bench password';
const TIME = '/usr/bin/time';

const dirs = [];
const tempDir = (name) => {
  const dir = mkdtempSync(join(tmpdir(), `nanopay-bench-${name}-`));
  dirs.push(dir);
  return dir;
};

/** One CLI run: wall time from spawn to exit, and max RSS (by /usr/bin/time, when there is one). */
function measure(args, env) {
  const withTime = existsSync(TIME);
  const [command, argv] = withTime ? [TIME, ['-f', '%M', process.execPath, BIN, ...args]] : [process.execPath, [BIN, ...args]];
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(command, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      if (code !== 0) return reject(new Error(`nanopay ${args.join(' ')} exited ${code}: ${stderr}`));
      const kb = withTime ? Number(stderr.trim().split('\n').at(-1)) : NaN;
      resolve({ ms, mb: kb / 1024, stdout });
    });
  });
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** `count` requests to `address` as the store would hold them: a tenth paid, a tenth expired. */
function records(count, address) {
  const now = Date.now();
  return Array.from({ length: count }, (_, i) => ({
    id: randomUUID(),
    address,
    baseRaw: '1000000000000000000000000000',
    amountRaw: (10n ** 27n + BigInt(`0x${randomBytes(6).toString('hex')}`)).toString(),
    createdAt: new Date(now - (count - i) * 1000).toISOString(),
    ...(i % 10 === 3 ? { paidBy: [randomBytes(32).toString('hex').toUpperCase()] } : {}),
    ...(i % 10 === 7 ? { expiresAt: new Date(now - 1000).toISOString() } : {}),
  }));
}

/** A profile on the sandbox's node with a local wallet and an unlocked session; its store filled with `count` requests. */
async function profile(sandboxUrl, count, databaseUrl) {
  const dir = tempDir('store');
  const env = {
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('NANOPAY_'))),
    HOME: dir,
    NANOPAY_CONFIG_DIR: dir,
    NANOPAY_BACKEND: 'node',
    NANOPAY_NODE_URL: sandboxUrl,
    NO_COLOR: '1',
    ...(databaseUrl === undefined ? {} : { NANOPAY_DATABASE_URL: databaseUrl }),
  };
  await measure(['wallet', 'create'], { ...env, NANOPAY_PASSWORD: PASSWORD });
  await measure(['unlock', '--for', '1h'], { ...env, NANOPAY_PASSWORD: PASSWORD });
  const first = JSON.parse((await measure(['request', '0.001', '--json'], env)).stdout);
  const session = new Session({ password: async () => PASSWORD, configDir: dir, env });
  const store = await session.dataStore();
  const filled = records(count, first.receive_address);
  for (let i = 0; i < filled.length; i += 10_000) await store.requests.importAll(filled.slice(i, i + 10_000));
  await store.close();
  const middle = filled[filled.length >> 1]?.id ?? first.transaction_id;
  return { env, statusId: middle, lock: () => measure(['lock'], env).catch(() => undefined) };
}

/**
 * The commands on stores of every size, interleaved: each round runs every (size, command) once, in turn, so a
 * busy moment of the machine (shared by others) hits them all alike. PostgreSQL gets one database per size.
 */
async function commandFigures(sandbox, kind, cluster) {
  const profiles = [];
  try {
    for (const size of SIZES) profiles.push({ size, ...(await profile(sandbox.url, size, cluster === undefined ? undefined : await cluster.database())) });
    const cases = profiles.flatMap((p) => ['request', 'status'].map((command) => ({ ...p, command, samples: [] })));
    const args = (c) => (c.command === 'request' ? ['request', '0.001', '--json'] : ['status', c.statusId, '--json']);
    for (const c of cases) await measure(args(c), c.env);
    for (let round = 0; round < ROUNDS; round++) for (const c of cases) c.samples.push(await measure(args(c), c.env));
    for (const c of cases) {
      const empty = cases.find((e) => e.command === c.command && e.size === SIZES[0]);
      const [ms, mb, emptyMs, emptyMb] = [c, c, empty, empty].map((x, i) => median(x.samples.map((s) => (i % 2 === 0 ? s.ms : s.mb))));
      const goal = c.size === 100_000 ? `  goal <= 1.2x ${ms / emptyMs <= 1.2 && mb / emptyMb <= 1.2 ? 'met' : 'MISSED'}` : '';
      console.log(
        `${kind.padEnd(8)} ${c.command.padEnd(7)} ${String(c.size).padStart(7)} requests  ${ms.toFixed(0).padStart(5)} ms (${(ms / emptyMs).toFixed(2)}x)  ${mb.toFixed(0).padStart(4)} MB (${(mb / emptyMb).toFixed(2)}x)${goal}`,
      );
    }
  } finally {
    for (const p of profiles) await p.lock();
  }
}

/**
 * The store's own part of a command, in-process, which the CLI's figures bury in start-up noise: open the store
 * (schema check included) and make the reads `status` makes, on an empty store and on one of the largest size.
 */
async function storeCost(kind, cluster) {
  const figures = [];
  for (const size of [0, SIZES.at(-1)]) {
    const dir = tempDir('cost');
    const url = cluster === undefined ? undefined : await cluster.database();
    const session = () => new Session({ password: async () => PASSWORD, configDir: dir, env: url === undefined ? {} : { NANOPAY_DATABASE_URL: url } });
    const store = await session().dataStore();
    const filled = records(size, 'nano_bench');
    for (let i = 0; i < filled.length; i += 10_000) await store.requests.importAll(filled.slice(i, i + 10_000));
    await store.close();
    const id = filled[filled.length >> 1]?.id ?? randomUUID();
    const samples = [];
    for (let round = 0; round < 31; round++) {
      const started = performance.now();
      const opened = await session().dataStore();
      await opened.requests.get(id);
      await opened.requests.claimedBy([randomBytes(32).toString('hex')]);
      await opened.close();
      samples.push(performance.now() - started);
    }
    figures.push(`${median(samples).toFixed(2)} ms with ${size}`);
  }
  console.log(`${kind.padEnd(8)} the store's part of status (open, schema check, reads), in-process, median of 31: ${figures.join(', ')} requests`);
}

/** Requests made by one process through the store (the operation `request` runs), in a row and 16 at once. */
async function creationRate(sandbox, kind, cluster) {
  const p = await profile(sandbox.url, 0, cluster === undefined ? undefined : await cluster.database());
  try {
    const session = new Session({ password: async () => PASSWORD, configDir: p.env.NANOPAY_CONFIG_DIR, env: p.env });
    await requestPayment(session, { amount: { xno: '0.001' } });
    let started = performance.now();
    for (let i = 0; i < CREATED; i++) await requestPayment(session, { amount: { xno: '0.001' } });
    const serial = CREATED / ((performance.now() - started) / 1000);
    started = performance.now();
    let next = 0;
    await Promise.all(Array.from({ length: 16 }, async () => {
      while (next++ < CREATED) await requestPayment(session, { amount: { xno: '0.001' } });
    }));
    const parallel = CREATED / ((performance.now() - started) / 1000);
    console.log(`${kind.padEnd(8)} requests created by one process: ${serial.toFixed(0)}/s one after another, ${parallel.toFixed(0)}/s 16 at once (${CREATED} each)`);
    await (await session.dataStore()).close();
  } finally {
    await p.lock();
  }
}

/** How long a change made on one connection takes to reach a subscriber on another (PostgreSQL's NOTIFY). */
async function notifyLatency(cluster) {
  const databaseUrl = await cluster.database();
  const [writer, reader] = [await PostgresStore.open(databaseUrl), await PostgresStore.open(databaseUrl)];
  const waiting = new Map();
  const stop = await reader.subscribe((change) => waiting.get(change.id)?.(performance.now()));
  const latencies = [];
  for (let i = 0; i < 50; i++) {
    const id = randomUUID();
    const arrived = new Promise((resolve) => waiting.set(id, resolve));
    const started = performance.now();
    await writer.requests.insert({ id, address: 'nano_bench', baseRaw: '1', amountRaw: String(i + 1), createdAt: new Date().toISOString() });
    latencies.push((await arrived) - started);
  }
  await stop();
  await writer.close();
  await reader.close();
  console.log(`postgres a change reaches another connection's subscriber in ${median(latencies).toFixed(1)} ms (median of 50; slowest ${Math.max(...latencies).toFixed(1)} ms)`);
}

const sandbox = await startSandbox({ port: 0 });
const cluster = await startCluster(tempDir('pg'));
try {
  console.log(`Machine: ${cpus()[0]?.model ?? 'unknown CPU'}, ${cpus().length} cores, Node ${process.version}; median of ${ROUNDS} interleaved runs\n`);
  await commandFigures(sandbox, 'sqlite', undefined);
  if (cluster.skipped === undefined) await commandFigures(sandbox, 'postgres', cluster);
  else console.log(`postgres skipped: ${cluster.skipped}`);
  console.log('');
  await storeCost('sqlite', undefined);
  if (cluster.skipped === undefined) await storeCost('postgres', cluster);
  await creationRate(sandbox, 'sqlite', undefined);
  if (cluster.skipped === undefined) {
    await creationRate(sandbox, 'postgres', cluster);
    await notifyLatency(cluster);
  }
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await cluster.stop?.();
  await sandbox.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}
