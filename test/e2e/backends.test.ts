import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { xnoToRaw } from '../../src/nano/index.js';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import { BIN, newUser, type CliUser, type PaymentRequest } from '../helpers/cli.js';
import { fund, ledger, sandbox } from '../helpers/sandbox.js';

/** The main wallet and payment flow, the same test bodies once per backend, against one sandbox that speaks both. */
const XNO = 10n ** 30n;
type Backend = 'service' | 'node';

let sb: RunningSandbox;

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  await sb?.close();
});

/** A user of `backend` with a wallet: made by the service (with its API key), or on this machine for a node. */
async function userOf(backend: Backend): Promise<{ user: CliUser; address: string }> {
  const env = backend === 'node' ? { NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: sb.url, NANOPAY_NODE_WS_URL: sb.wsUrl } : {};
  const user = await newUser(sb.url, env);
  const created = await user.json<{ address: string }>(backend === 'node' ? ['wallet', 'create'] : ['wallet', 'create', '--remote']);
  expect(created._code).toBe(0);
  return { user, address: created.address };
}

describe.each<Backend>(['service', 'node'])('the main flow on the %s backend', (backend) => {
  let alice: CliUser;
  let bob: CliUser;
  let aliceAddress: string;
  let bobAddress: string;

  beforeAll(async () => {
    ({ user: alice, address: aliceAddress } = await userOf(backend));
    ({ user: bob, address: bobAddress } = await userOf(backend));
  });

  it('funds, receives and sends with balances exact to the raw', async () => {
    await fund(sb.url, aliceAddress, '10');
    const before = await alice.json<{ balance_raw: string; pending_raw: string }>(['balance']);
    expect(before).toMatchObject({ _code: 0, balance_raw: '0', pending_raw: (10n * XNO).toString() });
    const received = await alice.json<{ balance_raw: string; received: { subtype: string }[] }>(['balance', '--receive']);
    expect(received.balance_raw).toBe((10n * XNO).toString());
    expect(received.received.map((r) => r.subtype)).toEqual(['open']);

    const sent = await alice.json<{ hash: string; balance_after_raw: string }>(['send', bobAddress, '2.5', '--yes']);
    expect(sent._code).toBe(0);
    expect(sent.balance_after_raw).toBe(((75n * XNO) / 10n).toString());
    const bobBalance = await bob.json<{ balance_raw: string; pending_raw: string }>(['balance', '--receive']);
    expect(bobBalance).toMatchObject({ balance_raw: ((25n * XNO) / 10n).toString(), pending_raw: '0' });
    const raw = await bob.json<{ amount_raw: string }>(['send', aliceAddress, '1', '--raw', '--yes']);
    expect(raw.amount_raw).toBe('1');
  });

  it('two concurrent sends from one wallet both land on one chain', async () => {
    const [one, two] = await Promise.all([
      alice.json<{ hash: string }>(['send', bobAddress, '0.1', '--yes']),
      alice.json<{ hash: string }>(['send', bobAddress, '0.2', '--yes']),
    ]);
    expect([one._code, two._code], JSON.stringify([one, two])).toEqual([0, 0]);
    const chain = (await ledger(sb.url)).blocks.filter((b) => b.account === aliceAddress);
    expect(chain.map((b) => b.hash)).toEqual(expect.arrayContaining([one.hash, two.hash]));
    const heights = chain.map((b) => Number(b.height)).sort((a, b) => a - b);
    expect(heights).toEqual(heights.map((_, i) => i + 1));
  });

  it('--dry-run signs nothing and --id makes a send idempotent', async () => {
    const before = (await ledger(sb.url)).blocks.length;
    const dry = await alice.json<{ dry_run: boolean; hash: null }>(['send', bobAddress, '1', '--dry-run']);
    expect(dry).toMatchObject({ dry_run: true, hash: null });
    const first = await alice.json<{ hash: string; repeated: boolean }>(['send', bobAddress, '0.3', '--yes', '--id', `order-${backend}`]);
    const again = await alice.json<{ hash: string; repeated: boolean }>(['send', bobAddress, '0.3', '--yes', '--id', `order-${backend}`]);
    expect(first.repeated).toBe(false);
    expect(again).toMatchObject({ hash: first.hash, repeated: true });
    expect((await ledger(sb.url)).blocks.length).toBe(before + 1);
  });

  it('refuses over the funds and over the limits, whatever the flags', async () => {
    const tooMuch = await alice.run(['send', bobAddress, '1000', '--yes', '--json']);
    expect(tooMuch.code).toBe(4);
    expect(JSON.parse(tooMuch.stdout)).toMatchObject({ error: { code: 'INSUFFICIENT_FUNDS' } });
    expect((await alice.run(['config', 'set', 'limit-per-send', '0.5'])).code).toBe(0);
    const over = await alice.run(['send', bobAddress, '0.6', '--yes', '--json']);
    expect(over.code).toBe(7);
    expect(JSON.parse(over.stdout)).toMatchObject({ error: { code: 'LIMIT_EXCEEDED' } });
    expect((await alice.run(['config', 'set', 'limit-per-send', '--unset'])).code).toBe(0);
  });

  it('only the exact adjusted amount marks a request paid; a payment short of it is underpaid', async () => {
    const request = await bob.json<PaymentRequest>(['request', '1.25']);
    expect(request).toMatchObject({ _code: 0, receive_address: bobAddress });
    expect(BigInt(request.amount_raw)).toBeGreaterThan(xnoToRaw('1.25'));
    expect(request.uri).toBe(`nano:${bobAddress}?amount=${request.amount_raw}`);

    expect((await alice.json(['send', bobAddress, '1.25', '--yes']))._code).toBe(0);
    const unpaid = await bob.json<{ is_paid: boolean; message: string }>(['status', request.transaction_id]);
    expect(unpaid.is_paid).toBe(false);
    if (backend === 'node') expect(unpaid.message).toMatch(/underpaid/i);

    const paid = await alice.json<{ amount_raw: string }>(['pay', request.uri, '--yes']);
    expect(paid.amount_raw).toBe(request.amount_raw);
    const status = await bob.json<{ is_paid: boolean; message: string; amount: string }>(['status', request.transaction_id]);
    expect(status).toMatchObject({ is_paid: true, amount: request.amount });
    expect(status.message).toMatch(/receive/i);
    // Received, the request stays paid.
    expect((await bob.json(['receive']))._code).toBe(0);
    expect((await bob.json<{ is_paid: boolean }>(['status', request.transaction_id])).is_paid).toBe(true);
  });

  it('status --watch --json prints NDJSON and exits 0 once another process pays', async () => {
    const request = await bob.json<PaymentRequest>(['request', '0.5']);
    const watcher = spawn(process.execPath, [BIN, 'status', request.transaction_id, '--watch', '--interval', '1', '--timeout', '60', '--json'], { env: bob.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    watcher.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => watcher.on('close', resolve));
    for (let i = 0; i < 200 && !out.includes('"is_paid":false'); i++) await new Promise((r) => setTimeout(r, 50));
    expect((await alice.json(['pay', request.uri, '--yes']))._code).toBe(0);
    expect(await exited).toBe(0);
    const events = out.trim().split('\n').map((line) => JSON.parse(line) as { event: string; is_paid?: boolean });
    expect(events[0]).toMatchObject({ event: 'status', is_paid: false });
    expect(events.at(-1)).toMatchObject({ event: 'status', is_paid: true });
  });

  it('a malformed transaction id is invalid input (3), an unknown well-formed one not found (9)', async () => {
    for (const [id, code] of [['nope', 3], ['abc', 3], ['00000000-0000-4000-8000-000000000000', 9]] as const) {
      const result = await bob.run(['status', id, '--json']);
      expect(result.code).toBe(code);
      expect(JSON.parse(result.stdout)).toMatchObject({ error: { code: 'INVALID_TRANSACTION_ID' } });
    }
  });

  it('credits and donations: the service\'s on the service; SERVICE_ONLY on a node, where donate takes --to', async () => {
    const credits = await alice.run(['credits', '--json']);
    const topup = await alice.run(['credits', 'topup', '10', '--yes', '--json']);
    const donation = await alice.run(['donate', '0.01', '--yes', '--json']);
    if (backend === 'service') {
      expect([credits.code, topup.code, donation.code]).toEqual([0, 0, 0]);
      return;
    }
    for (const refused of [credits, topup, donation]) {
      expect(refused.code).toBe(2);
      expect(JSON.parse(refused.stdout)).toMatchObject({ error: { code: 'SERVICE_ONLY' } });
    }
    const to = await alice.json<{ to: string; amount_raw: string }>(['donate', '0.01', '--yes', '--to', bobAddress]);
    expect(to).toMatchObject({ _code: 0, to: bobAddress, amount_raw: xnoToRaw('0.01').toString() });
  });
});

describe('payment requests kept by nanopay (node backend)', () => {
  let merchant: CliUser;
  let customer: CliUser;
  let merchantAddress: string;

  beforeAll(async () => {
    ({ user: merchant, address: merchantAddress } = await userOf('node'));
    let customerAddress: string;
    ({ user: customer, address: customerAddress } = await userOf('node'));
    await fund(sb.url, customerAddress, '20');
    expect((await customer.json(['receive']))._code).toBe(0);
  });

  it('two open requests of the same base amount to one address get different exact amounts', async () => {
    const [one, two] = await Promise.all([merchant.json<PaymentRequest>(['request', '3']), merchant.json<PaymentRequest>(['request', '3'])]);
    expect([one._code, two._code], JSON.stringify([one, two])).toEqual([0, 0]);
    expect(one.receive_address).toBe(merchantAddress);
    expect(two.receive_address).toBe(merchantAddress);
    expect(one.amount_raw).not.toBe(two.amount_raw);
    expect(one.transaction_id).not.toBe(two.transaction_id);

    // Paying one leaves the other open.
    expect((await customer.json(['pay', two.uri, '--yes']))._code).toBe(0);
    expect((await merchant.json<{ is_paid: boolean }>(['status', two.transaction_id])).is_paid).toBe(true);
    expect((await merchant.json<{ is_paid: boolean }>(['status', one.transaction_id])).is_paid).toBe(false);
  });

  it('--fresh-address: an unused account; partial payments add up, an overpayment is not paid, receive covers it', async () => {
    const request = await merchant.json<PaymentRequest>(['request', '2', '--fresh-address']);
    expect(request._code).toBe(0);
    expect(request.receive_address).not.toBe(merchantAddress);
    expect(request.amount_raw).toBe(xnoToRaw('2').toString());

    expect((await customer.json(['send', request.receive_address, '1.5', '--yes']))._code).toBe(0);
    const partial = await merchant.json<{ is_paid: boolean; message: string }>(['status', request.transaction_id]);
    expect(partial).toMatchObject({ is_paid: false });
    expect(partial.message).toMatch(/underpaid/i);
    expect((await customer.json(['send', request.receive_address, '0.5', '--yes']))._code).toBe(0);
    expect((await merchant.json<{ is_paid: boolean }>(['status', request.transaction_id])).is_paid).toBe(true);

    const received = await merchant.json<{ received: { account: string; amount_raw: string }[] }>(['receive']);
    expect(received.received.filter((r) => r.account === request.receive_address).map((r) => r.amount_raw).sort()).toEqual(
      [xnoToRaw('0.5').toString(), xnoToRaw('1.5').toString()].sort(),
    );

    const over = await merchant.json<PaymentRequest>(['request', '1', '--fresh-address']);
    expect(over.receive_address).not.toBe(request.receive_address);
    expect((await customer.json(['send', over.receive_address, '1.1', '--yes']))._code).toBe(0);
    const overpaid = await merchant.json<{ is_paid: boolean; message: string }>(['status', over.transaction_id]);
    expect(overpaid.is_paid).toBe(false);
    expect(overpaid.message).toMatch(/overpaid/i);
  });
});
