import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeClient } from '../../src/api/node-client.js';
import { rawToXno } from '../../src/nano/index.js';
import { SAFETY_POLL_MS } from '../../src/ops/ledger/confirmations.js';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import { nodeStatusSource, ShopMonitor, type ShopMonitorOptions } from '../../src/shop/monitor.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/store/store.js';
import { sandbox } from '../helpers/ledger/sandbox.js';
import { openFreshRequests } from '../helpers/ledger/shop-requests.js';
import { startFaultyProxy, type FaultyProxy } from '../helpers/network/faulty-proxy.js';
import { tempDir } from '../helpers/processes/temp.js';

/**
 * The shop monitor on a node (the sandbox's node side, every RPC call counted by a proxy in front of it):
 * a round takes the prints of the open requests' addresses in batches and reads only the requests whose
 * address moved; while the WebSocket is live, the rounds between full ones look only at what they are told.
 */
type Call = { action?: string; account?: string; accounts?: string[] };
let sb: RunningSandbox;
let proxy: FaultyProxy;
const calls: Call[] = [];
const stores: Store[] = [];
const PRICE = 1000n;

beforeAll(async () => {
  sb = await sandbox();
  proxy = await startFaultyProxy(sb.url, (_method, _path, body) => (calls.push(body), 'pass'));
});

afterAll(async () => {
  for (const store of stores) await store.close();
  await proxy?.close();
  await sb?.close();
});

async function freshStore(): Promise<Store> {
  const dir = await tempDir('nanopay-shop-watch-');
  const store = await SqliteStore.open(join(dir, 'shop.sqlite'), join(dir, 'locks'), 'test');
  stores.push(store);
  return store;
}

function monitorOn(store: Store, options: Partial<ShopMonitorOptions> = {}): ShopMonitor {
  const node = new NodeClient({ url: proxy.url });
  return new ShopMonitor({ store, source: nodeStatusSource({ dataStore: async () => store }, node), pollMs: 10, ...options });
}

/** The calls `run` made. */
async function counted(run: () => Promise<void>): Promise<Call[]> {
  const from = calls.length;
  await run();
  return calls.slice(from);
}

/** The accounts single-account calls named (a status read of a request), each once. */
const readAccounts = (made: Call[]): string[] => [...new Set(made.flatMap((c) => (c.account === undefined ? [] : [c.account])))];
const bound = (open: number): number => open / 500 + 10;

describe('the shop monitor on a node', () => {
  it('reads no untouched address of 600 open ones, in two batch calls a round; a payment makes its request alone read, and paid', async () => {
    const store = await freshStore();
    const open = await openFreshRequests(store, 600, { amountRaw: PRICE });
    const monitor = monitorOn(store);
    const first = await counted(() => monitor.round());
    expect(first.map((c) => c.action).sort()).toEqual(['accounts_frontiers', 'accounts_receivable']);
    expect(first[0]?.accounts).toHaveLength(600);

    const paid = open[17]!;
    sb.service.fund(paid.receive_address, rawToXno(PRICE));
    const second = await counted(() => monitor.round());
    expect(second.length).toBeLessThanOrEqual(bound(600));
    expect(readAccounts(second)).toEqual([paid.receive_address]);
    expect(await store.shop.get(paid.id)).toMatchObject({ status: 'paid', events: 1 });

    // Paid is final: not looked at again, the others not read.
    const third = await counted(() => monitor.round());
    expect(readAccounts(third)).toEqual([]);
    expect(third[0]?.accounts).toHaveLength(599);
  });

  it('a node failing the batch calls gets no read per request: the round fails, and the next one is full again', async () => {
    const store = await freshStore();
    const open = await openFreshRequests(store, 50, { amountRaw: PRICE });
    let failing = true;
    const seen: Call[] = [];
    const flaky = await startFaultyProxy(sb.url, (_method, _path, body: Call) => (seen.push(body), failing && body.action?.startsWith('accounts_') === true ? '500' : 'pass'));
    const logged: string[] = [];
    try {
      const monitor = new ShopMonitor({ store, source: nodeStatusSource({ dataStore: async () => store }, new NodeClient({ url: flaky.url, retries: 0 })), pollMs: 10, live: () => true, log: (line) => logged.push(line) });
      sb.service.fund(open[0]!.receive_address, rawToXno(PRICE));
      await monitor.round();
      expect(readAccounts(seen)).toEqual([]);
      expect(logged.some((line) => line.startsWith('status round failed'))).toBe(true);
      failing = false;
      seen.length = 0;
      await monitor.round();
      expect(seen.find((c) => c.action === 'accounts_frontiers')?.accounts).toHaveLength(50);
      expect((await store.shop.get(open[0]!.id))?.status).toBe('paid');
    } finally {
      await flaky.close();
    }
  });

  it('expires what saw nothing without a read, also in a monitor that never read it (a restart)', async () => {
    const store = await freshStore();
    const clock = { now: Date.now() };
    const open = await openFreshRequests(store, 40, { amountRaw: PRICE, expiresInS: 60 });
    const paid = open[3]!;
    expect(readAccounts(await counted(() => monitorOn(store, { now: () => clock.now }).round()))).toEqual([]);
    clock.now += 61_000;
    // Before its expiry by the ledger's clock (the block's time decides paid or late; this test moves only the monitor's).
    sb.service.fund(paid.receive_address, rawToXno(PRICE));
    const restarted = monitorOn(store, { now: () => clock.now });
    const made = await counted(() => restarted.round());
    // Only the address that saw a payment is read.
    expect(readAccounts(made)).toEqual([paid.receive_address]);
    const events = await store.shop.events(100);
    expect(events.filter((e) => e.type === 'request.expired')).toHaveLength(39);
    expect((await store.shop.get(paid.id))?.status).toBe('paid');
  });

  it('while the WebSocket is live: a round between full ones looks only at what a confirmation named, what expires and what was made elsewhere', async () => {
    const store = await freshStore();
    const clock = { now: Date.now() };
    const open = await openFreshRequests(store, 100, { amountRaw: PRICE, expiresInS: 3600 });
    const monitor = monitorOn(store, { now: () => clock.now, live: () => true });
    // The first round is full: the start.
    expect(await counted(() => monitor.round())).toHaveLength(2);
    clock.now += 10_000;
    expect(await counted(() => monitor.round())).toEqual([]);

    const told = open[5]!;
    sb.service.fund(told.receive_address, rawToXno(PRICE));
    monitor.wake(told.receive_address);
    const woken = await counted(() => monitor.round());
    expect(woken.filter((c) => c.accounts !== undefined).map((c) => c.accounts)).toEqual([[told.receive_address], [told.receive_address]]);
    expect((await store.shop.get(told.id))?.status).toBe('paid');

    // Made by another instance on the same store, and paid before this one knew it: found at the next round.
    const [elsewhere] = await openFreshRequests(store, 1, { amountRaw: PRICE });
    sb.service.fund(elsewhere!.receive_address, rawToXno(PRICE));
    expect(readAccounts(await counted(() => monitor.round()))).toEqual([elsewhere!.receive_address]);
    expect((await store.shop.get(elsewhere!.id))?.status).toBe('paid');

    // A confirmation the WebSocket never delivered: the full round every SAFETY_POLL_MS finds it.
    const missed = open[9]!;
    sb.service.fund(missed.receive_address, rawToXno(PRICE));
    clock.now += 10_000;
    expect(await counted(() => monitor.round())).toEqual([]);
    clock.now += SAFETY_POLL_MS;
    const full = await counted(() => monitor.round());
    expect(full.find((c) => c.action === 'accounts_frontiers')?.accounts).toHaveLength(99);
    expect(readAccounts(full)).toEqual([missed.receive_address]);
    expect((await store.shop.get(missed.id))?.status).toBe('paid');

    // The connection came or went: full at once.
    monitor.wake();
    expect((await counted(() => monitor.round())).find((c) => c.action === 'accounts_frontiers')?.accounts).toHaveLength(98);
  });
});
