import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NanoPayError } from '../../../src/errors.js';
import { resendWebhook, webhookBacklog } from '../../../src/shop/deliver.js';
import { PostgresStore } from '../../../src/store/postgres.js';
import { SqliteStore } from '../../../src/store/sqlite.js';
import type { Store, StoreChange } from '../../../src/store/store.js';
import type { RequestRecord } from '../../../src/wallet/requests.js';
import type { ApprovalRecord, AuditRecord } from '../../../src/store/spending.js';
import type { ShopRequest, WebhookEvent } from '../../../src/store/shop.js';
import type { RefundRecord, SweepAccount, SweepRun } from '../../../src/store/refunds.js';
import { postgresUnavailable, startPostgres, type PostgresCluster } from '../../helpers/ledger/postgres.js';

/**
 * One suite for both stores. Each test opens its own store (a new SQLite file,
 * or a new PostgreSQL database) and, where it matters, a second store on the
 * same data: another connection, as another process or server would have.
 */
interface Kind {
  name: 'sqlite' | 'postgres';
  skip?: string;
  /** A new empty store, and a function opening another handle on the same data. */
  fresh(): Promise<{ store: Store; another(): Promise<Store> }>;
}

let dir: string;
let cluster: PostgresCluster | undefined;
const opened: Store[] = [];
const track = (store: Store): Store => (opened.push(store), store);

const pgSkip = postgresUnavailable();
const kinds: Kind[] = [
  {
    name: 'sqlite',
    async fresh() {
      const path = join(dir, `${randomUUID()}.sqlite`);
      const open = async () => track(await SqliteStore.open(path, join(dir, 'locks'), 'test'));
      return { store: await open(), another: open };
    },
  },
  {
    name: 'postgres',
    ...(pgSkip === undefined ? {} : { skip: pgSkip }),
    async fresh() {
      if (cluster === undefined) throw new Error('no cluster');
      const url = await cluster.createDatabase(`t_${randomUUID().replaceAll('-', '')}`);
      const open = async () => track(await PostgresStore.open(url));
      return { store: await open(), another: open };
    },
  },
];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nanopay-store-'));
  if (pgSkip === undefined) cluster = await startPostgres();
});

afterAll(async () => {
  for (const store of opened) await store.close().catch(() => undefined);
  await cluster?.stop();
  await rm(dir, { recursive: true, force: true });
});

const ADDRESS = 'nano_1111111111111111111111111111111111111111111111111111hifc8npp';
let clock = Date.parse('2026-01-01T00:00:00.000Z');

function request(fields: Partial<RequestRecord> & Record<string, unknown> = {}): RequestRecord {
  clock += 1000;
  return { id: randomUUID(), address: ADDRESS, baseRaw: '1000', amountRaw: String(1000 + (clock % 997)), createdAt: new Date(clock).toISOString(), ...fields };
}

function shopRequest(fields: Partial<ShopRequest> = {}): ShopRequest {
  const id = randomUUID();
  return { id, status: 'waiting', currency: 'XNO', amount: '1', amount_raw: '1000000000000000000000000000000', receive_address: ADDRESS, uri: `nano:${ADDRESS}`, created_at: new Date().toISOString(), events: 0, ...fields };
}

function webhookEvent(request: ShopRequest, seq: number): WebhookEvent {
  return { id: `evt_${randomUUID()}`, type: `request.${request.status}` as WebhookEvent['type'], created: 1, request_seq: seq, data: { object: request }, delivery: { attempts: 0 } };
}

const hash = () => randomUUID().replaceAll('-', '').toUpperCase().padEnd(64, '0');

describe.each(kinds)('the $name store', (kind) => {
  const test = kind.skip === undefined ? it : it.skip;
  if (kind.skip !== undefined) it.skip(`skipped: ${kind.skip}`, () => undefined);

  test('keeps every field of a record, known or not, and finds it by id', async () => {
    const { store } = await kind.fresh();
    const record = request({ expiresAt: '2030-01-01T00:00:00.000Z', orderId: 'order-7', fresh: { wallet: 'w', index: 3 }, futureField: { nested: ['a', 1] } });
    await store.requests.insert(record);
    expect(await store.requests.get(record.id)).toEqual(record);
    expect(await store.requests.get('nope')).toBeUndefined();
    await expect(store.requests.insert(record)).rejects.toMatchObject({ code: 'CONFLICT' });
  });

  test('an amount is in use only by an open, unexpired request to that address', async () => {
    const { store } = await kind.fresh();
    const open = request({ amountRaw: '5001' });
    const expired = request({ amountRaw: '5002', expiresAt: '2026-06-01T00:00:00.000Z' });
    const paid = request({ amountRaw: '5003' });
    for (const r of [open, expired, paid]) await store.requests.insert(r);
    expect(await store.requests.claim(paid.id, [hash()])).toMatchObject({ id: paid.id });
    const before = '2026-05-01T00:00:00.000Z';
    const after = '2026-07-01T00:00:00.000Z';
    expect(await store.requests.amountInUse(ADDRESS, '5001', after)).toBe(true);
    expect(await store.requests.amountInUse(ADDRESS, '5002', before)).toBe(true);
    expect(await store.requests.amountInUse(ADDRESS, '5002', after)).toBe(false);
    expect(await store.requests.amountInUse(ADDRESS, '5003', before)).toBe(false);
    expect(await store.requests.amountInUse('nano_other', '5001', before)).toBe(false);
  });

  test('one payment claims one request, whichever of two stores on the same data sees it, however many try at once', async () => {
    const { store, another } = await kind.fresh();
    const other = await another();
    const requests = Array.from({ length: 10 }, () => request({ amountRaw: '777' }));
    for (const r of requests) await store.requests.insert(r);
    const block = hash();
    const results = await Promise.all(requests.map((r, i) => (i % 2 === 0 ? store : other).requests.claim(r.id, [block])));
    const winners = results.filter((r) => r !== undefined);
    expect(winners).toHaveLength(1);
    expect(winners[0]?.paidBy).toEqual([block]);
    expect(await other.requests.claimedBy([block, hash()])).toEqual(new Map([[block, winners[0]?.id]]));
    // The paid request stays paid by the same block; claiming it again changes nothing.
    const paidId = (winners[0] as RequestRecord).id;
    expect(await store.requests.claim(paidId, [hash()])).toMatchObject({ paidBy: [block] });
    expect((await other.requests.get(paidId))?.paidBy).toEqual([block]);
  });

  test('a block received pays the oldest open shared-address request of its amount, once', async () => {
    const { store } = await kind.fresh();
    const older = request({ amountRaw: '4242' });
    const newer = request({ amountRaw: '4242' });
    const fresh = request({ amountRaw: '4242', fresh: { wallet: 'w', index: 1 } });
    await store.requests.insert(newer);
    await store.requests.insert(older);
    await store.requests.insert(fresh);
    const block = hash();
    expect((await store.requests.claimOldest(ADDRESS, '4242', block))?.id).toBe(older.id);
    expect(await store.requests.claimOldest(ADDRESS, '4242', block)).toBeUndefined();
    expect((await store.requests.claimOldest(ADDRESS, '4242', hash()))?.id).toBe(newer.id);
    expect(await store.requests.claimOldest(ADDRESS, '4242', hash())).toBeUndefined();
    expect((await store.requests.get(fresh.id))?.paidBy).toBeUndefined();
  });

  test('a fresh account goes to one request only, and the wallet\'s fresh indexes are listed', async () => {
    const { store } = await kind.fresh();
    await store.requests.insert(request({ fresh: { wallet: 'w', index: 4 } }));
    await store.requests.insert(request({ fresh: { wallet: 'w', index: 7 } }));
    await store.requests.insert(request({ fresh: { wallet: 'v', index: 9 } }));
    await expect(store.requests.insert(request({ fresh: { wallet: 'w', index: 4 } }))).rejects.toMatchObject({ code: 'CONFLICT' });
    expect((await store.requests.freshIndexes('w')).sort()).toEqual([4, 7]);
    expect(await store.requests.freshIndexes('none')).toEqual([]);
  });

  test('exclusive sections of two stores on the same data never overlap', async () => {
    const { store, another } = await kind.fresh();
    const other = await another();
    let inside = 0;
    let most = 0;
    const section = async () => {
      inside++;
      most = Math.max(most, inside);
      await sleep(20);
      inside--;
    };
    await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? store : other).exclusive('requests', section)));
    expect(most).toBe(1);
  });

  test('many exclusive sections of one store at once, each using the store, all finish (more than its connections)', async () => {
    const { store } = await kind.fresh();
    const done = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        store.exclusive('requests', async () => {
          await store.requests.insert(request({ amountRaw: String(9000 + i) }));
          return store.requests.amountInUse(ADDRESS, String(9000 + i), '2000-01-01T00:00:00.000Z');
        }),
      ),
    );
    expect(done).toEqual(Array(30).fill(true));
  });

  test('a status change made through one store reaches a subscriber of another, once', async () => {
    const { store, another } = await kind.fresh();
    const other = await another();
    const seen: StoreChange[] = [];
    const stop = await other.subscribe((change) => seen.push(change));
    const r = request();
    await store.requests.insert(r);
    const block = hash();
    await store.requests.claim(r.id, [block]);
    await store.requests.claim(r.id, [block]);
    for (let waited = 0; seen.length < 2 && waited < 500; waited++) await sleep(10);
    expect(seen.map((c) => [c.id, c.status])).toEqual([
      [r.id, 'open'],
      [r.id, 'paid'],
    ]);
    await stop();
    await store.requests.insert(request());
    await sleep(100);
    expect(seen).toHaveLength(2);
  });

  test('importing records twice adds them once, payments included', async () => {
    const { store } = await kind.fresh();
    const block = hash();
    const records = [request(), request({ paidBy: [block] })];
    expect(await store.requests.importAll(records)).toBe(2);
    expect(await store.requests.importAll(records)).toBe(0);
    expect(await store.requests.get(records[1]?.id as string)).toEqual(records[1]);
    expect(await store.requests.claimedBy([block])).toEqual(new Map([[block, records[1]?.id]]));
  });

  test('the outbox gives each item to one worker at a time, across stores, until it is done', async () => {
    const { store, another } = await kind.fresh();
    const other = await another();
    const ids = [];
    for (let i = 0; i < 12; i++) ids.push(await store.outbox.enqueue('webhook', { n: i }));
    await store.outbox.enqueue('other', { n: 99 });
    const claimed = await Promise.all(Array.from({ length: 16 }, (_, i) => (i % 2 === 0 ? store : other).outbox.claim('webhook', 60_000)));
    const got = claimed.filter((c) => c !== undefined);
    expect(got.map((c) => c.id).sort((a, b) => a - b)).toEqual(ids);
    expect(new Set(got.map((c) => (c.payload as { n: number }).n)).size).toBe(12);
    expect(got.every((c) => c.attempts === 1 && c.topic === 'webhook')).toBe(true);
    // Done is never given again; a retry is due again after its delay; an expired lease is given to another.
    const [first, second] = got;
    await store.outbox.done((first as { id: number }).id);
    await store.outbox.retry((second as { id: number }).id, 0);
    const again = await other.outbox.claim('webhook', 50);
    expect(again).toMatchObject({ id: (second as { id: number }).id, attempts: 2 });
    await sleep(120);
    expect(await store.outbox.claim('webhook', 60_000)).toMatchObject({ id: (second as { id: number }).id, attempts: 3 });
    expect(await store.outbox.claim('webhook', 60_000)).toBeUndefined();
  });

  test('a shop request and the payment request nanopay keeps for it are one transaction: both, or neither (issue 36)', async () => {
    const { store, another } = await kind.fresh();
    const other = await another();
    const changes: string[] = [];
    await store.subscribe((change) => changes.push(`${change.id} ${change.status}`));
    const kept = request();
    const shop = shopRequest({ id: kept.id });
    expect(await store.shop.create(shop, { key: 'one', fingerprint: 'f' }, kept)).toEqual({ request: shop, created: true });
    expect([await other.requests.get(kept.id), await other.shop.get(shop.id)]).toEqual([kept, shop]);
    // A second with the key taken: neither its payment request nor its row is added.
    const late = request();
    expect(await other.shop.create(shopRequest({ id: late.id }), { key: 'one', fingerprint: 'f' }, late)).toEqual({ request: shop, created: false });
    expect(await store.requests.get(late.id)).toBeUndefined();
    // A shop row that cannot be added (its id is taken) takes its payment request back with it.
    const clash = request();
    await expect(store.shop.create(shopRequest({ id: shop.id }), undefined, clash)).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await other.requests.get(clash.id)).toBeUndefined();
    // The requests table still announces what was added, once it is committed.
    await expect.poll(() => changes).toContain(`${kept.id} open`);
    expect(changes.filter((c) => !c.startsWith(kept.id))).toEqual([]);
  });

  test('shop requests: idempotency keys, filters and cursor pages, newest first', async () => {
    const { store, another } = await kind.fresh();
    const other = await another();
    const made: ShopRequest[] = [];
    for (let i = 0; i < 7; i++) {
      const r = shopRequest({ order_id: i % 2 === 0 ? 'even' : `odd-${i}` });
      expect(await (i % 2 === 0 ? store : other).shop.create(r)).toEqual({ request: r, created: true });
      made.push(r);
    }
    const keyed = shopRequest();
    expect(await store.shop.create(keyed, { key: 'k1', fingerprint: 'f1' })).toMatchObject({ created: true });
    // The same key and body from any instance: the same request; another body: refused.
    expect(await other.shop.create(shopRequest(), { key: 'k1', fingerprint: 'f1' })).toEqual({ request: keyed, created: false });
    await expect(other.shop.create(shopRequest(), { key: 'k1', fingerprint: 'f2' })).rejects.toMatchObject({ code: 'IDEMPOTENCY_MISMATCH' });
    expect(await store.shop.get(keyed.id)).toEqual(keyed);
    const first = await store.shop.list({ limit: 3 });
    expect(first.data.map((r) => r.id)).toEqual([keyed.id, made[6]?.id, made[5]?.id]);
    expect(first.hasMore).toBe(true);
    const pages: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await other.shop.list({ limit: 3, ...(after === undefined ? {} : { startingAfter: after }) });
      pages.push(...page.data.map((r) => r.id));
      if (!page.hasMore) break;
      after = page.data.at(-1)?.id;
    }
    expect(pages).toEqual([...made, keyed].map((r) => r.id).reverse());
    expect((await store.shop.list({ limit: 10, orderId: 'even' })).data).toHaveLength(4);
    await expect(store.shop.list({ limit: 10, startingAfter: 'nope' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  test('shop status changes: once per change, with its event queued in the same transaction, in order', async () => {
    const { store, another } = await kind.fresh();
    const other = await another();
    const r = shopRequest();
    await store.shop.create(r);
    const underpaid = { ...r, status: 'underpaid' as const, events: 1 };
    const e1 = webhookEvent(underpaid, 1);
    // Two instances see the same change: one wins, one event.
    const results = await Promise.all([store.shop.change('waiting', underpaid, e1), other.shop.change('waiting', underpaid, webhookEvent(underpaid, 1))]);
    expect(results.filter(Boolean)).toHaveLength(1);
    const paid = { ...underpaid, status: 'paid' as const, events: 2 };
    const e2 = webhookEvent(paid, 2);
    expect(await other.shop.change('underpaid', paid, e2)).toBe(true);
    expect(await store.shop.change('underpaid', paid, webhookEvent(paid, 2))).toBe(false);
    expect(await store.shop.get(r.id)).toEqual(paid);
    expect((await store.shop.unsettled(new Date(0).toISOString())).requests.map((x) => x.id)).not.toContain(r.id);
    const events = await store.shop.events(10);
    expect(events.map((e) => e.type)).toEqual(['request.paid', 'request.underpaid']);
    const e1id = (events[1] as WebhookEvent).id;
    expect(await store.shop.earlierPending(r.id, 2)).toBe(true);
    const item = await store.outbox.claim('webhook', 60_000);
    expect(item?.payload).toEqual({ event_id: e1id });
    await store.shop.recordDelivery(e1id, { attempts: 1, delivered_at: new Date().toISOString(), last_result: '200' });
    expect(await other.shop.earlierPending(r.id, 2)).toBe(false);
    expect((await other.shop.event(e1id))?.delivery).toMatchObject({ attempts: 1, last_result: '200' });
  });

  test("the webhook backlog: every instance's undelivered events, and how long the oldest has waited", async () => {
    const { store, another } = await kind.fresh();
    const other = await another();
    expect(await webhookBacklog(store)).toEqual({ pending: 0, oldestSeconds: 0 });
    const now = Math.floor(Date.now() / 1000);
    const events: WebhookEvent[] = [];
    for (const [i, age] of [600, 60].entries()) {
      const r = shopRequest();
      await store.shop.create(r);
      const paid = { ...r, status: 'paid' as const, events: 1 };
      const event = { ...webhookEvent(paid, 1), created: now - age };
      events.push(event);
      expect(await (i === 0 ? store : other).shop.change('waiting', paid, event)).toBe(true);
    }
    await store.outbox.enqueue('other', { n: 1 });
    const both = await webhookBacklog(other);
    expect(both.pending).toBe(2);
    expect(both.oldestSeconds).toBeGreaterThanOrEqual(600);
    expect(both.oldestSeconds).toBeLessThan(6000);
    // The oldest delivered: the next one is the oldest.
    const first = await store.outbox.claim('webhook', 60_000);
    expect(first?.payload).toEqual({ event_id: events[0]?.id });
    await store.outbox.done((first as { id: number }).id);
    const one = await webhookBacklog(store);
    expect(one.pending).toBe(1);
    expect(one.oldestSeconds).toBeGreaterThanOrEqual(60);
    expect(one.oldestSeconds).toBeLessThan(600);
    const second = await other.outbox.claim('webhook', 60_000);
    await other.outbox.done((second as { id: number }).id);
    // A resent event waits from when it was resent.
    await resendWebhook(store, events[0]?.id as string);
    const resent = await webhookBacklog(other);
    expect(resent.pending).toBe(1);
    expect(resent.oldestSeconds).toBeLessThan(60);
  });

  test('answers a ping while open, and fails it once closed', async () => {
    const { another } = await kind.fresh();
    const own = await another();
    await expect(own.ping()).resolves.toBeUndefined();
    await own.close();
    await expect(own.ping()).rejects.toThrow();
  });

  test('expired shop requests stay unsettled while a late payment may still come, then not', async () => {
    const { store } = await kind.fresh();
    const now = Date.now();
    const recent = shopRequest({ status: 'expired', expires_at: new Date(now - 3_600_000).toISOString() });
    const old = shopRequest({ status: 'expired', expires_at: new Date(now - 3 * 86_400_000).toISOString() });
    const late = shopRequest({ status: 'paid_late', expires_at: new Date(now - 60_000).toISOString() });
    const waiting = shopRequest();
    for (const r of [recent, old, late, waiting]) await store.shop.create(r);
    const since = new Date(now - 86_400_000).toISOString();
    const { requests, last } = await store.shop.unsettled(since);
    expect(requests.map((r) => r.id)).toEqual([recent.id, waiting.id]);
    // What the monitor follows of them, not their documents.
    expect(requests[0]).toEqual({ id: recent.id, status: 'expired', receive_address: recent.receive_address, created_at: recent.created_at, expires_at: recent.expires_at });
    expect(requests[1]).toEqual({ id: waiting.id, status: 'waiting', receive_address: waiting.receive_address, created_at: waiting.created_at });
    // Read again from where it ended: only what was recorded since.
    expect(await store.shop.unsettled(since, last)).toEqual({ requests: [], last });
    const newer = shopRequest();
    await store.shop.create(newer);
    const since2 = await store.shop.unsettled(since, last);
    expect(since2.requests.map((r) => r.id)).toEqual([newer.id]);
    expect(since2.last).toBeGreaterThan(last);
  });

  test('a listener is one more destination of the events recorded in its lease, with its own delivery state; gone or expired, what waits for it goes', async () => {
    const { store, another } = await kind.fresh();
    const other = await another();
    await store.shop.addDestination('lst_a', 'http://127.0.0.1:9/a', 60_000);
    await store.shop.addDestination('lst_b', 'http://127.0.0.1:9/b', 400);
    const r = shopRequest();
    await store.shop.create(r);
    const underpaid = { ...r, status: 'underpaid' as const, events: 1 };
    const e1 = webhookEvent(underpaid, 1);
    expect(await other.shop.change('waiting', underpaid, e1)).toBe(true);
    // One delivery for the live endpoints and one for each listener: never one for whoever claims it first.
    expect((await store.outbox.claim('webhook', 60_000))?.payload).toEqual({ event_id: e1.id });
    expect((await other.outbox.claim('webhook:lst_a', 60_000))?.payload).toEqual({ event_id: e1.id });
    expect(await store.shop.delivery(e1.id, 'lst_a')).toEqual({ attempts: 0 });
    expect(await store.shop.delivery(e1.id, 'lst_b')).toEqual({ attempts: 0 });

    await sleep(450);
    const paid = { ...underpaid, status: 'paid' as const, events: 2 };
    const e2 = webhookEvent(paid, 2);
    expect(await store.shop.change('underpaid', paid, e2)).toBe(true);
    // lst_b's lease ran out: the new event is not queued for it.
    expect(await store.shop.delivery(e2.id, 'lst_b')).toBeUndefined();
    expect(await store.shop.delivery(e2.id, 'lst_a')).toEqual({ attempts: 0 });
    // Each destination's order is its own: the listener took e1, the live endpoints have not.
    await store.shop.recordDelivery(e1.id, { attempts: 1, delivered_at: new Date().toISOString(), last_result: '200' }, 'lst_a');
    expect(await store.shop.earlierPending(r.id, 2, 'lst_a')).toBe(false);
    expect(await store.shop.earlierPending(r.id, 2)).toBe(true);
    expect((await store.shop.event(e1.id))?.delivery).toEqual({ attempts: 0 });

    // A listener registering drops the expired one with what waited for it (e1, never claimed).
    await other.shop.addDestination('lst_c', 'http://127.0.0.1:9/c', 60_000);
    expect(await store.shop.delivery(e1.id, 'lst_b')).toBeUndefined();
    expect(await store.outbox.claim('webhook:lst_b', 60_000)).toBeUndefined();
    // One that stops removes itself and what waits for it.
    await store.shop.removeDestination('lst_a');
    expect(await store.outbox.claim('webhook:lst_a', 60_000)).toBeUndefined();
    expect(await store.shop.delivery(e2.id, 'lst_a')).toBeUndefined();
    // The live endpoints' deliveries are untouched.
    expect((await other.outbox.claim('webhook', 60_000))?.payload).toEqual({ event_id: e2.id });
  });

  test('prices: one per request id, never changed; the last accepted rate per currency, a later one only replacing it', async () => {
    const { store, another } = await kind.fresh();
    const other = await another();
    const price = { currency: 'EUR', amount: '19.99', rate: '0.93', rate_source: 'https://rates.example/x', rate_time: '2026-03-01T12:00:00.000Z' };
    const id = randomUUID();
    await store.prices.record(id.toUpperCase(), price);
    await other.prices.record(id, { ...price, rate: '0.5' });
    expect(await other.prices.of(id)).toEqual(price);
    expect(await store.prices.of(randomUUID())).toBeUndefined();

    const rate = (time: string, value: string) => ({ currency: 'EUR', rate: value, source: 'https://rates.example/x', time, accepted_at: time });
    const longAgo = '2026-01-01T00:00:00.000Z';
    expect(await store.prices.lastRate('EUR')).toBeUndefined();
    await store.prices.accept(rate('2026-03-01T12:00:00.000Z', '0.93'), longAgo);
    // Another server accepted an older answer late: the newer stays.
    await other.prices.accept(rate('2026-03-01T11:00:00.000Z', '0.80'), longAgo);
    expect(await other.prices.lastRate('EUR')).toEqual(rate('2026-03-01T12:00:00.000Z', '0.93'));
    await other.prices.accept(rate('2026-03-01T12:05:00.000Z', '0.95'), longAgo);
    expect(await store.prices.lastRate('EUR')).toEqual(rate('2026-03-01T12:05:00.000Z', '0.95'));
    expect(await store.prices.lastRate('USD')).toBeUndefined();
  });

  test('accepted rates of the recent past: each kept (not just the last), read oldest first from a time, those before the cut forgotten', async () => {
    const { store, another } = await kind.fresh();
    const other = await another();
    const rate = (currency: string, at: string, value: string) => ({ currency, rate: value, source: 'https://rates.example/x', time: at, accepted_at: at, max_move: '10' });
    const longAgo = '2026-01-01T00:00:00.000Z';
    await store.prices.accept(rate('EUR', '2026-03-01T12:00:00.000Z', '1'), longAgo);
    await other.prices.accept(rate('EUR', '2026-03-01T12:10:00.000Z', '0.91'), longAgo);
    await store.prices.accept(rate('USD', '2026-03-01T12:15:00.000Z', '1.1'), longAgo);
    // Accepted late, from an older answer: not the last, but among the accepted at its time.
    await other.prices.accept(rate('EUR', '2026-03-01T12:05:00.000Z', '0.95'), longAgo);
    expect(await store.prices.acceptedSince('EUR', '2026-03-01T11:00:00.000Z')).toEqual([
      rate('EUR', '2026-03-01T12:00:00.000Z', '1'),
      rate('EUR', '2026-03-01T12:05:00.000Z', '0.95'),
      rate('EUR', '2026-03-01T12:10:00.000Z', '0.91'),
    ]);
    expect(await other.prices.acceptedSince('EUR', '2026-03-01T12:05:00.000Z')).toHaveLength(2);
    expect(await store.prices.lastRate('EUR')).toEqual(rate('EUR', '2026-03-01T12:10:00.000Z', '0.91'));
    // The next accept forgets the currency's rates before the cut; other currencies keep theirs.
    await store.prices.accept(rate('EUR', '2026-03-01T13:08:00.000Z', '0.9'), '2026-03-01T12:08:00.000Z');
    expect((await other.prices.acceptedSince('EUR', longAgo)).map((r) => r.rate)).toEqual(['0.91', '0.9']);
    expect(await other.prices.acceptedSince('USD', longAgo)).toEqual([rate('USD', '2026-03-01T12:15:00.000Z', '1.1')]);
  });

  test('export pages: in the order the requests were recorded, a range of creation times and a status, each page after the last, none twice or missed', async () => {
    const { store, another } = await kind.fresh();
    const other = await another();
    const base = Date.parse('2026-01-01T00:00:00.000Z');
    const made = [0, 1, 2, 2, 3, 4, 5, 6].map((minute, i) =>
      shopRequest({ created_at: new Date(base + minute * 60_000).toISOString(), status: i % 3 === 0 ? 'paid' : 'waiting', order_id: `o-${i}` }),
    );
    // Two servers on one store record them in turn.
    for (const [i, r] of made.entries()) await (i % 2 === 0 ? store : other).shop.create(r);
    const all = async (query: Parameters<Store['shop']['exportPage']>[0], limit: number): Promise<string[]> => {
      const ids: string[] = [];
      let after: number | undefined;
      do {
        const page = await store.shop.exportPage(query, after, limit);
        expect(page.requests.length).toBeLessThanOrEqual(limit);
        ids.push(...page.requests.map((r) => r.id));
        after = page.next;
      } while (after !== undefined);
      return ids;
    };
    const ids = made.map((r) => r.id);
    expect(await all({}, 3)).toEqual(ids);
    expect(await all({}, 8)).toEqual(ids);
    const from = new Date(base + 2 * 60_000).toISOString();
    const to = new Date(base + 5 * 60_000).toISOString();
    expect(await all({ from, to }, 2)).toEqual(made.filter((r) => r.created_at >= from && r.created_at < to).map((r) => r.id));
    expect(await all({ status: 'paid', from }, 1)).toEqual(made.filter((r) => r.status === 'paid' && r.created_at >= from).map((r) => r.id));
    expect(await all({ from: new Date(base + 3_600_000).toISOString() }, 5)).toEqual([]);
  });

  test('a store made by a newer nanopay is refused, not written to', async () => {
    const { store, another } = await kind.fresh();
    if (store instanceof SqliteStore) store.db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (999, ?)').run('now');
    else await (store as PostgresStore).query('INSERT INTO schema_migrations (version) VALUES (999)');
    const error = await another().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NanoPayError);
    expect(error).toMatchObject({ code: 'STORE_TOO_NEW' });
  });

  test('spending decisions: the trail pages in order by profile and time; a spend counts while in flight or paid, not once dropped or cancelled', async () => {
    const { store, another } = await kind.fresh();
    const at = (ms: number) => new Date(Date.parse('2026-05-01T00:00:00Z') + ms).toISOString();
    const decision = (n: number, fields: Partial<AuditRecord> = {}): AuditRecord => ({
      id: `rec-${n}-${randomUUID()}`,
      at: at(n * 1000),
      profile: 'p',
      front_end: 'mcp',
      kind: 'send',
      account: ADDRESS,
      recipient: ADDRESS,
      amount_raw: String(n),
      decision: 'allowed',
      rule: null,
      ...fields,
    });
    const [a, b, c, d] = [hash(), hash(), hash(), hash()];
    await store.audit.add(decision(1, { hash: a, status: 'in_flight' }));
    await store.audit.add(decision(2, { hash: b, status: 'in_flight' }));
    await store.audit.add(decision(3, { decision: 'denied', rule: 'day', message: 'over' }));
    await store.audit.add(decision(4, { hash: c, status: 'in_flight', decision: 'approved', rule: 'ask-above', approval_id: 'apr_x' }));
    await store.audit.add(decision(5, { hash: d, status: 'in_flight', profile: 'q' }));
    expect(await store.audit.setStatus('p', a, 'paid', at(9000))).toBe(true);
    expect(await store.audit.setStatus('p', b, 'dropped', at(9000))).toBe(true);
    expect(await store.audit.setStatus('p', d, 'paid', at(9000))).toBe(false);
    const other = await another();
    expect((await other.audit.counted('p', 0)).map((r) => [r.amount_raw, r.status, r.decision])).toEqual(
      expect.arrayContaining([
        ['1', 'paid', 'allowed'],
        ['4', 'in_flight', 'approved'],
      ]),
    );
    expect(await other.audit.counted('p', Date.parse(at(1000)))).toHaveLength(1);
    expect((await other.audit.inFlight('p', ADDRESS)).map((r) => r.hash)).toEqual([c]);
    if (store instanceof SqliteStore) {
      // Asked on every payment: read by an index of the spends in flight, not through every spend of the profile.
      const plan = store.db.prepare(`EXPLAIN QUERY PLAN SELECT doc FROM spend_audit WHERE profile = ? AND account = ? AND counts = 1 AND status = 'in_flight'`).all('p', ADDRESS);
      expect(JSON.stringify(plan)).toContain('USING INDEX spend_audit_in_flight');
    }
    const first = await other.audit.page({ profile: 'p', limit: 2 });
    expect(first.map((r) => r.amount_raw)).toEqual(['1', '2']);
    const next = await other.audit.page({ profile: 'p', limit: 2, afterSeq: first.at(-1)?.seq as number });
    expect(next.map((r) => [r.amount_raw, r.decision, r.rule])).toEqual([
      ['3', 'denied', 'day'],
      ['4', 'approved', 'ask-above'],
    ]);
    expect(next[1]).toMatchObject({ hash: c, status: 'in_flight', approval_id: 'apr_x' });
    expect((await other.audit.page({ profile: 'p', limit: 10, sinceMs: Date.parse(at(3000)) })).map((r) => r.amount_raw)).toEqual(['3', '4']);
  });

  test('approvals: found by id within their profile, reused while pending, answered and used once (compare-and-set), a chat token finds its own', async () => {
    const { store, another } = await kind.fresh();
    const approval = (fields: Partial<ApprovalRecord> = {}): ApprovalRecord => ({
      id: `apr_${randomUUID()}`,
      profile: 'p',
      state: 'pending',
      created_at: '2026-05-01T00:00:00.000Z',
      expires_at: '2026-05-01T01:00:00.000Z',
      front_end: 'mcp',
      kind: 'x402',
      account: ADDRESS,
      recipient: ADDRESS,
      host: 'api.example.com',
      amount_raw: '1000',
      requirement: { scheme: 'exact', amount: '1000' },
      rule: 'ask-above',
      message: 'above',
      ...fields,
    });
    const one = approval();
    await store.approvals.create(one, 'binding-1');
    const other = await another();
    expect(await other.approvals.get('p', one.id)).toEqual(one);
    expect(await other.approvals.get('q', one.id)).toBeUndefined();
    expect((await other.approvals.pendingFor('p', 'binding-1', Date.parse('2026-05-01T00:30:00Z')))?.id).toBe(one.id);
    expect(await other.approvals.pendingFor('p', 'binding-1', Date.parse('2026-05-01T01:00:00Z'))).toBeUndefined();
    expect((await other.approvals.list('p', Date.parse('2026-05-01T00:30:00Z'))).map((a) => a.id)).toEqual([one.id]);
    const approved = { ...one, state: 'approved' as const, decided_by: 'password' };
    const answers = await Promise.all([store.approvals.change('pending', approved), other.approvals.change('pending', { ...one, state: 'denied' })]);
    expect(answers.filter(Boolean)).toHaveLength(1);
    const now = await store.approvals.get('p', one.id);
    const used = await Promise.all([store.approvals.change(now?.state as 'approved', { ...(now as ApprovalRecord), state: 'used' }), other.approvals.change(now?.state as 'approved', { ...(now as ApprovalRecord), state: 'used' })]);
    expect(used.filter(Boolean)).toHaveLength(1);
    const held = approval();
    await store.approvals.create(held, 'binding-2');
    await store.approvals.setChatToken('p', held.id, 'digest-of-token');
    expect((await other.approvals.byChatToken('p', 'digest-of-token'))?.id).toBe(held.id);
    expect(await other.approvals.byChatToken('q', 'digest-of-token')).toBeUndefined();
    // A chat's held call keeps its own approval: another ask for the same spend gets a new one.
    expect(await other.approvals.pendingFor('p', 'binding-2', Date.parse('2026-05-01T00:30:00Z'))).toBeUndefined();
    expect((await other.approvals.list('p', 0, true)).map((a) => a.id).sort()).toEqual([one.id, held.id].sort());
  });

  test('keeps refunds: one per idempotency key (another refund under it is refused), by request in order, pending until updated', async () => {
    const { store, another } = await kind.fresh();
    const other = await another();
    const refund = (fields: Partial<RefundRecord>): RefundRecord => ({
      id: `rf_${randomUUID()}`,
      request_id: 'req-1',
      status: 'pending',
      amount: '0.1',
      amount_raw: '100000000000000000000000000000',
      to: ADDRESS,
      received_raw: '300000000000000000000000000000',
      created_at: new Date().toISOString(),
      source: 'api',
      ...fields,
    });
    const first = refund({ idempotency_key: 'k1', fingerprint: 'f1' });
    // Two stores on the same data add under one key at once: one refund is kept, both get it.
    const added = await Promise.all([store.refunds.add(first), other.refunds.add({ ...first, id: `rf_${randomUUID()}` })]);
    expect(added.filter((a) => a.created)).toHaveLength(1);
    expect(added[0]?.refund.id).toBe(added[1]?.refund.id);
    await expect(store.refunds.add(refund({ idempotency_key: 'k1', fingerprint: 'f2' }))).rejects.toMatchObject({ code: 'IDEMPOTENCY_MISMATCH' });
    const second = refund({});
    await store.refunds.add(second);
    await store.refunds.add(refund({ request_id: 'req-2' }));
    expect((await other.refunds.ofRequest('req-1')).map((r) => r.id)).toEqual([added[0]?.refund.id, second.id]);
    expect(await other.refunds.pending(10)).toHaveLength(3);
    await store.refunds.update({ ...second, status: 'sent', block: hash(), refunded_at: new Date().toISOString() });
    expect(await other.refunds.get(second.id)).toMatchObject({ status: 'sent' });
    expect((await other.refunds.pending(10)).map((r) => r.id)).not.toContain(second.id);
    expect(await other.refunds.byKey('k1')).toMatchObject({ id: added[0]?.refund.id });
  });

  test('keeps sweep runs: the unfinished one is found by another store, a finished one no more', async () => {
    const { store, another } = await kind.fresh();
    const run: SweepRun = { id: randomUUID(), to: ADDRESS, min_raw: '1', started_at: new Date().toISOString(), accounts: [{ address: ADDRESS, wallet: 'w', index: 1, request_id: 'r', status: 'planned' }] };
    expect(await store.sweeps.unfinished()).toBeUndefined();
    await store.sweeps.save(run);
    run.accounts[0] = { ...(run.accounts[0] as SweepAccount), status: 'sending', amount_raw: '5' };
    await store.sweeps.save(run);
    expect(await (await another()).sweeps.unfinished()).toEqual(run);
    await store.sweeps.save({ ...run, finished_at: new Date().toISOString() });
    expect(await store.sweeps.unfinished()).toBeUndefined();
    const later: SweepRun = { ...run, id: randomUUID(), accounts: [] };
    await store.sweeps.save(later);
    expect((await store.sweeps.recent(5)).map((r) => r.id)).toEqual([later.id, run.id]);
    expect(await store.sweeps.recent(1)).toEqual([later]);
  });

  test('searches shop requests: filters, both sorts both ways, keyset pages that add up, exact totals in XNO and at each fiat rate', async () => {
    const { store } = await kind.fresh();
    const xno = (n: number): string => (BigInt(n) * 10n ** 29n).toString(); // n tenths of an XNO
    const made: ShopRequest[] = [];
    const statuses = ['waiting', 'paid', 'underpaid', 'partially_refunded', 'expired'] as const;
    for (let i = 0; i < 23; i++) {
      const status = statuses[i % statuses.length] as (typeof statuses)[number];
      const amount = xno(((i * 7) % 23) + 1);
      const created = new Date(Date.parse('2026-03-01T00:00:00.000Z') + i * 3_600_000).toISOString();
      const request = shopRequest({
        status,
        amount_raw: amount,
        created_at: created,
        order_id: `order-${i % 4}`,
        ...(status === 'underpaid' ? { received_raw: '1' } : {}),
        ...(status === 'partially_refunded' ? { refunded_amount_raw: '3' } : {}),
        ...(i % 3 === 0 ? { fiat: { currency: i % 2 === 0 ? 'EUR' : 'USD', amount: '1', rate: '0.8523', rate_source: 'https://rates.example', rate_time: created } } : {}),
      });
      await store.shop.create(request);
      made.push(request);
    }
    // A change keeps the columns: the first waiting request is paid.
    const first = made[0] as ShopRequest;
    const paid = { ...first, status: 'paid' as const, events: 1 };
    expect(await store.shop.change('waiting', paid)).toBe(true);
    made[0] = paid;

    const received = (r: ShopRequest): bigint => BigInt(r.received_raw ?? (['paid', 'partially_refunded'].includes(r.status) ? r.amount_raw : '0'));
    const pages = async (query: Parameters<Store['shop']['search']>[0]): Promise<string[]> => {
      const ids: string[] = [];
      let after: string | undefined;
      do {
        const page = await store.shop.search({ ...query, ...(after === undefined ? {} : { after }) });
        expect(page.data.length).toBeLessThanOrEqual(query.limit);
        ids.push(...page.data.map((r) => r.id));
        after = page.next;
      } while (after !== undefined);
      return ids;
    };
    const byCreated = [...made].reverse().map((r) => r.id);
    expect(await pages({ sort: 'created', descending: true, limit: 4 })).toEqual(byCreated);
    expect(await pages({ sort: 'created', descending: false, limit: 5 })).toEqual(made.map((r) => r.id));
    const byAmount = [...made].sort((a, b) => (BigInt(a.amount_raw) === BigInt(b.amount_raw) ? 0 : BigInt(a.amount_raw) < BigInt(b.amount_raw) ? -1 : 1) || made.indexOf(a) - made.indexOf(b));
    expect(await pages({ sort: 'amount', descending: false, limit: 3 })).toEqual(byAmount.map((r) => r.id));
    expect(await pages({ sort: 'amount', descending: true, limit: 6 })).toEqual([...byAmount].reverse().map((r) => r.id));

    const filter = { status: 'underpaid' as const, from: '2026-03-01T05:00:00.000Z', to: '2026-03-01T20:00:00.000Z', minRaw: xno(2), maxRaw: xno(20) };
    const expected = made.filter((r) => r.status === 'underpaid' && r.created_at >= filter.from && r.created_at < filter.to && BigInt(r.amount_raw) >= BigInt(xno(2)) && BigInt(r.amount_raw) <= BigInt(xno(20)));
    expect(expected.length).toBeGreaterThan(0);
    expect(await pages({ ...filter, sort: 'amount', descending: true, limit: 2 })).toEqual(
      [...expected].sort((a, b) => (BigInt(b.amount_raw) < BigInt(a.amount_raw) ? -1 : BigInt(b.amount_raw) > BigInt(a.amount_raw) ? 1 : made.indexOf(b) - made.indexOf(a))).map((r) => r.id),
    );
    expect((await store.shop.search({ orderId: 'order-1', sort: 'created', descending: true, limit: 100 })).data.map((r) => r.id)).toEqual(
      made.filter((r) => r.order_id === 'order-1').reverse().map((r) => r.id),
    );
    await expect(store.shop.search({ sort: 'amount', descending: true, limit: 2, after: 'c12' })).rejects.toMatchObject({ code: 'INVALID_REQUEST' });

    const totals = await store.shop.totals({});
    expect(totals.count).toBe(23);
    expect(totals.received_raw).toBe(made.reduce((n, r) => n + received(r), 0n).toString());
    expect(totals.refunded_raw).toBe(made.reduce((n, r) => n + BigInt(r.refunded_amount_raw ?? '0'), 0n).toString());
    // Each currency at its requests' own rate: raw × 0.8523 / 10^30, rounded half up to cents.
    const fiatOf = (currency: string, pick: (r: ShopRequest) => bigint): string => {
      const sum = made.filter((r) => r.fiat?.currency === currency).reduce((n, r) => n + pick(r) * 8523n, 0n);
      const cents = (sum + 5n * 10n ** 31n) / 10n ** 32n;
      return `${cents / 100n}.${(cents % 100n).toString().padStart(2, '0')}`;
    };
    expect(totals.fiat).toEqual([
      { currency: 'EUR', received: fiatOf('EUR', received), refunded: fiatOf('EUR', (r) => BigInt(r.refunded_amount_raw ?? '0')) },
      { currency: 'USD', received: fiatOf('USD', received), refunded: fiatOf('USD', (r) => BigInt(r.refunded_amount_raw ?? '0')) },
    ]);
    const some = await store.shop.totals(filter);
    expect(some).toMatchObject({ count: expected.length, received_raw: String(expected.length), refunded_raw: '0' });
  });
});
