import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSendBlock, signBlock, xnoToRaw } from '../../src/nano/index.js';
import { paymentStatus, requestPayment, watchPayment } from '../../src/ops/requests/payments.js';
import { receive } from '../../src/ops/account/receive.js';
import { send } from '../../src/ops/spending/send.js';
import { createRemoteWallet } from '../../src/ops/profile/wallet.js';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import { shutdownWorkers } from '../../src/work/index.js';
import { backendUser, fundedUser, userSession } from '../helpers/ledger/backend-users.js';
import { newUser } from '../helpers/processes/cli.js';
import { failure } from '../helpers/processes/failure.js';
import { SandboxClient, newAccount } from '../helpers/ledger/chain.js';
import { startFaultyProxy, type FaultyProxy } from '../helpers/network/faulty-proxy.js';
import { sandbox } from '../helpers/ledger/sandbox.js';

/**
 * Requests that end (expiry) and payments that do not match (under-, over-,
 * late), on both backends, in-process against the real sandbox. The service
 * says nothing of expiry in the spec: what a service sends (`expires_at`) is
 * injected by a proxy in front of the sandbox.
 */
let sb: RunningSandbox;
const proxies: FaultyProxy[] = [];

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  await Promise.all(proxies.map((p) => p.close()));
  await sb?.close();
  await shutdownWorkers();
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Sleeps until `iso` has passed by `ms` more (the sandbox dates blocks in whole seconds). */
async function past(iso: string, ms: number): Promise<void> {
  await sleep(Math.max(0, Date.parse(iso) - Date.now() + ms));
}

describe('expiry of requests kept on a node', () => {
  it('a request expires after a day by default, or after --expires-in; status says when and whether', async () => {
    const merchant = await backendUser(sb, 'node');
    const before = Date.now();
    const request = await requestPayment(merchant.session, { amount: { xno: '1' } });
    const expiresAt = Date.parse(request.expires_at as string);
    expect(expiresAt - before).toBeGreaterThanOrEqual(86_400_000 - 1000);
    expect(expiresAt - before).toBeLessThanOrEqual(86_400_000 + 60_000);
    expect(await paymentStatus(merchant.session, request.transaction_id)).toMatchObject({ is_paid: false, expired: false, expires_at: request.expires_at });
    expect(await failure(requestPayment(merchant.session, { amount: { xno: '1' }, expiresInS: 91 * 86_400 }))).toMatchObject({ code: 'USAGE', exitCode: 2 });

    const short = await requestPayment(merchant.session, { amount: { xno: '1' }, expiresInS: 1 });
    await past(short.expires_at as string, 50);
    const status = await paymentStatus(merchant.session, short.transaction_id);
    expect(status).toMatchObject({ is_paid: false, expired: true, expires_at: short.expires_at });
    expect(status.message).toMatch(/^Not paid by .* when it expired/);
  });

  it('a watch stops at the expiry with REQUEST_EXPIRED (exit 11), not at its timeout', async () => {
    const merchant = await backendUser(sb, 'node');
    const request = await requestPayment(merchant.session, { amount: { xno: '1' }, expiresInS: 2 });
    const events: unknown[] = [];
    const error = await failure(watchPayment(merchant.session, request.transaction_id, { intervalMs: 60_000, timeoutMs: 120_000, onEvent: (e) => events.push(e) }));
    expect(error).toMatchObject({ code: 'REQUEST_EXPIRED', exitCode: 11 });
    expect(events.at(-1)).toMatchObject({ event: 'status', expired: true, is_paid: false });
  });

  it('paid before the expiry and looked at after: paid; the exact amount after the expiry: reported as paid late, not paid', async () => {
    const merchant = await backendUser(sb, 'node');
    const customer = await fundedUser(sb, 'node', '5');
    const onTime = await requestPayment(merchant.session, { amount: { xno: '1' }, expiresInS: 8 });
    const late = await requestPayment(merchant.session, { amount: { xno: '1' }, expiresInS: 1 });
    const paid = await send(customer.session, { to: onTime.receive_address, amount: { raw: onTime.amount_raw } });
    await past(late.expires_at as string, 1100);
    const lateSend = await send(customer.session, { to: late.receive_address, amount: { raw: late.amount_raw } });
    await past(onTime.expires_at as string, 50);

    expect(await paymentStatus(merchant.session, onTime.transaction_id)).toMatchObject({ is_paid: true, expired: true });
    const lateStatus = await paymentStatus(merchant.session, late.transaction_id);
    expect(lateStatus).toMatchObject({
      is_paid: false,
      expired: true,
      paid_late: { amount_raw: late.amount_raw, blocks: [lateSend.hash] },
    });
    expect(lateStatus.message).toContain(lateSend.hash as string);
    expect(lateStatus.message).toMatch(/^Paid late/);
    // Recorded: receiving the block changes nothing, and it pays no other request.
    await receive(merchant.session);
    expect(await paymentStatus(merchant.session, late.transaction_id)).toMatchObject({ is_paid: false, paid_late: { blocks: [lateSend.hash] } });
    expect(await failure(watchPayment(merchant.session, late.transaction_id, { intervalMs: 1000 }))).toMatchObject({ code: 'REQUEST_EXPIRED', message: expect.stringContaining(lateSend.hash as string) });
    expect(paid.hash).not.toBe(lateSend.hash);
  });
});

describe('what the service says about expiry is shown the same way', () => {
  async function serviceUserBehind(expiresAt: () => string | number | undefined): Promise<ReturnType<typeof userSession>> {
    const proxy = await startFaultyProxy(sb.url, (_method, path) =>
      path.startsWith('/payment/status/') ? { rewrite: (data) => ({ ...data, ...(expiresAt() === undefined ? {} : { expires_at: expiresAt() }) }) } : 'pass',
    );
    proxies.push(proxy);
    const session = userSession(await newUser(proxy.url));
    await createRemoteWallet(session);
    return session;
  }

  it('expires_at (ISO or Unix seconds) gives expires_at and expired; a watch stops there (exit 11)', async () => {
    let expiry: string | number | undefined = '2020-01-01T00:00:00Z';
    const session = await serviceUserBehind(() => expiry);
    const request = await requestPayment(session, { amount: { xno: '1' } });
    expect(await paymentStatus(session, request.transaction_id)).toMatchObject({ is_paid: false, expired: true, expires_at: '2020-01-01T00:00:00.000Z' });
    expiry = Math.floor(Date.now() / 1000) + 3600;
    expect(await paymentStatus(session, request.transaction_id)).toMatchObject({ expired: false, expires_at: new Date(expiry * 1000).toISOString() });
    expiry = undefined;
    const none = await paymentStatus(session, request.transaction_id);
    expect(none).not.toHaveProperty('expired');
    expect(none).not.toHaveProperty('expires_at');

    expiry = new Date(Date.now() + 1500).toISOString();
    const error = await failure(watchPayment(session, request.transaction_id, { intervalMs: 60_000, timeoutMs: 120_000 }));
    expect(error).toMatchObject({ code: 'REQUEST_EXPIRED', exitCode: 11 });
  });

  it('a payment the service matched after the expiry it gives is paid late, not paid (dated by its block); one before it is paid', async () => {
    let expiry: string | undefined;
    const session = await serviceUserBehind(() => expiry);
    const customer = await fundedUser(sb, 'service', '5');
    const onTime = await requestPayment(session, { amount: { xno: '1' } });
    const late = await requestPayment(session, { amount: { xno: '1' } });
    await send(customer.session, { to: onTime.receive_address, amount: { raw: onTime.amount_raw } });
    expiry = new Date(Date.now() + 1000).toISOString();
    await past(expiry, 1100);
    const lateSend = await send(customer.session, { to: late.receive_address, amount: { raw: late.amount_raw } });

    expect(await paymentStatus(session, onTime.transaction_id)).toMatchObject({ status: 'paid', is_paid: true, expired: true });
    const lateStatus = await paymentStatus(session, late.transaction_id);
    expect(lateStatus).toMatchObject({ status: 'paid_late', is_paid: false, expired: true, paid_late: { amount_raw: late.amount_raw, blocks: [lateSend.hash] } });
    expect(lateStatus.message).toMatch(/^Paid late: /);
    expect(await failure(watchPayment(session, late.transaction_id, { intervalMs: 1000 }))).toMatchObject({ code: 'REQUEST_EXPIRED', message: expect.stringContaining(lateSend.hash as string) });
  });

  it('--expires-in is for requests nanopay keeps: on the service it is a usage error', async () => {
    const merchant = await backendUser(sb, 'service');
    expect(await failure(requestPayment(merchant.session, { amount: { xno: '1' }, expiresInS: 60 }))).toMatchObject({ code: 'USAGE', exitCode: 2 });
  });
});

describe('a payment of another amount is reported only where it belongs to the request', () => {
  it("node, fresh address (every payment to it is the request's): underpaid with the exact rest, which then pays it; overpaid", async () => {
    const merchant = await backendUser(sb, 'node');
    const customer = await fundedUser(sb, 'node', '5');
    const under = await requestPayment(merchant.session, { amount: { xno: '1' }, freshAddress: true });
    const short = await send(customer.session, { to: under.receive_address, amount: { xno: '0.9' } });
    const underStatus = await paymentStatus(merchant.session, under.transaction_id);
    expect(underStatus).toMatchObject({
      status: 'underpaid',
      is_paid: false,
      mismatch: { kind: 'underpaid', amount: '0.9', amount_raw: xnoToRaw('0.9').toString(), blocks: [short.hash], rest: '0.1', rest_raw: xnoToRaw('0.1').toString() },
    });
    expect(underStatus.message).toMatch(/^Underpaid: /);
    expect(underStatus.message).toContain(short.hash as string);
    expect(underStatus.message).toContain('pay the rest, 0.1 XNO');
    const rest = await send(customer.session, { to: under.receive_address, amount: { raw: underStatus.mismatch?.rest_raw as string } });
    const paid = await paymentStatus(merchant.session, under.transaction_id);
    expect(paid).toMatchObject({ status: 'paid', is_paid: true });
    expect([...(paid.paid_by ?? [])].sort()).toEqual([short.hash, rest.hash].sort());

    const over = await requestPayment(merchant.session, { amount: { xno: '1' }, freshAddress: true });
    const much = await send(customer.session, { to: over.receive_address, amount: { xno: '1.5' } });
    const overStatus = await paymentStatus(merchant.session, over.transaction_id);
    expect(overStatus).toMatchObject({ status: 'overpaid', is_paid: false, mismatch: { kind: 'overpaid', amount_raw: xnoToRaw('1.5').toString(), blocks: [much.hash] } });
    expect(overStatus.mismatch).not.toHaveProperty('rest_raw');
  });

  it("node, shared address: a payment a few raw short of another request is not this one's; the exact amount pays it", async () => {
    const merchant = await backendUser(sb, 'node');
    const customer = await fundedUser(sb, 'node', '5');
    const a = await requestPayment(merchant.session, { amount: { xno: '1' } });
    await send(customer.session, { to: a.receive_address, amount: { raw: (BigInt(a.amount_raw) - 3n).toString() } });
    await send(customer.session, { to: a.receive_address, amount: { xno: '0.9' } });
    const b = await requestPayment(merchant.session, { amount: { xno: '1' } });
    const waiting = await paymentStatus(merchant.session, b.transaction_id);
    expect(waiting).toMatchObject({ status: 'waiting', is_paid: false });
    expect(waiting).not.toHaveProperty('mismatch');
    // Nor is it A's: nothing but its exact amount says a payment to a shared address belongs to a request.
    expect(await paymentStatus(merchant.session, a.transaction_id)).not.toHaveProperty('mismatch');
    const paid = await send(customer.session, { to: b.receive_address, amount: { raw: b.amount_raw } });
    expect(await paymentStatus(merchant.session, b.transaction_id)).toMatchObject({ status: 'paid', is_paid: true, paid_by: [paid.hash] });
  });

  it('node, shared address: the exact payment is found behind a thousand smaller ones (dust cannot push it out of the node\'s answer)', async () => {
    const merchant = await backendUser(sb, 'node');
    const request = await requestPayment(merchant.session, { amount: { xno: '0.5' } });
    const client = await SandboxClient.withNewKey(sb.url);
    const payer = newAccount();
    await client.fund(payer.address, '1');
    await client.receiveAll(payer);
    // A thousand and one sends of 1 raw, straight into the sandbox's ledger (the node lists at most 1000 blocks).
    let head = await client.head(payer);
    for (let i = 0; i < 1001; i++) {
      // The sandbox's server shares this event loop: let it run between blocks (its idle connections' timers too).
      if (i % 25 === 0) await new Promise((resolve) => setImmediate(resolve));
      const block = buildSendBlock(head, { to: request.receive_address, amount: 1n });
      const stored = sb.service.ledger.process({ ...block, signature: signBlock(block, payer.privateKey), work: '0000000000000000' }, { skipWork: true });
      head = { ...head, frontier: stored.hash, balance: head.balance - 1n };
      // The loop would hold the event loop for seconds on a loaded machine: the sandbox's keep-alive timer then fired
      // only as the client reused the idle connection, and the next call failed with ECONNRESET. Timers run on time.
      if (i % 50 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    const paid = await client.send(payer, request.receive_address, BigInt(request.amount_raw));
    expect(await paymentStatus(merchant.session, request.transaction_id)).toMatchObject({ status: 'paid', is_paid: true, paid_by: [paid] });
  });

  it('service: payments of other orders to the shared address are not reported for a fresh request, and no pending blocks are read for it', async () => {
    const proxy = await startFaultyProxy(sb.url, () => 'pass');
    proxies.push(proxy);
    const session = userSession(await newUser(proxy.url));
    await createRemoteWallet(session);
    const customer = await fundedUser(sb, 'service', '5');
    const other = await requestPayment(session, { amount: { xno: '1' } });
    await send(customer.session, { to: other.receive_address, amount: { xno: '0.9' } });
    await send(customer.session, { to: other.receive_address, amount: { xno: '1.2' } });
    const fresh = await requestPayment(session, { amount: { xno: '1' } });
    const seen = proxy.seen.length;
    const status = await paymentStatus(session, fresh.transaction_id);
    expect(status).toMatchObject({ status: 'waiting', is_paid: false });
    expect(status).not.toHaveProperty('mismatch');
    expect(status.message).not.toMatch(/Underpaid|Overpaid/);
    expect(proxy.seen.slice(seen)).toEqual([`GET /payment/status/${fresh.transaction_id}`]);
  });

  it('far amounts (under half, over twice) are not taken for the request on a shared address', async () => {
    for (const backend of ['service', 'node'] as const) {
      const merchant = await backendUser(sb, backend);
      const customer = await fundedUser(sb, backend, '5');
      const request = await requestPayment(merchant.session, { amount: { xno: '1' } });
      await send(customer.session, { to: request.receive_address, amount: { xno: '0.4' } });
      await send(customer.session, { to: request.receive_address, amount: { xno: '2.1' } });
      expect(await paymentStatus(merchant.session, request.transaction_id)).not.toHaveProperty('mismatch');
    }
  });
});
