import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { ShopRequest } from '../../src/store/shop.js';
import type { SqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/store/store.js';
import { BIN, commandSession, newUser } from '../helpers/cli.js';

/**
 * requests export is streamed (issue 33, point 3): the built CLI exports a store of 10,000 shop requests,
 * then of 100,000, and its peak memory (its own maxRSS, printed as it exits by a preloaded module) stays
 * flat. Kept whole, 90,000 more rows of about 900 bytes would take well over 100 MB more.
 */
const REPORT = fileURLToPath(new URL('../fixtures/report-max-rss.mjs', import.meta.url));
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

/** The built CLI's export, counted as it streams (never kept here), and the child's peak memory. */
function exportOnce(env: NodeJS.ProcessEnv): Promise<{ records: number; bytes: number; maxRssKb: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'requests', 'export'], { env: { ...env, NODE_OPTIONS: `--import=${REPORT}` }, stdio: ['ignore', 'pipe', 'pipe'] });
    let records = 0;
    let bytes = 0;
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) records++;
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const rss = /max-rss-kb=(\d+)/.exec(stderr);
      if (code !== 0 || rss === null) return reject(new Error(`requests export exited ${code}: ${stderr}`));
      resolve({ records, bytes, maxRssKb: Number(rss[1]) });
    });
  });
}

describe('requests export of a large store', () => {
  it('streams: 100,000 requests take the memory 10,000 do', { timeout: 300_000 }, async () => {
    const user = await newUser('http://127.0.0.1:9');
    store = await commandSession(user).dataStore();
    const db = (store as SqliteStore).db;
    fill(db, 0, 10_000);
    const small = await exportOnce(user.env);
    fill(db, 10_000, 90_000);
    const large = await exportOnce(user.env);
    // Every row came out (plus the header); a CSV field with a line break would count more lines, none has one.
    expect(small.records).toBe(10_001);
    expect(large.records).toBe(100_001);
    expect(large.bytes).toBeGreaterThan(9 * small.bytes);
    const grewMb = (large.maxRssKb - small.maxRssKb) / 1024;
    expect(grewMb, `peak memory ${small.maxRssKb} kB at 10,000 requests, ${large.maxRssKb} kB at 100,000`).toBeLessThan(30);
  });
});
