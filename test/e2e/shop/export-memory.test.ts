import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { ShopRequest } from '../../../src/store/shop.js';
import type { SqliteStore } from '../../../src/store/sqlite.js';
import type { Store } from '../../../src/store/store.js';
import { runWithCappedHeap } from '../../helpers/processes/capped-heap.js';
import { commandSession, newUser } from '../../helpers/processes/cli.js';

/**
 * requests export is streamed (issue 33, point 3): the built CLI exports a store of 10,000 shop requests,
 * then of 100,000, in the same small heap. Kept whole, 100,000 rows of about 900 bytes would need well over
 * 100 MB.
 */
const ADDRESS = 'nano_1111111111111111111111111111111111111111111111111111hifc8npp';
let store: Store | undefined;

afterAll(async () => {
  await store?.close();
});

/** Adds `count` requests in one transaction, as a shop's history: every third paid, some priced in EUR, all with metadata. */
function fill(db: SqliteStore['db'], from: number, count: number): void {
  const insert = db.prepare('INSERT INTO shop_requests (id, status, order_id, doc) VALUES (?, ?, ?, ?)');
  const base = Date.parse('2025-01-01T00:00:00.000Z');
  db.transaction(() => {
    for (let i = from; i < from + count; i++) {
      const paid = i % 3 === 0;
      const request: ShopRequest = {
        id: randomUUID(),
        status: paid ? 'paid' : 'expired',
        currency: 'XNO',
        amount: '21.494624000000000000000123456',
        amount_raw: '21494624000000000000000123456',
        receive_address: ADDRESS,
        uri: `nano:${ADDRESS}?amount=21494624000000000000000123456`,
        created_at: new Date(base + i * 1000).toISOString(),
        expires_at: new Date(base + i * 1000 + 86_400_000).toISOString(),
        order_id: `order-${i}`,
        metadata: { customer: `customer-${i % 977}`, note: 'two, "quoted" words' },
        ...(i % 2 === 0 ? { fiat: { currency: 'EUR', amount: '19.99', rate: '0.93', rate_source: 'https://rates.example/nano', rate_time: '2025-01-01T00:00:00.000Z' } } : {}),
        ...(paid ? { paid_by: [randomBytes(32).toString('hex').toUpperCase()], payers: [ADDRESS], paid_at: new Date(base + i * 1000 + 5000).toISOString() } : {}),
        events: 1,
      };
      insert.run(request.id, request.status, request.order_id, JSON.stringify(request));
    }
  })();
}

describe('requests export of a large store', () => {
  it('streams: 100,000 requests take the memory 10,000 do', { timeout: 300_000 }, async () => {
    const user = await newUser('http://127.0.0.1:9');
    store = await commandSession(user).dataStore();
    const db = (store as SqliteStore).db;
    fill(db, 0, 10_000);
    const small = await runWithCappedHeap(['requests', 'export'], user.env, 32);
    fill(db, 10_000, 90_000);
    const large = await runWithCappedHeap(['requests', 'export'], user.env, 32);
    // Every row came out (plus the header); a CSV field with a line break would count more lines, none has one.
    expect([small.code, small.lines], small.stderr).toEqual([0, 10_001]);
    expect([large.code, large.lines], large.stderr).toEqual([0, 100_001]);
    expect(large.bytes).toBeGreaterThan(9 * small.bytes);
  });
});
