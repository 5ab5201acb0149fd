import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { receive } from '../../../src/ops/account/receive.js';
import { payUri, requestPayment } from '../../../src/ops/requests/payments.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { backendUser, fundedUser, type BackendUser } from '../../helpers/ledger/backend-users.js';
import { postgresUnavailable, startPostgres, type PostgresCluster } from '../../helpers/ledger/postgres.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { startCommand } from '../../helpers/processes/serve.js';
import { startWebhookReceiver, until } from '../../helpers/network/webhook-receiver.js';

/**
 * Issue 43, point 4: a store that moves. Changing database-url with data in the store is refused; `store migrate`
 * copies every table (requests and their fresh accounts, the shop's requests, refunds, the outbox) from SQLite to
 * PostgreSQL and back, the counts checked, and the commands find the old data afterwards. Fresh accounts are kept
 * in the store, not in config.json.
 */
let sb: RunningSandbox;
let merchant: BackendUser;
let payer: BackendUser;
let cold: BackendUser;
/** The fresh-address request made and paid before any move. */
let fresh: { transaction_id: string; receive_address: string; uri: string };
/** The shop's request made through checkout serve's API, paid and partly refunded. */
let shopId: string;

type Counts = Record<string, number>;

const sqliteFile = (user: BackendUser): string => join(user.user.configDir, 'store', 'default.sqlite');
const configJson = (user: BackendUser): string => readFileSync(join(user.user.configDir, 'config.json'), 'utf8');

function sqliteCounts(path: string): Counts {
  const db = new Database(path, { readonly: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations'").all() as { name: string }[];
    return Object.fromEntries(tables.map(({ name }) => [name, (db.prepare(`SELECT COUNT(*) AS n FROM "${name}"`).get() as { n: number }).n]));
  } finally {
    db.close();
  }
}

async function postgresCounts(url: string): Promise<Counts> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const tables = await client.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> 'schema_migrations'",
    );
    const counts: Counts = {};
    for (const { table_name: name } of tables.rows) counts[name] = Number((await client.query<{ n: string }>(`SELECT COUNT(*) AS n FROM "${name}"`)).rows[0]?.n);
    return counts;
  } finally {
    await client.end();
  }
}

interface Moved {
  _code: number;
  tables: { table: string; rows: number }[];
  rows: number;
  database_url: string | null;
  old_store: string;
  error?: { code: string; message: string; hint?: string };
}

const byTable = (moved: Moved): Counts => Object.fromEntries(moved.tables.map((t) => [t.table, t.rows]));

/** What the commands must still see after a move: the old request paid, its fresh account to sweep, the shop's request refunded. */
async function expectOldDataSeen(): Promise<void> {
  expect(await merchant.user.json(['status', fresh.transaction_id])).toMatchObject({ _code: 0, status: 'paid', is_paid: true });
  const dry = await merchant.user.json<{ _code: number; accounts: { address: string }[] }>(['sweep', '--to', cold.address, '--dry-run']);
  expect(dry._code).toBe(0);
  expect(dry.accounts.map((a) => a.address)).toContain(fresh.receive_address);
  expect(await merchant.user.json(['status', shopId])).toMatchObject({ _code: 0, status: 'partially_refunded' });
}

/**
 * A request made through checkout serve's API (with a webhook endpoint) on the merchant's store as configured, paid,
 * its paid event delivered: a row in shop_requests, requests, webhook_events and the outbox, each numbered by the store.
 */
async function paidShopRequest(orderId: string): Promise<string> {
  let secret = '';
  const receiver = await startWebhookReceiver(() => secret);
  const server = await startCommand<{ url: string; token_file: string; webhook_secret_file: string }>(
    ['checkout', 'serve', '--json', '--webhook', receiver.url, '--poll-interval', '1', '--webhook-backoff-ms', '50'],
    merchant.user.env,
  );
  try {
    secret = readFileSync(server.printed.webhook_secret_file, 'utf8').trim().split('\n')[0] as string;
    const token = readFileSync(server.printed.token_file, 'utf8').trim();
    const api = (path: string, init: RequestInit = {}) =>
      fetch(`${server.printed.url}${path}`, { ...init, headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` } }).then(async (r) => (await r.json()) as { data: Record<string, any> });
    const answer = await api('/api/v1/requests', { method: 'POST', body: JSON.stringify({ amount: '0.2', order_id: orderId }) });
    expect(answer.data?.id, JSON.stringify(answer)).toBeTypeOf('string');
    const made = answer.data;
    const id = made.id as string;
    await payUri(payer.session, made.uri as string, {});
    await until(async () => (await api(`/api/v1/requests/${id}`)).data.status === 'paid', `the shop request ${orderId} paid`);
    await until(() => receiver.events.some((e) => JSON.stringify(e).includes(id)), `the paid event of ${orderId} delivered`);
    await receive(merchant.session);
    return id;
  } finally {
    await server.stop();
    await receiver.close();
  }
}

beforeAll(async () => {
  sb = await sandbox();
  merchant = await backendUser(sb, 'node');
  payer = await fundedUser(sb, 'node', '3');
  cold = await backendUser(sb, 'node');

  fresh = await merchant.user.json(['request', '0.3', '--fresh-address', '--no-qr']);
  await payUri(payer.session, fresh.uri, {});
  await until(async () => (await merchant.user.json<{ status: string }>(['status', fresh.transaction_id])).status === 'paid', 'the fresh request paid');

  // A shop request through checkout serve's API, paid, then partly refunded: rows in shop_requests, refunds, webhook_events and the outbox.
  shopId = await paidShopRequest('MOVE-1');
  expect(await merchant.user.json(['refund', shopId, '--amount', '0.05', '--yes'])).toMatchObject({ _code: 0, refund: { status: 'sent' } });
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

describe('fresh accounts live in the store', () => {
  it('a --fresh-address request adds no account to config.json, and the next one takes another account', async () => {
    expect(configJson(merchant)).not.toContain(fresh.receive_address);
    const next = await merchant.user.json<{ receive_address: string }>(['request', '0.1', '--fresh-address', '--no-qr']);
    expect(next.receive_address).not.toBe(fresh.receive_address);
    expect(next.receive_address).not.toBe(merchant.address);
    expect(configJson(merchant)).not.toContain(next.receive_address);
  });
});

describe('config set database-url with data in the store', () => {
  it('is refused (STORE_NOT_EMPTY, exit 10) naming store migrate, and nothing changes', async () => {
    const before = configJson(merchant);
    const refused = await merchant.user.json<Moved>(['config', 'set', 'database-url', 'postgres://nanopay@db.internal/shop']);
    expect(refused).toMatchObject({ _code: 10, error: { code: 'STORE_NOT_EMPTY', hint: expect.stringContaining('nanopay store migrate --to postgres://nanopay@db.internal/shop') } });
    expect(refused.error?.message).toContain(sqliteFile(merchant));
    expect(configJson(merchant)).toBe(before);
    expect(await merchant.user.json(['status', fresh.transaction_id])).toMatchObject({ _code: 0, status: 'paid' });
  });

  it('switches as before for a profile whose store is empty or absent', async () => {
    const other = await backendUser(sb, 'node');
    const set = await other.user.run(['config', 'set', 'database-url', 'postgres://nanopay@db.internal/shop']);
    expect(set.code, set.stderr).toBe(0);
    expect(await other.user.json(['config', 'get', 'database-url'])).toMatchObject({ value: 'postgres://nanopay@db.internal/shop', source: 'profile' });
    const unset = await other.user.run(['config', 'set', 'database-url', '--unset']);
    expect(unset.code, unset.stderr).toBe(0);
  });

  it('store migrate refuses while NANOPAY_DATABASE_URL overrides the profile', async () => {
    const refused = await merchant.user.json<Moved>(['store', 'migrate', '--to', 'sqlite'], { env: { NANOPAY_DATABASE_URL: 'postgres://nanopay@db.internal/shop' } });
    expect(refused).toMatchObject({ _code: 2, error: { code: 'USAGE', message: expect.stringContaining('NANOPAY_DATABASE_URL') } });
  });
});

const pgSkip = postgresUnavailable();

describe.skipIf(pgSkip !== undefined)(`store migrate between SQLite and PostgreSQL${pgSkip === undefined ? '' : ` (skipped: ${pgSkip})`}`, () => {
  let cluster: PostgresCluster;

  beforeAll(async () => {
    cluster = await startPostgres();
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  it('copies everything there and back, the counts checked, and the commands find the old data on each side', async () => {
    const url = await cluster.createDatabase(`move_${randomUUID().replaceAll('-', '')}`);
    const inSqlite = sqliteCounts(sqliteFile(merchant));
    for (const table of ['requests', 'request_payments', 'shop_requests', 'refunds', 'webhook_events', 'outbox']) expect(inSqlite[table], table).toBeGreaterThan(0);

    // A database with data is no destination.
    const occupied = await cluster.createDatabase(`busy_${randomUUID().replaceAll('-', '')}`);
    const occupant = await backendUser(sb, 'node');
    expect((await occupant.user.run(['request', '0.1', '--json'], { env: { NANOPAY_DATABASE_URL: occupied } })).code).toBe(0);
    const refused = await merchant.user.json<Moved>(['store', 'migrate', '--to', occupied]);
    expect(refused).toMatchObject({ _code: 10, error: { code: 'STORE_NOT_EMPTY', hint: expect.any(String) } });
    expect(JSON.parse(configJson(merchant)).profiles.default.databaseUrl).toBeUndefined();

    // A process that opened the store before the move, as a server left running, then makes no request in the store left behind.
    await merchant.session.dataStore();

    const there = await merchant.user.json<Moved>(['store', 'migrate', '--to', url]);
    expect(there).toMatchObject({ _code: 0, database_url: url, old_store: sqliteFile(merchant) });
    await expect(requestPayment(merchant.session, { amount: { xno: '0.1' } })).rejects.toMatchObject({ code: 'STORE_MOVED', exitCode: 10 });
    await expect(requestPayment(merchant.session, { amount: { xno: '0.1' }, freshAddress: true })).rejects.toMatchObject({ code: 'STORE_MOVED' });
    expect(byTable(there)).toEqual(inSqlite);
    expect(await postgresCounts(url)).toEqual(inSqlite);
    expect(JSON.parse(configJson(merchant)).profiles.default.databaseUrl).toBe(url);
    // The old store is left as it was.
    expect(sqliteCounts(sqliteFile(merchant))).toEqual(inSqlite);
    await expectOldDataSeen();

    // New rows continue the copied numbering: a new request and a new fresh account, no clash with the copied ones.
    const later = await merchant.user.json<{ _code: number; receive_address: string }>(['request', '0.1', '--fresh-address', '--no-qr']);
    expect(later._code).toBe(0);
    expect(later.receive_address).not.toBe(fresh.receive_address);
    // A shop request, its event and its outbox item take new numbers in PostgreSQL (a clash would fail the insert).
    await paidShopRequest('MOVE-2');
    const inPostgres = await postgresCounts(url);
    expect(inPostgres.requests).toBe((inSqlite.requests as number) + 2);
    for (const table of ['shop_requests', 'webhook_events', 'outbox']) expect(inPostgres[table], table).toBeGreaterThan(inSqlite[table] as number);
    const exported = await merchant.user.run(['requests', 'export', '--format', 'json']);
    expect(exported.code, exported.stderr).toBe(0);

    // Back: the profile's SQLite file holds the old data, so it is refused until moved away.
    expect(await merchant.user.json<Moved>(['config', 'set', 'database-url', '--unset'])).toMatchObject({ _code: 10, error: { code: 'STORE_NOT_EMPTY', hint: expect.stringContaining('store migrate --to sqlite') } });
    // To another database: through the SQLite file, as store migrate moves between the two kinds.
    expect(await merchant.user.json<Moved>(['config', 'set', 'database-url', occupied])).toMatchObject({
      _code: 10,
      error: { code: 'STORE_NOT_EMPTY', hint: `Move them through the profile's SQLite file: nanopay store migrate --to sqlite, then nanopay store migrate --to ${occupied}` },
    });
    expect(JSON.parse(configJson(merchant)).profiles.default.databaseUrl).toBe(url);
    expect(await merchant.user.json<Moved>(['store', 'migrate', '--to', 'sqlite'])).toMatchObject({ _code: 10, error: { code: 'STORE_NOT_EMPTY', hint: expect.stringContaining('mv ') } });
    for (const suffix of ['', '-wal', '-shm']) if (existsSync(sqliteFile(merchant) + suffix)) renameSync(sqliteFile(merchant) + suffix, `${sqliteFile(merchant)}.before${suffix}`);

    const back = await merchant.user.json<Moved>(['store', 'migrate', '--to', 'sqlite']);
    expect(back).toMatchObject({ _code: 0, database_url: null, old_store: url });
    expect(byTable(back)).toEqual(inPostgres);
    expect(sqliteCounts(sqliteFile(merchant))).toEqual(inPostgres);
    expect(JSON.parse(configJson(merchant)).profiles.default.databaseUrl).toBeUndefined();
    expect(await postgresCounts(url)).toEqual(inPostgres);
    await expectOldDataSeen();
    // The shop's requests read back the same from SQLite, every field (documents through JSONB and back).
    expect((await merchant.user.run(['requests', 'export', '--format', 'json'])).stdout).toBe(exported.stdout);
    await paidShopRequest('MOVE-3');
    const last = await merchant.user.json<{ _code: number; receive_address: string }>(['request', '0.1', '--fresh-address', '--no-qr']);
    expect(last._code).toBe(0);
    expect([fresh.receive_address, later.receive_address]).not.toContain(last.receive_address);
  });
});
