import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client } from '@x402/fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeClient } from '../../../src/api/node-client.js';
import { addressToPublicKey, xnoToRaw } from '../../../src/nano/index.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { NanoPay } from '../../../src/sdk/nanopay.js';
import { nanoExactClientScheme } from '../../../src/x402/schemes.js';
import { BIN, PASSWORD, type CliUser } from '../../helpers/processes/cli.js';
import { fundedUser } from '../../helpers/ledger/backend-users.js';
import { ledger, sandbox } from '../../helpers/ledger/sandbox.js';
import type { RunningCommand } from '../../helpers/processes/serve.js';
import { paywallShop } from '../../helpers/ledger/x402.js';

/** An API to sell: /data answers at once; /hold/… waits until the test answers it. */
interface Upstream {
  url: string;
  server: Server;
  holding: ServerResponse[];
}

let sb: RunningSandbox;
let up: Upstream;
let merchant: CliUser;
let customer: CliUser;
let merchantAddress: string;
let paywall: RunningCommand<{ url: string }>;
let node: NodeClient;
const PRICE = '0.001';

beforeAll(async () => {
  sb = await sandbox();
  up = { url: '', server: createServer(), holding: [] };
  up.server.on('request', (req, res) => {
    if (req.url?.startsWith('/hold') === true) return void up.holding.push(res);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: req.url }));
  });
  await new Promise<void>((resolve) => up.server.listen(0, '127.0.0.1', resolve));
  up.url = `http://127.0.0.1:${(up.server.address() as AddressInfo).port}`;
  ({ merchant, customer, merchantAddress, paywall } = await paywallShop(sb, up.url, PRICE));
  node = new NodeClient({ url: sb.url });
});
afterAll(async () => {
  await paywall.stop();
  up.server.closeAllConnections();
  await new Promise((resolve) => up.server.close(resolve));
  await sb.close();
});

interface LanesJson {
  count: number;
  fund: string;
  from: string;
  funded: string;
  returned: string;
  lanes: { lane: number; index: number; address: string; balance: string; balance_raw: string; outstanding: { hash: string } | null; held_by: unknown }[];
}

/** Sends to the merchant on the ledger: hash and the account that paid. */
async function paymentsToMerchant(): Promise<{ hash: string; account: string }[]> {
  const merchantKey = addressToPublicKey(merchantAddress);
  return sb.service.ledger.blocks.size === 0
    ? []
    : [...sb.service.ledger.blocks.values()].filter((b) => b.subtype === 'send' && b.block.link.toUpperCase() === merchantKey).map((b) => ({ hash: b.hash, account: b.account }));
}

/** Blocks the paywall settled (one `.settled` mark per settlement, in its config dir). */
function settledByPaywall(): number {
  const dir = join(merchant.configDir, 'x402', 'settlements');
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.settled')).length : 0;
}

/** The customer's journal entries (signed blocks not yet settled), by account. */
function journal(): Record<string, { hash: string; block: never; chequeFor?: string; sendId?: string }> {
  const dir = join(customer.configDir, 'journal');
  if (!existsSync(dir)) return {};
  return Object.fromEntries(readdirSync(dir).filter((f) => /^nano_\w+\.json$/.test(f)).map((f) => [f.slice(0, -5), JSON.parse(readFileSync(join(dir, f), 'utf8'))]));
}

/** The spending decisions of the trail (its records of policy changes left out). */
async function audit(): Promise<Record<string, string>[]> {
  const out = (await customer.run(['audit', '--json'])).stdout.trim();
  return out === '' ? [] : out.split('\n').map((line) => JSON.parse(line) as Record<string, string>).filter((r) => r.kind !== 'policy');
}

/**
 * A proxy in front of the paywall that passes unpaid requests and keeps every
 * paid one (it never reaches the paywall): a payment signed and journaled,
 * never presented.
 */
async function startSwallowingProxy(target: string): Promise<{ url: string; swallowed: () => number; close: () => Promise<void> }> {
  const kept: ServerResponse[] = [];
  const server = createServer((req, res) => {
    if (req.headers['payment-signature'] !== undefined) return void kept.push(res);
    void fetch(`${target}${req.url ?? '/'}`).then(async (answer) => {
      res.writeHead(answer.status, Object.fromEntries(answer.headers.entries()));
      res.end(Buffer.from(await answer.arrayBuffer()));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    swallowed: () => kept.length,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

let lanes: LanesJson;

describe('payment lanes: parallel x402 payments from one wallet (issue 32, part 4)', () => {
  it('lanes set 8 --fund 0.5 funds eight accounts of the wallet from its account; the funding counts toward no budget', async () => {
    // A day budget far below what the lanes are funded with: funding is no spend, so it is not refused.
    expect((await customer.run(['policy', 'set', 'day', '1'])).code).toBe(0);
    const set = await customer.json<LanesJson>(['lanes', 'set', '8', '--fund', '0.5']);
    expect(set._code).toBe(0);
    lanes = set;
    expect(lanes).toMatchObject({ count: 8, fund: '0.5', funded: '4' });
    expect(new Set(lanes.lanes.map((l) => l.address)).size).toBe(8);
    expect(lanes.lanes.map((l) => [l.index, l.balance, l.outstanding])).toEqual(Array.from({ length: 8 }, (_, i) => [0x7fff0000 + i, '0.5', null]));
    expect(lanes.lanes.map((l) => l.address)).not.toContain(lanes.from);
    const balance = await customer.json<{ balance: string }>(['balance']);
    expect(balance.balance).toBe('6');
    expect(await audit()).toEqual([]);
    // A lane is no account to name: --account refuses lane indexes.
    const named = await customer.run(['send', merchantAddress, '0.001', '--yes', '--account', String(0x7fff0000)]);
    expect([named.code, named.stderr]).toEqual([2, expect.stringMatching(/payment lanes/)]);
    const used = await customer.run(['wallet', 'use', 'default', '--account', String(0x7fff0001)]);
    expect([used.code, used.stderr]).toEqual([2, expect.stringMatching(/payment lanes/)]);
  });

  it('20 concurrent requests through @x402/fetch from one wallet against nanopay paywall: all paid exactly once, none refused', async () => {
    const before = { payments: (await paymentsToMerchant()).length, settled: settledByPaywall() };
    const nanopay = new NanoPay({ password: PASSWORD, env: customer.env });
    const client = x402Client.fromConfig({
      schemes: [{ network: 'nano:dev', client: nanoExactClientScheme(nanopay, { maxXno: '0.01' }) as never }],
      spendControls: { allowedAssets: [{ network: 'nano:dev', asset: 'XNO', maxAmountPerPayment: xnoToRaw('0.01').toString() }] },
    });
    const payingFetch = wrapFetchWithPayment(fetch, client);
    const answers = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const response = await payingFetch(`${paywall.printed.url}/data?i=${i}`);
        return { status: response.status, body: (await response.json()) as unknown, settlement: decodePaymentResponseHeader(response.headers.get('payment-response') as string) };
      }),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(answers.map((a) => a.body)).toEqual(Array.from({ length: 20 }, (_, i) => ({ data: `/data?i=${i}` })));
    expect(answers.every((a) => a.settlement.success)).toBe(true);
    const hashes = answers.map((a) => a.settlement.transaction);
    expect(new Set(hashes).size).toBe(20);
    await nanopay.lanesIdle();

    const after = await paymentsToMerchant();
    const laneAddresses = new Set(lanes.lanes.map((l) => l.address));
    expect(after.length).toBe(before.payments + 20);
    expect(after.slice(before.payments).map((p) => p.hash).sort()).toEqual([...hashes].sort());
    expect(after.slice(before.payments).every((p) => laneAddresses.has(p.account))).toBe(true);
    expect(settledByPaywall()).toBe(before.settled + 20);
    // Every cheque resolved (found paid): no lane carries one any more.
    expect(journal()).toEqual({});
    const paid = (await audit()).filter((r) => r.kind === 'x402' && r.status === 'paid');
    expect(paid.map((r) => r.hash).sort()).toEqual([...hashes].sort());
    expect(paid.every((r) => laneAddresses.has(r.account as string))).toBe(true);
  });

  it('the same with nanopay fetch in 20 processes: all paid exactly once, none refused', async () => {
    const before = { payments: (await paymentsToMerchant()).length, settled: settledByPaywall() };
    const runs = await Promise.all(Array.from({ length: 20 }, (_, i) => customer.json<{ status: number; body: string; payment: { hash: string; payer: string; repeated: boolean } }>(['fetch', `${paywall.printed.url}/data?p=${i}`, '--max', '0.01', '--yes'])));
    expect(runs.map((r) => [r._code, r.status])).toEqual(Array(20).fill([0, 200]));
    const hashes = runs.map((r) => r.payment.hash);
    expect(new Set(hashes).size).toBe(20);
    const after = await paymentsToMerchant();
    expect(after.length).toBe(before.payments + 20);
    expect(after.slice(before.payments).map((p) => p.hash).sort()).toEqual([...hashes].sort());
    const laneAddresses = new Set(lanes.lanes.map((l) => l.address));
    expect(runs.every((r) => laneAddresses.has(r.payment.payer))).toBe(true);
    expect(settledByPaywall()).toBe(before.settled + 20);
    expect(journal()).toEqual({});
  }, 240_000);

  it('budgets count what lanes pay, not what they are funded with', async () => {
    const spent = (await audit()).filter((r) => r.kind === 'x402' && r.status === 'paid').reduce((sum, r) => sum + BigInt(r.amount_raw as string), 0n);
    expect(spent).toBe(40n * xnoToRaw(PRICE));
    // Room for exactly one more payment in the day budget (4 XNO of funding did not count).
    expect((await customer.run(['policy', 'set', 'day', '0.041'])).code).toBe(0);
    const one = await customer.json<{ status: number }>(['fetch', `${paywall.printed.url}/data?budget=1`, '--max', '0.01', '--yes']);
    expect([one._code, one.status]).toEqual([0, 200]);
    const refused = await customer.run(['fetch', `${paywall.printed.url}/data?budget=2`, '--max', '0.01', '--yes', '--json']);
    expect(refused.code).toBe(7);
    expect(JSON.parse(refused.stdout).error).toMatchObject({ code: 'POLICY_DENIED', rule: 'day' });
    expect((await customer.run(['policy', 'unset', 'day'])).code).toBe(0);
  });

  it('a payment held for approval is bound to the wallet\'s account, not to the lane that happened to take it: approved, any lane pays it once', async () => {
    expect((await customer.run(['policy', 'set', 'ask-above', '0.0005'])).code).toBe(0);
    try {
      const url = `${paywall.printed.url}/data?approved=1`;
      const held = await customer.json<{ error: { code: string; approval: { id: string } } }>(['fetch', url, '--max', '0.01', '--yes']);
      expect(held).toMatchObject({ _code: 14, error: { code: 'APPROVAL_REQUIRED' } });
      const listed = await customer.json<{ approvals: { id: string; account: string }[] }>(['approvals', 'list']);
      expect(listed.approvals.find((a) => a.id === held.error.approval.id)?.account).toBe(lanes.from);
      expect((await customer.run(['approvals', 'approve', held.error.approval.id, '--yes'])).code).toBe(0);
      // The lane that took the held attempt is busy now (held by this live process): another lane must pay it.
      const first = (await audit()).find((r) => r.approval_id === held.error.approval.id && r.decision === 'approval_required')?.account as string;
      expect(lanes.lanes.map((l) => l.address)).toContain(first);
      const claim = join(customer.configDir, 'lanes', `${first}.claim`);
      writeFileSync(claim, `${process.pid}\n${hostname()}\n${new Date().toISOString()}\n${Date.now() + 600_000}\ntest`, { mode: 0o600 });
      try {
        const paid = await customer.json<{ status: number; payment: { payer: string } }>(['fetch', url, '--max', '0.01', '--yes', '--approval', held.error.approval.id]);
        expect([paid._code, paid.status]).toEqual([0, 200]);
        expect(lanes.lanes.map((l) => l.address).filter((a) => a !== first)).toContain(paid.payment.payer);
      } finally {
        rmSync(claim, { force: true });
      }
      expect(await customer.json(['fetch', url, '--max', '0.01', '--yes', '--approval', held.error.approval.id])).toMatchObject({ _code: 10, error: { code: 'APPROVAL_INVALID' } });
    } finally {
      expect((await customer.run(['policy', 'unset', 'ask-above'])).code).toBe(0);
    }
  });

  it('kill -9 after signing (never presented) and after presenting: each lane keeps one outstanding cheque or none, and the next use resolves each', async () => {
    const proxy = await startSwallowingProxy(paywall.printed.url);
    const children: ChildProcess[] = [];
    const start = (url: string): void => void children.push(spawn(process.execPath, [BIN, 'fetch', url, '--max', '0.01', '--yes'], { env: customer.env, stdio: 'ignore' }));
    try {
      // Two kept by the proxy (signed and journaled, never presented); two held by the upstream (presented, not settled).
      for (const path of ['/hold/a', '/hold/b']) start(`${paywall.printed.url}${path}`);
      start(`${proxy.url}/data?kept=1`);
      start(`${proxy.url}/data?kept=2`);
      await waitFor(() => up.holding.length === 2 && proxy.swallowed() === 2, 'two payments presented and two kept before the paywall');
      expect(Object.keys(journal())).toHaveLength(4);
      for (const child of children) child.kill('SIGKILL');
      await Promise.all(children.map((child) => (child.exitCode !== null || child.signalCode !== null ? undefined : new Promise((resolve) => child.once('close', resolve)))));
    } finally {
      for (const res of up.holding.splice(0)) res.writeHead(503).end('gone');
      await proxy.close();
    }
    const cheques = journal();
    const laneAddresses = new Set(lanes.lanes.map((l) => l.address));
    expect(Object.keys(cheques).every((account) => laneAddresses.has(account))).toBe(true);
    expect(Object.values(cheques).every((c) => c.chequeFor !== undefined)).toBe(true);
    const hashes = Object.values(cheques).map((c) => c.hash);
    // A server settles one of them after all (it publishes it); the other three never reach the ledger.
    const cashed = Object.values(cheques).find((c) => c.chequeFor?.includes('/hold/a') === true) as { hash: string; block: never };
    await node.publish(cashed.block, 'send', cashed.hash);

    // The next use of each lane resolves its cheque: lanes set (same count) holds every lane once.
    const again = await customer.json<LanesJson>(['lanes', 'set', '8']);
    expect(again._code).toBe(0);
    expect(journal()).toEqual({});
    expect(again.lanes.every((l) => l.outstanding === null)).toBe(true);
    const onLedger = new Set((await ledger(sb.url)).blocks.map((b) => b.hash));
    expect(hashes.filter((h) => onLedger.has(h))).toEqual([cashed.hash]);
    const trail = await audit();
    expect(hashes.map((h) => trail.find((r) => r.hash === h)?.status).sort()).toEqual(['cancelled', 'cancelled', 'cancelled', 'paid']);
    const next = await customer.json<{ status: number }>(['fetch', `${paywall.printed.url}/data?after=kill`, '--max', '0.01', '--yes']);
    expect([next._code, next.status]).toEqual([0, 200]);
  }, 120_000);

  it('a lane left low is refilled from the funding account in the background; money leaves the wallet only as payments, and only payments count', async () => {
    const payer = await fundedUser(sb, 'node', '1');
    const sdk = new NanoPay({ password: PASSWORD, env: payer.user.env });
    const set = await sdk.setLanes(2, { fund: '0.003' });
    expect(set.lanes.map((l) => l.balance)).toEqual(['0.003', '0.003']);
    const before = (await paymentsToMerchant()).length;
    // Ten payments of 0.001 through two lanes that hold three each: they must be refilled on the way.
    const paid = await Promise.all(Array.from({ length: 10 }, (_, i) => sdk.fetchWithPayment(`${paywall.printed.url}/data?refill=${i}`, {}, { maxXno: '0.01' })));
    expect(paid.map((p) => p.response.status)).toEqual(Array(10).fill(200));
    await sdk.lanesIdle();
    const after = await paymentsToMerchant();
    expect(after.length).toBe(before + 10);
    const shown = await sdk.lanes();
    const inLanes = shown.lanes.reduce((sum, l) => sum + BigInt(l.balance_raw) + BigInt(l.receivable_raw), 0n);
    const main = BigInt((await sdk.balance()).balance_raw);
    expect(main + inLanes).toBe(xnoToRaw('1') - 10n * xnoToRaw(PRICE));
    expect(main).toBeLessThan(xnoToRaw('1') - xnoToRaw('0.006'));
    const trail = (await payer.user.run(['audit', '--json'])).stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, string>);
    expect(trail.map((r) => [r.kind, r.status])).toEqual(Array(10).fill(['x402', 'paid']));
    await sdk.session.close();
  });

  it('lanes set 0 empties every lane back into the account that funds them', async () => {
    const shown = await customer.json<LanesJson>(['lanes']);
    const held = shown.lanes.reduce((sum, l) => sum + BigInt(l.balance_raw), 0n);
    const before = BigInt((await customer.json<{ balance_raw: string }>(['balance'])).balance_raw);
    const emptied = await customer.json<LanesJson & { returned_raw: string }>(['lanes', 'set', '0']);
    expect(emptied).toMatchObject({ count: 0, lanes: [] });
    expect(BigInt(emptied.returned_raw)).toBe(held);
    expect(BigInt((await customer.json<{ balance_raw: string }>(['balance'])).balance_raw)).toBe(before + held);
    // Without lanes the account pays itself, as before.
    const paid = await customer.json<{ status: number; payment: { payer: string } }>(['fetch', `${paywall.printed.url}/data?after=lanes`, '--max', '0.01', '--yes']);
    expect([paid._code, paid.status, paid.payment.payer]).toEqual([0, 200, shown.from]);
  });
});
