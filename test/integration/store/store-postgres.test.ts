import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWallet } from '../../../src/ops/profile/wallet.js';
import { payUri, paymentStatus, requestPayment } from '../../../src/ops/requests/payments.js';
import { Session } from '../../../src/ops/session.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { PostgresStore } from '../../../src/store/postgres.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import type { StoreChange } from '../../../src/store/store.js';
import type { RequestRecord } from '../../../src/wallet/requests.js';
import { fundedUser } from '../../helpers/ledger/backend-users.js';
import { PASSWORD, newUser } from '../../helpers/processes/cli.js';
import { postgresUnavailable, startPostgres, type PostgresCluster } from '../../helpers/ledger/postgres.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';

/**
 * Several instances on one PostgreSQL database, as several `checkout serve`s
 * would be: each instance is its own process (the built store, dist/store/),
 * with its own connections. A claim is made once whichever instance sees the
 * payment; a change reaches the others' subscribers; a restarted server is
 * caught up with.
 */
const skip = postgresUnavailable();
const STORE_MODULE = fileURLToPath(new URL('../../../dist/store/postgres.js', import.meta.url));

/** An instance in a child process: runs one command, prints one JSON line per result. */
const INSTANCE = `
const [, moduleUrl, url, command, ...args] = process.argv;
const { PostgresStore } = await import(moduleUrl);
const store = await PostgresStore.open(url);
if (command === 'claim') {
  console.log(JSON.stringify({ record: (await store.requests.claim(args[0], [args[1]])) ?? null }));
  await store.close();
} else {
  await store.subscribe((change) => console.log(JSON.stringify(change)));
  console.log(JSON.stringify({ ready: true }));
}
`;

let cluster: PostgresCluster;
const children: ChildProcess[] = [];
const stores: PostgresStore[] = [];

function instance(url: string, command: string, ...args: string[]): { child: ChildProcess; lines: AsyncIterableIterator<string> } {
  const child = spawn(process.execPath, ['--input-type=module', '-e', INSTANCE, '--', `file://${STORE_MODULE}`, url, command, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return { child, lines: createInterface({ input: child.stdout as NodeJS.ReadableStream })[Symbol.asyncIterator]() };
}

async function nextLine<T>(lines: AsyncIterableIterator<string>): Promise<T> {
  const { value, done } = await lines.next();
  if (done === true) throw new Error('the instance ended');
  return JSON.parse(value as string) as T;
}

async function database(): Promise<{ url: string; store: PostgresStore }> {
  const url = await cluster.createDatabase(`m_${randomUUID().replaceAll('-', '')}`);
  const store = await PostgresStore.open(url);
  stores.push(store);
  return { url, store };
}

const ADDRESS = 'nano_1111111111111111111111111111111111111111111111111111hifc8npp';
const request = (amountRaw: string): RequestRecord => ({ id: randomUUID(), address: ADDRESS, baseRaw: amountRaw, amountRaw, createdAt: new Date().toISOString() });
const hash = () => randomUUID().replaceAll('-', '').toUpperCase().padEnd(64, '0');

async function waitFor(check: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await sleep(10);
}

describe.skipIf(skip !== undefined)('stores of several processes on one PostgreSQL', () => {
  beforeAll(async () => {
    cluster = await startPostgres();
  });

  afterAll(async () => {
    for (const child of children) child.kill();
    for (const store of stores) await store.close().catch(() => undefined);
    await cluster?.stop();
  });

  it('a payment seen by two instances at once claims one request, once', async () => {
    const { url, store } = await database();
    for (let round = 0; round < 4; round++) {
      const [first, second] = [request('99'), request('99')];
      await store.requests.insert(first);
      await store.requests.insert(second);
      const block = hash();
      const results = await Promise.all(
        [first, second].map(async (r) => (await nextLine<{ record: RequestRecord | null }>(instance(url, 'claim', r.id, block).lines)).record),
      );
      expect(results.filter((r) => r !== null)).toHaveLength(1);
      const paid = [await store.requests.get(first.id), await store.requests.get(second.id)].filter((r) => r?.paidBy !== undefined);
      expect(paid).toHaveLength(1);
      expect(paid[0]?.paidBy).toEqual([block]);
    }
  });

  // How soon (well under a second here) is measured by npm run bench:store; a test does not time.
  it('two machines with the same wallet on one database: 20 fresh requests at once get 20 accounts; a payment pays one request, seen paid by both', async () => {
    const sb: RunningSandbox = await sandbox();
    const machineB = await mkdtemp(join(tmpdir(), 'nanopay-machine-b-'));
    try {
      const url = await cluster.createDatabase(`f_${randomUUID().replaceAll('-', '')}`);
      const merchant = await newUser(sb.url, { NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: sb.url, NANOPAY_DATABASE_URL: url });
      await createWallet(new Session({ password: async () => PASSWORD, env: merchant.env }));
      // Machine B: a copy of the merchant's config dir (the same wallet), on the same database.
      await cp(merchant.configDir, machineB, { recursive: true });
      const envs = [merchant.env, { ...merchant.env, HOME: machineB, NANOPAY_CONFIG_DIR: machineB }];
      const on = (machine: number) => new Session({ password: async () => PASSWORD, env: envs[machine] as NodeJS.ProcessEnv });
      const requests = await Promise.all(Array.from({ length: 20 }, (_, i) => requestPayment(on(i % 2), { amount: { xno: '0.01' }, freshAddress: true })));
      expect(new Set(requests.map((r) => r.receive_address)).size).toBe(20);
      const customer = await fundedUser(sb, 'node', '1');
      const chosen = requests[5] as (typeof requests)[number];
      await payUri(customer.session, chosen.uri, {});
      const [a, b] = [on(0), on(1)];
      const paid = [];
      for (const [i, r] of requests.entries()) if ((await paymentStatus(i % 2 === 0 ? b : a, r.transaction_id)).is_paid) paid.push(r.transaction_id);
      expect(paid).toEqual([chosen.transaction_id]);
      expect((await paymentStatus(a, chosen.transaction_id)).is_paid).toBe(true);
      for (const session of [a, b]) await (await session.dataStore()).close();
    } finally {
      await sb.close();
      await shutdownWorkers();
      await rm(machineB, { recursive: true, force: true });
    }
  });

  it('a status change made by one instance reaches a subscriber in another, once', async () => {
    const { url, store } = await database();
    const { lines } = instance(url, 'subscribe');
    expect(await nextLine(lines)).toEqual({ ready: true });
    const r = request('5');
    await store.requests.insert(r);
    await store.requests.claim(r.id, [hash()]);
    const opened = await nextLine<StoreChange>(lines);
    const paid = await nextLine<StoreChange>(lines);
    expect([opened, paid].map((c) => [c.id, c.status])).toEqual([
      [r.id, 'open'],
      [r.id, 'paid'],
    ]);
  });

  it('PostgreSQL restarted mid-way: the stores reconnect, and a subscriber catches up with what it missed, each change once', async () => {
    const { url, store } = await database();
    const other = await PostgresStore.open(url);
    stores.push(other);
    // Made before the subscription: never passed on, not even by a catch-up.
    await store.requests.insert(request('6'));
    const seen: StoreChange[] = [];
    await other.subscribe((change) => seen.push(change));
    const before = request('7');
    await store.requests.insert(before);
    await waitFor(() => seen.length === 1, 5000);
    expect(seen).toHaveLength(1);

    await cluster.restart(1500);
    // Made as soon as the server is back: the subscriber is likely still waiting to reconnect, and catches up.
    const after = request('8');
    await store.requests.insert(after);
    await store.requests.claim(before.id, [hash()]);
    await waitFor(() => seen.length >= 3, 5000);
    await sleep(300);
    expect(seen.map((c) => [c.id, c.status])).toEqual([
      [before.id, 'open'],
      [after.id, 'open'],
      [before.id, 'paid'],
    ]);
    expect((await other.requests.get(before.id))?.paidBy).toHaveLength(1);
  });
});

if (skip !== undefined) describe('stores of several processes on one PostgreSQL', () => it.skip(`skipped: ${skip}`, () => undefined));
