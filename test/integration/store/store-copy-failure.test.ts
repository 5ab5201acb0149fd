import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyStore, countRows } from '../../../src/store/copy.js';
import { PostgresStore } from '../../../src/store/postgres.js';
import { SqliteStore } from '../../../src/store/sqlite.js';
import type { Store } from '../../../src/store/store.js';
import type { AuditRecord, ApprovalRecord } from '../../../src/store/spending.js';
import type { RequestRecord } from '../../../src/wallet/requests.js';
import { postgresUnavailable, startPostgres, type PostgresCluster } from '../../helpers/ledger/postgres.js';
import { tempDir } from '../../helpers/processes/temp.js';

/**
 * The copy under `store migrate` (issue 43, point 4), on a real SQLite file and a real PostgreSQL database: a copy
 * that fails keeps nothing in the destination, so a second try (or the config left as it was) starts from empty.
 */
const skip = postgresUnavailable();
const PROFILE = 'default';
const ACCOUNT = 'nano_3uzu9nxf8ywo61mws76fcpoeq865o59jri487fnjk14gthyoysqn7h8bft7m';

const request: RequestRecord = {
  id: randomUUID(),
  address: ACCOUNT,
  baseRaw: '1000',
  amountRaw: '1007',
  createdAt: '2026-01-01T00:00:00.000Z',
  expiresAt: '2026-01-02T00:00:00.000Z',
  fresh: { wallet: 'main', index: 7 },
};
const audit: AuditRecord = {
  id: randomUUID(),
  at: '2026-01-01T00:00:00.000Z',
  profile: PROFILE,
  decision: 'allowed',
  rule: null,
  front_end: 'cli',
  kind: 'send',
  account: ACCOUNT,
  recipient: ACCOUNT,
  amount_raw: '5',
  hash: 'A'.repeat(64),
  status: 'in_flight',
};
const approval: ApprovalRecord = {
  id: randomUUID(),
  profile: PROFILE,
  state: 'pending',
  created_at: '2026-01-01T00:00:00.000Z',
  expires_at: '2999-01-01T00:00:00.000Z',
  rule: 'ask-above 1',
  message: 'above 1 XNO',
  front_end: 'cli',
  kind: 'send',
  account: ACCOUNT,
  recipient: ACCOUNT,
  amount_raw: '2',
};

/** A store with rows in most tables, made through the store's own methods. */
async function fill(store: Store): Promise<void> {
  await store.requests.insert(request);
  await store.requests.claim(request.id, ['B'.repeat(64)]);
  await store.outbox.done(await store.outbox.enqueue('webhooks', { event_id: 'ev_1' }));
  await store.outbox.enqueue('webhooks', { event_id: 'ev_2', nested: { n: 1 } });
  await store.audit.add(audit);
  await store.approvals.create(approval, 'binding-1');
  await store.sweeps.save({ id: 'sw_1', to: ACCOUNT, min_raw: '0', started_at: '2026-01-01T00:00:00.000Z', finished_at: '2026-01-01T00:01:00.000Z', accounts: [] });
  await store.prices.record(request.id, { currency: 'EUR', amount: '1.50', rate: '0.93', rate_source: 'https://rates.example/', rate_time: '2026-01-01T00:00:00Z' });
  await store.prices.accept({ currency: 'EUR', rate: '0.93', source: 'https://rates.example/', time: '2026-01-01T00:00:00Z', accepted_at: '2026-01-01T00:00:01Z' }, '2025-12-31T23:00:01Z');
}

describe.skipIf(skip !== undefined)('copyStore refusing a source', () => {
  let cluster: PostgresCluster;
  let dir: string;

  beforeAll(async () => {
    cluster = await startPostgres();
    dir = await tempDir('nanopay-copy-');
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  it('a copy that fails keeps nothing in the destination', async () => {
    const source = await SqliteStore.open(join(dir, 'odd.sqlite'), dir, 'odd');
    const destination = await PostgresStore.open(await cluster.createDatabase(`copy_${randomUUID().replaceAll('-', '')}`));
    try {
      await fill(source);
      await source.close();
      // A table nanopay does not know: the copy refuses it rather than leave it behind.
      const raw = new Database(join(dir, 'odd.sqlite'));
      raw.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)');
      raw.close();
      const reopened = await SqliteStore.open(join(dir, 'odd.sqlite'), dir, 'odd');
      try {
        await expect(copyStore(reopened, destination)).rejects.toMatchObject({ code: 'STORE_CORRUPT', message: expect.stringContaining('notes') });
      } finally {
        await reopened.close();
      }
      expect((await countRows(destination)).every((c) => c.rows === 0)).toBe(true);
    } finally {
      await destination.close();
    }
  });

  it('a row the destination refuses, after other tables were written, keeps nothing there either', async () => {
    const source = await SqliteStore.open(join(dir, 'nul.sqlite'), dir, 'nul');
    const destination = await PostgresStore.open(await cluster.createDatabase(`copy_${randomUUID().replaceAll('-', '')}`));
    try {
      await fill(source);
      // accepted_rates comes late; PostgreSQL's JSONB refuses the \u0000 that SQLite's JSON text keeps.
      await source.prices.accept({ currency: 'USD', rate: '1', source: 'https://rates.example/\u0000', time: '2026-01-01T00:00:00Z', accepted_at: '2026-01-01T00:00:01Z' }, '2025-12-31T23:00:01Z');
      await expect(copyStore(source, destination)).rejects.toMatchObject({ code: 'STORE_CORRUPT', message: expect.stringContaining('accepted_rates') });
      expect((await countRows(destination)).every((c) => c.rows === 0)).toBe(true);
    } finally {
      await Promise.all([source.close(), destination.close()]);
    }
  });
});
