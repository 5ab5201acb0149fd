import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../../src/store/postgres.js';
import { MIGRATIONS } from '../../../src/store/schema.js';
import type { ShopRequest } from '../../../src/store/shop.js';
import { SqliteStore } from '../../../src/store/sqlite.js';
import type { Store } from '../../../src/store/store.js';
import { postgresUnavailable, startPostgres, type PostgresCluster } from '../../helpers/ledger/postgres.js';
import { tempDir } from '../../helpers/processes/temp.js';

/**
 * A store made before the dashboard's search (schema version 10) with shop requests in it: the migration that adds
 * the searchable columns fills them from each request's document, so old requests are found, sorted and totalled
 * as new ones are.
 */
const ADDRESS = 'nano_1111111111111111111111111111111111111111111111111111hifc8npp';
const BEFORE = MIGRATIONS.filter((m) => m.version <= 10);
const xno = (tenths: number): string => (BigInt(tenths) * 10n ** 29n).toString();

const old: ShopRequest[] = [
  { id: randomUUID(), status: 'paid', currency: 'XNO', amount: '0.5', amount_raw: xno(5), receive_address: ADDRESS, uri: 'nano:x', created_at: '2026-02-01T10:00:00.000Z', order_id: 'a', events: 1 },
  { id: randomUUID(), status: 'underpaid', currency: 'XNO', amount: '2', amount_raw: xno(20), received_raw: xno(3), receive_address: ADDRESS, uri: 'nano:x', created_at: '2026-02-02T10:00:00.000Z', events: 1 },
  {
    id: randomUUID(),
    status: 'partially_refunded',
    currency: 'XNO',
    amount: '1',
    amount_raw: xno(10),
    refunded_amount_raw: xno(4),
    fiat: { currency: 'EUR', amount: '0.85', rate: '0.85', rate_source: 'https://rates.example', rate_time: '2026-02-03T10:00:00.000Z' },
    receive_address: ADDRESS,
    uri: 'nano:x',
    created_at: '2026-02-03T10:00:00.000Z',
    events: 2,
  },
  { id: randomUUID(), status: 'waiting', currency: 'XNO', amount: '0.1', amount_raw: xno(1), receive_address: ADDRESS, uri: 'nano:x', created_at: '2026-02-04T10:00:00.000Z', events: 0 },
];

async function expectSearchable(store: Store): Promise<void> {
  expect((await store.shop.search({ sort: 'amount', descending: true, limit: 10 })).data.map((r) => r.id)).toEqual([old[1], old[2], old[0], old[3]].map((r) => r?.id));
  expect((await store.shop.search({ from: '2026-02-02T00:00:00.000Z', to: '2026-02-04T00:00:00.000Z', sort: 'created', descending: false, limit: 10 })).data.map((r) => r.id)).toEqual(
    [old[1], old[2]].map((r) => r?.id),
  );
  expect(await store.shop.totals({})).toEqual({
    count: 4,
    received_raw: (BigInt(xno(5)) + BigInt(xno(3)) + BigInt(xno(10))).toString(),
    refunded_raw: xno(4),
    fiat: [{ currency: 'EUR', received: '0.85', refunded: '0.34' }],
  });
}

let cluster: PostgresCluster | undefined;
const pgSkip = postgresUnavailable();

beforeAll(async () => {
  if (pgSkip === undefined) cluster = await startPostgres();
});

afterAll(async () => {
  await cluster?.stop();
});

describe('the searchable columns of requests made before them', () => {
  it('are filled by the migration in SQLite', async () => {
    const dir = await tempDir('nanopay-backfill-');
    const path = join(dir, 'store.sqlite');
    const db = new Database(path);
    db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)');
    for (const m of BEFORE) {
      db.exec(m.sqlite);
      db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(m.version, new Date().toISOString());
    }
    const insert = db.prepare('INSERT INTO shop_requests (id, status, order_id, doc) VALUES (?, ?, ?, ?)');
    for (const r of old) insert.run(r.id, r.status, r.order_id ?? null, JSON.stringify(r));
    db.close();
    const store = await SqliteStore.open(path, join(dir, 'locks'), 'test');
    try {
      await expectSearchable(store);
    } finally {
      await store.close();
    }
  });

  it.skipIf(pgSkip !== undefined)('are filled by the migration in PostgreSQL', async () => {
    const url = await (cluster as PostgresCluster).createDatabase(`backfill_${randomUUID().replaceAll('-', '')}`);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())');
      for (const m of BEFORE) {
        await client.query(m.postgres);
        await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [m.version]);
      }
      for (const r of old) await client.query('INSERT INTO shop_requests (id, status, order_id, doc) VALUES ($1, $2, $3, $4::jsonb)', [r.id, r.status, r.order_id ?? null, JSON.stringify(r)]);
    } finally {
      await client.end();
    }
    const store = await PostgresStore.open(url);
    try {
      await expectSearchable(store);
    } finally {
      await store.close();
    }
  });
});
