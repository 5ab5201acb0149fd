import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { publicKeyToAddress } from '../../src/nano/index.js';
import { WebhookDeliverer } from '../../src/shop/deliver.js';
import { ShopMonitor, type ShopReading, type ShopStatusSource } from '../../src/shop/monitor.js';
import type { ProvedSend } from '../../src/ops/ledger/proofs.js';
import type { ShopRequest } from '../../src/store/shop.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/store/store.js';
import { tempDir } from '../helpers/processes/temp.js';
import { startWebhookReceiver, until } from '../helpers/network/webhook-receiver.js';

const ADDRESS = 'nano_1111111111111111111111111111111111111111111111111111hifc8npp';
const stores: Store[] = [];

afterAll(async () => {
  for (const store of stores) await store.close();
});

async function freshStore(): Promise<Store> {
  const dir = await tempDir('nanopay-monitor-');
  const store = await SqliteStore.open(join(dir, 'shop.sqlite'), join(dir, 'locks'), 'test');
  stores.push(store);
  return store;
}

function shopRequest(fields: Partial<ShopRequest> = {}): ShopRequest {
  return { id: randomUUID(), status: 'waiting', currency: 'XNO', amount: '1', amount_raw: '1', receive_address: ADDRESS, uri: `nano:${ADDRESS}`, created_at: new Date().toISOString(), events: 0, ...fields };
}

const round = (monitor: ShopMonitor): Promise<void> => monitor.round();
const noPayments = async (): Promise<ProvedSend[]> => [];

describe('the shop monitor', () => {
  it('on a source whose reads cost (the service), reads young requests every round and old ones by a sixth of their age', async () => {
    const store = await freshStore();
    const clock = { now: Date.now() };
    const young = shopRequest({ created_at: new Date(clock.now).toISOString() });
    const old = shopRequest({ created_at: new Date(clock.now - 6 * 3_600_000).toISOString() });
    for (const r of [young, old]) await store.shop.create(r);
    const reads: string[] = [];
    const source: ShopStatusSource = { read: async (r) => (reads.push(r.id), { status: 'waiting' }), payments: noPayments };
    const monitor = new ShopMonitor({ store, source, pollMs: 10, now: () => clock.now });
    await round(monitor);
    expect(reads.sort()).toEqual([young.id, old.id].sort());
    clock.now += 20;
    await round(monitor);
    // The six-hour-old one is due again in an hour, the young one at once.
    expect(reads.filter((id) => id === young.id)).toHaveLength(2);
    expect(reads.filter((id) => id === old.id)).toHaveLength(1);
  });

  it('on a node, reads again only the requests whose address saw its blocks change; records a change once, with its event', async () => {
    const store = await freshStore();
    const request = shopRequest();
    await store.shop.create(request);
    let pending = 'a';
    let answer: ShopReading = { status: 'waiting' };
    const reads: string[] = [];
    const asked: string[][] = [];
    const source: ShopStatusSource = {
      read: async (r) => (reads.push(r.id), answer),
      fingerprints: async (addresses) => new Map(addresses.map((a) => [a, pending])),
      payments: async (address, blocks) => (asked.push(blocks), blocks.map((b) => ({ hash: b, from: `payer of ${b}`, to: address, amountRaw: 5n, confirmed: true }))),
    };
    const monitor = new ShopMonitor({ store, source, pollMs: 10 });
    await round(monitor);
    await round(monitor);
    expect(reads).toHaveLength(1);
    pending = 'a,b';
    answer = { status: 'paid', paid_by: ['B'] };
    await round(monitor);
    expect(reads).toHaveLength(2);
    const paid = await store.shop.get(request.id);
    expect(paid).toMatchObject({ status: 'paid', paid_by: ['B'], payers: ['payer of B'], payments: [{ block: 'B', from: 'payer of B', amount_raw: '5' }], events: 1 });
    // When it was recorded paid: the export's paid_at.
    expect(Date.parse(paid?.paid_at ?? '')).toBeGreaterThan(Date.now() - 60_000);
    expect(asked).toEqual([['B']]);
    const [event] = await store.shop.events(10);
    expect(event).toMatchObject({ type: 'request.paid', request_seq: 1, data: { object: { id: request.id, status: 'paid' } } });
    // Final: never read again.
    pending = 'c';
    await round(monitor);
    expect(reads).toHaveLength(2);
    expect(await store.shop.events(10)).toHaveLength(1);
  });

  it('a round whose print changed reads after a read under way (a page\'s, begun before the payment), never joins it', async () => {
    const store = await freshStore();
    const request = shopRequest();
    await store.shop.create(request);
    let pending = '';
    let paid = false;
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let reads = 0;
    const source: ShopStatusSource = {
      // The first read looks at the ledger before the payment, then is slow to answer.
      read: async () => {
        reads++;
        const seen: ShopReading = paid ? { status: 'paid', paid_by: ['B'] } : { status: 'waiting' };
        if (reads === 1) await held;
        return seen;
      },
      fingerprints: async (addresses) => new Map(addresses.map((a) => [a, pending])),
      payments: noPayments,
    };
    const monitor = new ShopMonitor({ store, source, pollMs: 10 });
    const page = monitor.check(request.id);
    await until(() => reads === 1, 'the page\'s read under way');
    paid = true;
    pending = 'B';
    const woken = round(monitor);
    release();
    await Promise.all([page, woken]);
    expect((await store.shop.get(request.id))?.status).toBe('paid');
    // Recorded as read at the paying print: the next rounds leave it alone.
    await round(monitor);
    expect(reads).toBe(2);
  });

  it('on a node, tells the open requests\' addresses once, then only the changes: paid or expired ones leave, a shared address when its last request does', async () => {
    const store = await freshStore();
    const clock = { now: Date.now() };
    const [A, B, C, D] = Array.from({ length: 4 }, () => publicKeyToAddress(randomBytes(32)));
    const a = shopRequest({ receive_address: A as string });
    const b = shopRequest({ receive_address: B as string, expires_at: new Date(clock.now + 60_000).toISOString() });
    const shared = [shopRequest(), shopRequest()];
    const untouched = shopRequest({ receive_address: D as string });
    for (const r of [a, b, ...shared, untouched]) await store.shop.create(r);
    const answers = new Map<string, ShopReading>();
    const prints = new Map<string, string>([[D as string, '']]);
    const reads: string[] = [];
    const told: string[][][] = [];
    const source: ShopStatusSource = {
      read: async (r) => (reads.push(r.id), answers.get(r.id) ?? { status: 'waiting' }),
      fingerprints: async (addresses) => new Map(addresses.map((x) => [x, prints.get(x) ?? 'seen'])),
      payments: noPayments,
    };
    const monitor = new ShopMonitor({ store, source, pollMs: 10, now: () => clock.now, onFollow: (add, remove) => told.push([add.sort(), remove.sort()]) });
    await round(monitor);
    expect(told).toEqual([[[A, B, ADDRESS, D].sort(), []]]);
    // Nothing ever came to D: no read. The others are read once.
    expect(reads.sort()).toEqual([a.id, b.id, ...shared.map((r) => r.id)].sort());
    await round(monitor);
    expect(told).toHaveLength(1);

    answers.set(a.id, { status: 'paid', paid_by: ['P'] });
    prints.set(A as string, 'paid');
    answers.set(shared[0]!.id, { status: 'paid', paid_by: ['Q'] });
    prints.set(ADDRESS, 'paid once');
    await round(monitor);
    // The shared address stays followed: one of its requests is still open.
    expect(told.slice(1)).toEqual([[[], [A]]]);

    clock.now += 61_000;
    await round(monitor);
    expect((await store.shop.get(b.id))?.status).toBe('expired');
    expect(told.slice(2)).toEqual([[[], [B]]]);

    // One this instance makes is followed at once, not at the next round.
    const made = shopRequest({ receive_address: C as string });
    await store.shop.create(made);
    monitor.track(made);
    expect(told.slice(3)).toEqual([[[C], []]]);

    answers.set(shared[1]!.id, { status: 'paid', paid_by: ['R'] });
    prints.set(ADDRESS, 'paid twice');
    await round(monitor);
    expect(told.slice(4)).toEqual([[[], [ADDRESS]]]);
  });

  it('an unpaid request past its expiry turns expired; paid wins over expired', async () => {
    const store = await freshStore();
    const past = new Date(Date.now() - 1000).toISOString();
    const unpaid = shopRequest({ expires_at: past });
    const paid = shopRequest({ expires_at: past });
    for (const r of [unpaid, paid]) await store.shop.create(r);
    const source: ShopStatusSource = { read: async (r) => (r.id === paid.id ? { status: 'paid' } : { status: 'waiting' }), payments: noPayments };
    await round(new ShopMonitor({ store, source, pollMs: 10 }));
    expect((await store.shop.get(unpaid.id))?.status).toBe('expired');
    expect((await store.shop.get(paid.id))?.status).toBe('paid');
    expect((await store.shop.events(10)).map((e) => e.type).sort()).toEqual(['request.expired', 'request.paid']);
  });
});

describe('late payments in the shop monitor', () => {
  it('an expired request is still read: the exact amount after it is paid_late, one event, then final; past the watch, not read', async () => {
    const store = await freshStore();
    const clock = { now: Date.now() };
    const expired = shopRequest({ status: 'expired', events: 1, created_at: new Date(clock.now - 120_000).toISOString(), expires_at: new Date(clock.now - 60_000).toISOString() });
    const forgotten = shopRequest({ status: 'expired', events: 1, expires_at: new Date(clock.now - 2 * 86_400_000).toISOString() });
    for (const r of [expired, forgotten]) await store.shop.create(r);
    let answer: ShopReading = { status: 'expired' };
    const reads: string[] = [];
    const monitor = new ShopMonitor({ store, source: { read: async (r) => (reads.push(r.id), answer), payments: noPayments }, pollMs: 10, now: () => clock.now });
    await round(monitor);
    expect(reads).toEqual([expired.id]);
    expect(await store.shop.events(10)).toEqual([]);
    answer = { status: 'paid_late', paid_by: ['L'] };
    // Two minutes old: read again after a sixth of its age.
    clock.now += 30_000;
    await round(monitor);
    expect(await store.shop.get(expired.id)).toMatchObject({ status: 'paid_late', paid_by: ['L'], events: 2 });
    expect((await store.shop.events(10)).map((e) => [e.type, e.request_seq])).toEqual([['request.paid_late', 2]]);
    clock.now += 60_000;
    await round(monitor);
    expect(reads).toEqual([expired.id, expired.id]);
  });
});

describe('the webhook deliverer', () => {
  it('retries an event only to the endpoints that have not taken it, until each has', async () => {
    const store = await freshStore();
    const request = shopRequest();
    await store.shop.create(request);
    const paid = { ...request, status: 'paid' as const, events: 1 };
    await store.shop.change('waiting', paid, { id: 'evt_1', type: 'request.paid', created: Math.floor(Date.now() / 1000), request_seq: 1, data: { object: paid }, delivery: { attempts: 0 } });
    const up = await startWebhookReceiver(() => 'secret-one');
    const down = await startWebhookReceiver(() => 'secret-one');
    down.down = true;
    const deliverer = new WebhookDeliverer({ store, endpoints: [up.url, down.url], secrets: ['secret-one'], backoffMs: 20 });
    deliverer.start();
    try {
      await until(async () => ((await store.shop.event('evt_1'))?.delivery.attempts ?? 0) >= 3, 'three attempts');
      down.down = false;
      await until(() => down.events.length === 1, 'the endpoint back up');
      await until(async () => (await store.shop.event('evt_1'))?.delivery.delivered_at !== undefined, 'delivered');
      expect(up.events).toHaveLength(1);
      expect((await store.shop.event('evt_1'))?.delivery.delivered_to?.sort()).toEqual([up.url, down.url].sort());
    } finally {
      await deliverer.stop();
      await up.close();
      await down.close();
    }
  });
});
