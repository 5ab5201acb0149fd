import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RAW_PER_XNO, xnoToRaw } from '../../../src/nano/index.js';
import { balance } from '../../../src/ops/account/balance.js';
import { setSetting, unsetSetting } from '../../../src/ops/profile/config.js';
import { credits, topup } from '../../../src/ops/spending/credits.js';
import { donate } from '../../../src/ops/spending/donate.js';
import { payUri, paymentStatus, requestPayment, watchPayment, type WatchEvent } from '../../../src/ops/requests/payments.js';
import { receive } from '../../../src/ops/account/receive.js';
import { send } from '../../../src/ops/spending/send.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { BACKENDS, backendUser, fundedUser, userSession, type Backend } from '../../helpers/ledger/backend-users.js';
import { fund, ledger, sandbox } from '../../helpers/ledger/sandbox.js';
import { failure } from '../../helpers/processes/failure.js';

/**
 * The main money flow, the same bodies once per backend, in-process: the
 * operations the commands run (through a Session configured like the CLI)
 * against one sandbox that speaks both. The commands' front end on each
 * backend (flags, exit codes, --json) is test/e2e/wallet/backends.test.ts.
 */
const XNO = RAW_PER_XNO;

let sb: RunningSandbox;

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

describe.each<Backend>(BACKENDS)('the main flow on the %s backend', (backend) => {
  it('funds, receives and sends with balances exact to the raw', async () => {
    const alice = await backendUser(sb, backend);
    const bob = await backendUser(sb, backend);
    await fund(sb.url, alice.address, '10');
    expect(await balance(alice.session)).toMatchObject({ balance_raw: '0', pending_raw: (10n * XNO).toString() });
    const received = await balance(alice.session, { receive: true });
    expect(received.balance_raw).toBe((10n * XNO).toString());
    expect(received.received?.map((r) => r.subtype)).toEqual(['open']);

    const sent = await send(alice.session, { to: bob.address, amount: { xno: '2.5' } });
    expect(sent.balance_after_raw).toBe(((75n * XNO) / 10n).toString());
    expect(await balance(bob.session, { receive: true })).toMatchObject({ balance_raw: ((25n * XNO) / 10n).toString(), pending_raw: '0' });
    const raw = await send(bob.session, { to: alice.address, amount: { raw: '1' } });
    expect(raw.amount_raw).toBe('1');
  });

  it('two concurrent sends from one wallet (two sessions, as two processes) both land on one chain', async () => {
    const alice = await fundedUser(sb, backend, '1');
    const bob = await backendUser(sb, backend);
    const [one, two] = await Promise.all([
      send(userSession(alice.user), { to: bob.address, amount: { xno: '0.1' } }),
      send(userSession(alice.user), { to: bob.address, amount: { xno: '0.2' } }),
    ]);
    const chain = (await ledger(sb.url)).blocks.filter((b) => b.account === alice.address);
    expect(chain.map((b) => b.hash)).toEqual(expect.arrayContaining([one.hash, two.hash]));
    const heights = chain.map((b) => Number(b.height)).sort((a, b) => a - b);
    expect(heights).toEqual(heights.map((_, i) => i + 1));
    expect((await balance(alice.session)).balance_raw).toBe(((7n * XNO) / 10n).toString());
  });

  it('a dry run signs nothing and an id makes a send idempotent', async () => {
    const alice = await fundedUser(sb, backend, '2');
    const bob = await backendUser(sb, backend);
    const before = (await ledger(sb.url)).blocks.length;
    const dry = await send(alice.session, { to: bob.address, amount: { xno: '1' }, dryRun: true });
    expect(dry).toMatchObject({ dry_run: true, hash: null, balance_after_raw: XNO.toString() });
    const first = await send(alice.session, { to: bob.address, amount: { xno: '0.3' }, id: `order-${backend}` });
    const again = await send(alice.session, { to: bob.address, amount: { xno: '0.3' }, id: `order-${backend}` });
    expect(first.repeated).toBe(false);
    expect(again).toMatchObject({ hash: first.hash, repeated: true });
    expect((await ledger(sb.url)).blocks.length).toBe(before + 1);
  });

  it('refuses over the funds (exit 4) and over the limits (exit 7)', async () => {
    const alice = await fundedUser(sb, backend, '2');
    const bob = await backendUser(sb, backend);
    expect(await failure(send(alice.session, { to: bob.address, amount: { xno: '1000' } }))).toMatchObject({ code: 'INSUFFICIENT_FUNDS', exitCode: 4 });
    await setSetting(alice.session, 'limit-per-send', '0.5');
    expect(await failure(send(alice.session, { to: bob.address, amount: { xno: '0.6' } }))).toMatchObject({ code: 'POLICY_DENIED', exitCode: 7 });
    await unsetSetting(alice.session, 'limit-per-send');
    expect((await send(alice.session, { to: bob.address, amount: { xno: '0.6' } })).hash).toMatch(/^[0-9A-F]{64}$/);
  });

  it('only the exact adjusted amount marks a request paid; the base amount without its offset is not taken for it', async () => {
    const alice = await fundedUser(sb, backend, '5');
    const bob = await backendUser(sb, backend);
    const request = await requestPayment(bob.session, { amount: { xno: '1.25' } });
    expect(request.receive_address).toBe(bob.address);
    expect(BigInt(request.amount_raw)).toBeGreaterThan(xnoToRaw('1.25'));
    expect(request.uri).toBe(`nano:${bob.address}?amount=${request.amount_raw}`);

    await send(alice.session, { to: bob.address, amount: { xno: '1.25' } });
    const unpaid = await paymentStatus(bob.session, request.transaction_id);
    // On a shared address nothing but the exact amount says a payment is this request's (issue 31, points 8 and 9).
    expect(unpaid).toMatchObject({ status: 'waiting', is_paid: false });
    expect(unpaid).not.toHaveProperty('mismatch');

    const paid = await payUri(alice.session, request.uri, {});
    expect(paid.amount_raw).toBe(request.amount_raw);
    const status = await paymentStatus(bob.session, request.transaction_id);
    expect(status).toMatchObject({ is_paid: true, amount: request.amount });
    expect(status.message).toMatch(/receive/i);
    // Received, the request stays paid.
    expect((await receive(bob.session)).received.length).toBeGreaterThan(0);
    expect((await paymentStatus(bob.session, request.transaction_id)).is_paid).toBe(true);
  });

  it('a watch reports unpaid first, then paid once another session pays, and ends', async () => {
    const alice = await fundedUser(sb, backend, '1');
    const bob = await backendUser(sb, backend);
    const request = await requestPayment(bob.session, { amount: { xno: '0.5' } });
    const events: WatchEvent[] = [];
    let firstEvent!: () => void;
    const seen = new Promise<void>((resolve) => (firstEvent = resolve));
    const watched = watchPayment(bob.session, request.transaction_id, {
      intervalMs: 1000,
      timeoutMs: 60_000,
      onEvent: (event) => {
        events.push(event);
        firstEvent();
      },
    });
    // A watch that fails before its first event fails here, not at the test's timeout.
    await Promise.race([seen, watched]);
    expect(await payUri(alice.session, request.uri, {})).toMatchObject({ amount_raw: request.amount_raw, uri: request.uri });
    expect(await watched).toMatchObject({ is_paid: true });
    expect(events[0]).toMatchObject({ event: 'status', is_paid: false });
    expect(events.at(-1)).toMatchObject({ event: 'status', is_paid: true });
  });

  it('a malformed transaction id is invalid input (exit 3), an unknown well-formed one not found (exit 9)', async () => {
    const bob = await backendUser(sb, backend);
    for (const [id, exitCode] of [['nope', 3], ['abc', 3], ['00000000-0000-4000-8000-000000000000', 9]] as const) {
      expect(await failure(paymentStatus(bob.session, id)), id).toMatchObject({ code: 'INVALID_TRANSACTION_ID', exitCode });
    }
  });

  it('credits and donations: the service\'s on the service; SERVICE_ONLY (exit 2) on a node, where a donation names its address', async () => {
    const alice = await fundedUser(sb, backend, '2');
    const bob = await backendUser(sb, backend);
    // One after another, as the commands were run.
    const attempts = [() => credits(alice.session), () => topup(alice.session, { tier: 10 }), () => donate(alice.session, { amount: { xno: '0.01' } })] as const;
    if (backend === 'service') {
      expect(await attempts[0]()).toMatchObject({ credits: expect.any(Number) });
      expect(await attempts[1]()).toMatchObject({ topped_up_credits: 10 });
      expect(await attempts[2]()).toMatchObject({ success: true, amount_raw: xnoToRaw('0.01').toString() });
      return;
    }
    for (const attempt of attempts) expect(await failure(attempt())).toMatchObject({ code: 'SERVICE_ONLY', exitCode: 2 });
    const to = await donate(alice.session, { amount: { xno: '0.01' }, to: bob.address });
    expect(to).toMatchObject({ to: bob.address, amount_raw: xnoToRaw('0.01').toString() });
  });
});

describe('payment requests kept by nanopay (node backend)', () => {
  it('two open requests of the same base amount to one address get different exact amounts', async () => {
    const merchant = await backendUser(sb, 'node');
    const customer = await fundedUser(sb, 'node', '20');
    const [one, two] = await Promise.all([
      requestPayment(userSession(merchant.user), { amount: { xno: '3' } }),
      requestPayment(userSession(merchant.user), { amount: { xno: '3' } }),
    ]);
    expect(one.receive_address).toBe(merchant.address);
    expect(two.receive_address).toBe(merchant.address);
    expect(one.amount_raw).not.toBe(two.amount_raw);
    expect(one.transaction_id).not.toBe(two.transaction_id);

    // Paying one leaves the other open.
    await payUri(customer.session, two.uri, {});
    expect((await paymentStatus(merchant.session, two.transaction_id)).is_paid).toBe(true);
    expect((await paymentStatus(merchant.session, one.transaction_id)).is_paid).toBe(false);
  });

  it('a fresh address: an unused account; partial payments add up, an overpayment is not paid, receive covers it', async () => {
    const merchant = await backendUser(sb, 'node');
    const customer = await fundedUser(sb, 'node', '20');
    const request = await requestPayment(merchant.session, { amount: { xno: '2' }, freshAddress: true });
    expect(request.receive_address).not.toBe(merchant.address);
    expect(request.amount_raw).toBe(xnoToRaw('2').toString());

    await send(customer.session, { to: request.receive_address, amount: { xno: '1.5' } });
    const partial = await paymentStatus(merchant.session, request.transaction_id);
    expect(partial).toMatchObject({ is_paid: false });
    expect(partial.message).toMatch(/underpaid/i);
    await send(customer.session, { to: request.receive_address, amount: { xno: '0.5' } });
    expect((await paymentStatus(merchant.session, request.transaction_id)).is_paid).toBe(true);

    const received = await receive(merchant.session);
    expect(received.received.filter((r) => r.account === request.receive_address).map((r) => r.amount_raw).sort()).toEqual(
      [xnoToRaw('0.5').toString(), xnoToRaw('1.5').toString()].sort(),
    );

    const over = await requestPayment(merchant.session, { amount: { xno: '1' }, freshAddress: true });
    expect(over.receive_address).not.toBe(request.receive_address);
    await send(customer.session, { to: over.receive_address, amount: { xno: '1.1' } });
    const overpaid = await paymentStatus(merchant.session, over.transaction_id);
    expect(overpaid.is_paid).toBe(false);
    expect(overpaid.message).toMatch(/overpaid/i);
  });

  it('20 fresh requests made at once (20 sessions, as 20 processes) get 20 accounts; one payment pays one request', async () => {
    const merchant = await backendUser(sb, 'node');
    const customer = await fundedUser(sb, 'node', '1');
    const requests = await Promise.all(Array.from({ length: 20 }, () => requestPayment(userSession(merchant.user), { amount: { xno: '0.01' }, freshAddress: true })));
    expect(new Set(requests.map((r) => r.receive_address)).size).toBe(20);
    expect(requests.map((r) => r.receive_address)).not.toContain(merchant.address);
    const chosen = requests[7] as (typeof requests)[number];
    await payUri(customer.session, chosen.uri, {});
    const paid = [];
    for (const r of requests) if ((await paymentStatus(merchant.session, r.transaction_id)).is_paid) paid.push(r.transaction_id);
    expect(paid).toEqual([chosen.transaction_id]);
  });
});
