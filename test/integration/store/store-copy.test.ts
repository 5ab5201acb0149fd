import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyStore, countRows } from '../../../src/store/copy.js';
import { PostgresStore } from '../../../src/store/postgres.js';
import { SqliteStore } from '../../../src/store/sqlite.js';
import { postgresUnavailable, startPostgres, type PostgresCluster } from '../../helpers/ledger/postgres.js';

/**
 * copyStore, table by table and value by value: every table of the schema holds rows (found from the catalog, so a
 * table a later migration adds is filled too), with NULLs, JSON beyond ASCII, BIGINT past 2^31 and booleans; copied
 * SQLite → PostgreSQL → SQLite, each row comes back as it was, and the id counters continue past what was handed
 * out (a row deleted at the end is not numbered again).
 */
const skip = postgresUnavailable();

/** A column as PostgreSQL declares it (its type decides the value written), and whether SQLite numbers it. */
interface Column {
  name: string;
  pgType: string;
  nullable: boolean;
  autoincrement: boolean;
}

type Rows = Record<string, Record<string, unknown>[]>;

const ROWS = 3;

async function pgColumns(url: string): Promise<Map<string, Column[]>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const result = await client.query<{ table_name: string; column_name: string; data_type: string; is_nullable: string; column_default: string | null }>(
      `SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns
       WHERE table_schema = 'public' AND table_name <> 'schema_migrations' ORDER BY table_name, ordinal_position`,
    );
    const tables = new Map<string, Column[]>();
    for (const r of result.rows) {
      const columns = tables.get(r.table_name) ?? [];
      columns.push({ name: r.column_name, pgType: r.data_type, nullable: r.is_nullable === 'YES', autoincrement: r.column_default?.startsWith('nextval(') === true });
      tables.set(r.table_name, columns);
    }
    return tables;
  } finally {
    await client.end();
  }
}

/** Row i's value of a column: unique per row (unique indexes), the request ids shared (request_payments refers to them), a NULL in row 2 where allowed. */
function value(table: string, column: Column, i: number): unknown {
  if (column.nullable && i === 2) return null;
  if (column.name === 'request_id' || (table === 'requests' && column.name === 'id')) return `req-${i}`;
  switch (column.pgType) {
    case 'jsonb':
      return JSON.stringify({ table, i, text: 'Grüße, ünïcode — 🙂 "quoted"\n', nested: { list: [1, '2', null, true] }, raw: '1000000000000000000000000000000' });
    case 'boolean':
      return i % 2;
    case 'bigint':
      return 1_700_000_000_000 + i;
    case 'integer':
      return i;
    default:
      return `${table}.${column.name}.${i}`;
  }
}

/** Every row of every table, ordered by its first column, JSON parsed (PostgreSQL keeps JSONB in a form of its own). */
function sqliteRows(store: SqliteStore, tables: Map<string, Column[]>): Rows {
  const rows: Rows = {};
  for (const [table, columns] of tables) {
    const json = new Set(columns.filter((c) => c.pgType === 'jsonb').map((c) => c.name));
    const all = store.db.prepare(`SELECT * FROM "${table}" ORDER BY 1`).all() as Record<string, unknown>[];
    rows[table] = all.map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, json.has(k) && typeof v === 'string' ? JSON.parse(v) : v])));
  }
  return rows;
}

const sequences = (store: SqliteStore): Record<string, number> =>
  Object.fromEntries((store.db.prepare('SELECT name, seq FROM sqlite_sequence').all() as { name: string; seq: number }[]).map((r) => [r.name, r.seq]));

describe.skipIf(skip !== undefined)(`copyStore between SQLite and PostgreSQL${skip === undefined ? '' : ` (skipped: ${skip})`}`, () => {
  let cluster: PostgresCluster;
  let dir: string;
  const open: { close(): Promise<void> }[] = [];

  const sqlite = async (name: string): Promise<SqliteStore> => {
    const store = await SqliteStore.open(join(dir, 'store', `${name}.sqlite`), join(dir, 'locks'), `store-${name}`);
    open.push(store);
    return store;
  };
  const postgres = async (): Promise<{ store: PostgresStore; url: string }> => {
    const url = await cluster.createDatabase(`copy_${randomUUID().replaceAll('-', '')}`);
    const store = await PostgresStore.open(url);
    open.push(store);
    return { store, url };
  };

  beforeAll(async () => {
    cluster = await startPostgres();
    dir = await mkdtemp(join(tmpdir(), 'nanopay-store-copy-'));
  });

  afterAll(async () => {
    for (const store of open) await store.close().catch(() => undefined);
    await cluster?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('copies every row of every table there and back unchanged, and the counters continue past the copy', async () => {
    const there = await postgres();
    const tables = await pgColumns(there.url);
    expect([...tables.keys()]).toEqual(expect.arrayContaining(['requests', 'request_payments', 'outbox', 'shop_requests', 'webhook_events', 'webhook_destinations', 'webhook_deliveries', 'spend_audit', 'approvals', 'refunds', 'sweeps', 'request_prices', 'accepted_rates']));

    const from = await sqlite('from');
    // Parents first: request_payments refers to requests.
    for (const [table, columns] of [...tables].sort(([a], [b]) => Number(b === 'requests') - Number(a === 'requests'))) {
      const written = columns.filter((c) => !c.autoincrement);
      const insert = from.db.prepare(`INSERT INTO "${table}" (${written.map((c) => `"${c.name}"`).join(', ')}) VALUES (${written.map(() => '?').join(', ')})`);
      for (let i = 1; i <= ROWS; i++) insert.run(...written.map((c) => value(table, c, i)));
      // The last number handed out is above the rows' maximum: the copy must not hand it out again.
      if (columns.some((c) => c.autoincrement)) from.db.prepare(`DELETE FROM "${table}" WHERE rowid = (SELECT MAX(rowid) FROM "${table}")`).run();
    }
    const original = sqliteRows(from, tables);
    for (const [table, rows] of Object.entries(original)) expect(rows.length, table).toBeGreaterThan(0);
    const counters = sequences(from);
    const counted = await countRows(from);

    expect(await copyStore(from, there.store)).toEqual(counted);
    expect(await countRows(there.store)).toEqual(counted);

    const back = await sqlite('back');
    expect(await copyStore(there.store, back)).toEqual(counted);
    expect(sqliteRows(back, tables)).toEqual(original);
    expect(sequences(back)).toEqual(counters);

    // New rows on either side take numbers past every one handed out before the copy.
    expect(await there.store.outbox.enqueue('test', { after: 'copy' })).toBe((counters.outbox as number) + 1);
    expect(await back.outbox.enqueue('test', { after: 'copy' })).toBe((counters.outbox as number) + 1);
    const request = { id: 'req-new', address: 'nano_1new', baseRaw: '1', amountRaw: '1', createdAt: new Date().toISOString() };
    const changed = (rows: Record<string, unknown>[]): number[] => rows.map((r) => Number(r.changed_seq));
    const highest = Math.max(...changed(original.requests as Record<string, unknown>[]));
    await there.store.requests.insert(request);
    const client = new pg.Client({ connectionString: there.url });
    await client.connect();
    try {
      expect(Number((await client.query<{ changed_seq: string }>("SELECT changed_seq FROM requests WHERE id = 'req-new'")).rows[0]?.changed_seq)).toBeGreaterThan(highest);
      // Every table's own sequence, not only the outbox's.
      for (const [table, columns] of tables) {
        const serial = columns.find((c) => c.autoincrement);
        if (serial === undefined || table === 'outbox') continue;
        const next = await client.query<{ n: string }>(`SELECT nextval(pg_get_serial_sequence('"${table}"', '${serial.name}')) AS n`);
        expect(Number(next.rows[0]?.n), table).toBe((counters[table] as number) + 1);
      }
    } finally {
      await client.end();
    }
    await back.requests.insert(request);
    expect(Number((back.db.prepare("SELECT changed_seq FROM requests WHERE id = 'req-new'").get() as { changed_seq: number }).changed_seq)).toBeGreaterThan(highest);
  });
});
