import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addressToPublicKey, rawToXno, xnoToRaw } from '../../../src/nano/index.js';
import { receive } from '../../../src/ops/account/receive.js';
import { payUri } from '../../../src/ops/requests/payments.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { BACKENDS, backendUser, fundedUser, type Backend, type BackendUser } from '../../helpers/ledger/backend-users.js';
import { BIN } from '../../helpers/processes/cli.js';
import { startFaultyProxy } from '../../helpers/network/faulty-proxy.js';
import { ledger, sandbox } from '../../helpers/ledger/sandbox.js';
import { startCommand, type RunningCommand } from '../../helpers/processes/serve.js';
import { startWebhookReceiver, until, type WebhookReceiver } from '../../helpers/network/webhook-receiver.js';

/**
 * nanopay refund (issue 33, part 1) through the built CLI and the shop's API, on both of the sandbox's backends:
 * the refund goes back to the verified payer, partial refunds add up and never pass what was received, and status,
 * the API, the page and the request.refunded events agree. A refund killed between signing and publishing refunds once.
 */
let sb: RunningSandbox;

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

interface Printed {
  url: string;
  token_file: string;
  webhook_secret_file: string;
}

type Api = (path: string, init?: RequestInit) => Promise<{ status: number; body: { data: Record<string, any>; error?: { error: string; message: string } } }>;

function apiOf(server: RunningCommand<Printed>): Api {
  const token = readFileSync(server.printed.token_file, 'utf8').trim();
  return (path, init = {}) =>
    fetch(`${server.printed.url}${path}`, { ...init, headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...(init.headers as Record<string, string>) } }).then(async (r) => ({
      status: r.status,
      body: (await r.json()) as { data: Record<string, any>; error?: { error: string; message: string } },
    }));
}

/** The sends of the ledger from `from` to `to`. */
async function sendsBetween(from: string, to: string): Promise<string[]> {
  const link = addressToPublicKey(to);
  return [...sb.service.ledger.blocks.values()].filter((b) => b.subtype === 'send' && b.block.account === from && b.block.link === link).map((b) => b.hash);
}

/** A request of the shop made through its API and paid by `payer`; the merchant then receives it (a refund is paid from what the account holds). */
async function paidRequest(api: Api, merchant: BackendUser, payer: BackendUser, amount: string): Promise<Record<string, any>> {
  const made = (await api('/api/v1/requests', { method: 'POST', body: JSON.stringify({ amount }) })).body.data;
  await payUri(payer.session, made.uri as string, {});
  await until(async () => (await api(`/api/v1/requests/${made.id as string}`)).body.data.status === 'paid', 'the request paid');
  await receive(merchant.session);
  return made;
}

describe.each(BACKENDS)('refunds on the %s backend', (backend: Backend) => {
  let merchant: BackendUser;
  let payer: BackendUser;
  let server: RunningCommand<Printed>;
  let api: Api;
  let receiver: WebhookReceiver;
  let secret = '';

  beforeAll(async () => {
    merchant = await backendUser(sb, backend);
    payer = await fundedUser(sb, backend, '3');
    receiver = await startWebhookReceiver(() => secret);
    server = await startCommand<Printed>(['checkout', 'serve', '--json', '--webhook', receiver.url, '--poll-interval', '1', '--webhook-backoff-ms', '50'], merchant.user.env);
    secret = readFileSync(server.printed.webhook_secret_file, 'utf8').trim().split('\n')[0] as string;
    api = apiOf(server);
  });

  afterAll(async () => {
    await server?.stop();
    await receiver?.close();
  });

  it('refunds the payer, in parts that add up and never pass what was received; status, the API, the page and the events agree', async () => {
    const made = await paidRequest(api, merchant, payer, '0.3');
    const id = made.id as string;
    // What arrived is the request's amount: the base and its matching offset.
    const received = BigInt(made.amount_raw as string);
    const part = await merchant.user.json<{ refund: Record<string, any>; request: Record<string, any> }>(['refund', id, '--amount', '0.1', '--yes']);
    expect(part._code).toBe(0);
    expect(part.refund).toMatchObject({ status: 'sent', to: payer.address, from: merchant.address, amount: '0.1', amount_raw: xnoToRaw('0.1').toString(), received_raw: received.toString() });
    expect(part.request).toMatchObject({ status: 'partially_refunded', refunded_amount: '0.1', refund_blocks: [part.refund.block] });

    // The rest by default, in text.
    const rest = await merchant.user.run(['refund', id, '--yes']);
    expect(rest.code).toBe(0);
    expect(rest.stdout).toContain(`Refunded ${rawToXno(received - xnoToRaw('0.1'))} XNO to ${payer.address}`);
    expect(rest.stdout).toContain(`Request: refunded (${made.amount as string} XNO refunded in all)`);
    const blocks = await sendsBetween(merchant.address, payer.address);
    expect(blocks).toHaveLength(2);
    expect(blocks).toContain(part.refund.block);

    // Nothing is left: refused, nothing signed.
    const over = await merchant.user.json<{ error: { code: string } }>(['refund', id, '--amount', '0.01', '--yes']);
    expect(over).toMatchObject({ _code: 10, error: { code: 'REFUND_TOO_LARGE' } });
    expect(await sendsBetween(merchant.address, payer.address)).toHaveLength(2);

    const status = await merchant.user.json<Record<string, any>>(['status', id]);
    expect(status).toMatchObject({ status: 'refunded', is_paid: false, refunded_amount: made.amount, refunded_amount_raw: made.amount_raw });
    expect([...status.refund_blocks].sort()).toEqual([...blocks].sort());
    expect((await merchant.user.run(['status', id])).stdout).toContain(`Refunded: ${made.amount as string} XNO (${received} raw) of ${made.amount as string} XNO (${received} raw) received went back to ${payer.address}`);

    const shown = (await api(`/api/v1/requests/${id}`)).body.data;
    expect(shown).toMatchObject({ status: 'refunded', is_paid: false, received_amount: made.amount, refunded_amount: made.amount, refunded_amount_raw: made.amount_raw });
    expect([...shown.refund_blocks].sort()).toEqual([...blocks].sort());
    expect(shown.refunded_at).toBe(status.refunded_at);

    await until(() => receiver.events.filter((e) => e.data.object.id === id && e.type === 'request.refunded').length === 2, 'two request.refunded events');
    const events = receiver.events.filter((e) => e.data.object.id === id) as unknown as { type: string; data: { object: Record<string, any> } }[];
    expect(events.map((e) => [e.type, e.data.object.status, e.data.object.is_paid, e.data.object.refunded_amount])).toEqual([
      ['request.paid', 'paid', true, '0'],
      ['request.refunded', 'partially_refunded', true, '0.1'],
      ['request.refunded', 'refunded', false, made.amount],
    ]);
    const html = await (await fetch(made.checkout_url as string)).text();
    expect(html).toContain('data-state="refunded"');
    expect(html).toContain(`The shop sent ${made.amount as string} XNO back to the account you paid from.`);
  });

  it('refuses a refund of an unpaid request, and signs nothing', async () => {
    const made = (await api('/api/v1/requests', { method: 'POST', body: JSON.stringify({ amount: '0.05' }) })).body.data;
    const before = (await ledger(sb.url)).blocks.length;
    const refused = await merchant.user.json<{ error: { code: string } }>(['refund', made.id as string, '--yes']);
    expect(refused).toMatchObject({ _code: 10, error: { code: 'REQUEST_NOT_PAID' } });
    const ordered = await api(`/api/v1/requests/${made.id as string}/refunds`, { method: 'POST', body: '{}' });
    expect(ordered).toMatchObject({ status: 409, body: { error: { error: 'REQUEST_NOT_PAID' } } });
    expect((await ledger(sb.url)).blocks.length).toBe(before);
  });

  it('the API records an order (202), to a payer only, idempotent per key; a signer carries it out (refund --pending, then checkout serve --refunds)', async () => {
    const made = await paidRequest(api, merchant, payer, '0.2');
    const id = made.id as string;
    const path = `/api/v1/requests/${id}/refunds`;
    // A stolen token cannot send the money anywhere but back where it came from.
    const elsewhere = await api(path, { method: 'POST', body: JSON.stringify({ to: merchant.address }) });
    expect(elsewhere).toMatchObject({ status: 403, body: { error: { error: 'REFUND_NOT_TO_PAYER' } } });
    expect(elsewhere.body.error?.message).toContain(payer.address);
    const ordered = await api(path, { method: 'POST', body: JSON.stringify({ amount: '0.05' }), headers: { 'idempotency-key': `r-${backend}-1` } });
    expect(ordered).toMatchObject({ status: 202, body: { data: { status: 'pending', request_id: id, amount: '0.05', to: payer.address, source: 'api' } } });
    const again = await api(path, { method: 'POST', body: JSON.stringify({ amount: '0.05' }), headers: { 'idempotency-key': `r-${backend}-1` } });
    expect(again.body.data.id).toBe(ordered.body.data.id);
    const other = await api(path, { method: 'POST', body: JSON.stringify({ amount: '0.06' }), headers: { 'idempotency-key': `r-${backend}-1` } });
    expect(other).toMatchObject({ status: 409, body: { error: { error: 'IDEMPOTENCY_MISMATCH' } } });
    // The pending order counts: no second refund can take what it will.
    const tooMuch = await api(path, { method: 'POST', body: JSON.stringify({ amount: '0.16' }) });
    expect(tooMuch).toMatchObject({ status: 409, body: { error: { error: 'REFUND_TOO_LARGE' } } });
    expect(await sendsBetween(merchant.address, payer.address)).toHaveLength(2);

    const carried = await merchant.user.json<{ done: { refund: Record<string, any> }[]; failed: unknown[] }>(['refund', '--pending', '--yes']);
    expect(carried).toMatchObject({ _code: 0, failed: [] });
    expect(carried.done.map((d) => d.refund.id)).toEqual([ordered.body.data.id]);
    expect((await api(path)).body.data.data).toMatchObject([{ id: ordered.body.data.id, status: 'sent', block: carried.done[0]?.refund.block }]);
    expect((await api(`/api/v1/requests/${id}`)).body.data).toMatchObject({ status: 'partially_refunded', refunded_amount: '0.05' });

    // A server started with --refunds carries out what is ordered through it.
    await server.stop();
    server = await startCommand<Printed>(['checkout', 'serve', '--json', '--refunds', '--webhook', receiver.url, '--poll-interval', '1', '--webhook-backoff-ms', '50'], merchant.user.env);
    api = apiOf(server);
    const second = await api(path, { method: 'POST', body: '{}' });
    expect(second.body.data).toMatchObject({ status: 'pending', amount: rawToXno(BigInt(made.amount_raw as string) - xnoToRaw('0.05')) });
    await until(async () => (await api(`/api/v1/requests/${id}`)).body.data.status === 'refunded', 'the order carried out by the server');
    expect(await sendsBetween(merchant.address, payer.address)).toHaveLength(4);
    expect((await merchant.user.json<Record<string, any>>(['status', id])).status).toBe('refunded');
  });

  it('retries tell the truth: a keyed refund that failed is sent by its retry (not "repeated"), and two refund --pending runs at once report each refund once, none failed', async () => {
    // A server that signs nothing: the orders below wait for the two runs (the one before carried them out itself).
    await server.stop();
    server = await startCommand<Printed>(['checkout', 'serve', '--json', '--webhook', receiver.url, '--poll-interval', '1', '--webhook-backoff-ms', '50'], merchant.user.env);
    api = apiOf(server);
    const made = await paidRequest(api, merchant, payer, '0.2');
    const id = made.id as string;
    // The account's money gone elsewhere: the refund is refused before anything is signed.
    const { balance_raw: held } = await merchant.user.json<{ balance_raw: string }>(['balance']);
    expect((await merchant.user.run(['send', payer.address, held, '--raw', '--yes'])).code).toBe(0);
    const key = `retry-${backend}`;
    const refused = await merchant.user.json<{ error: { code: string } }>(['refund', id, '--amount', '0.05', '--id', key, '--yes']);
    expect(refused.error.code).toBe('INSUFFICIENT_FUNDS');
    await payUri(payer.session, `nano:${merchant.address}?amount=${xnoToRaw('1')}`, {});
    await receive(merchant.session);
    const retried = await merchant.user.json<{ refund: { status: string; block: string }; repeated: boolean }>(['refund', id, '--amount', '0.05', '--id', key, '--yes']);
    expect(retried).toMatchObject({ _code: 0, refund: { status: 'sent' }, repeated: false });
    const text = await merchant.user.run(['refund', id, '--amount', '0.05', '--id', key, '--yes']);
    expect(text.stdout).toContain('Nothing new was sent');
    expect(await merchant.user.json(['refund', id, '--amount', '0.05', '--id', key, '--yes'])).toMatchObject({ repeated: true, refund: { block: retried.refund.block } });

    // Three orders through the API, two signers at once.
    const path = `/api/v1/requests/${id}/refunds`;
    const ordered: string[] = [];
    for (let i = 0; i < 3; i++) ordered.push((await api(path, { method: 'POST', body: JSON.stringify({ amount: '0.01' }) })).body.data.id as string);
    const sendsBefore = (await sendsBetween(merchant.address, payer.address)).length;
    const runs = await Promise.all([0, 1].map(() => merchant.user.json<{ done: { refund: { id: string }; repeated: boolean }[]; failed: unknown[] }>(['refund', '--pending', '--yes'])));
    for (const run of runs) expect(run).toMatchObject({ _code: 0, failed: [] });
    const reported = runs.flatMap((run) => run.done.map((d) => d.refund.id));
    expect(reported.sort()).toEqual([...ordered].sort());
    expect(runs.flatMap((run) => run.done.map((d) => d.repeated))).toEqual([false, false, false]);
    expect((await sendsBetween(merchant.address, payer.address)).length).toBe(sendsBefore + 3);
  });

  it('a stranger who sent dust to a paid request\'s fresh address is a payer of that dust only: no refund gives it more', async () => {
    if (backend !== 'node') return; // anyone can pay a fresh address (node backend)
    const stranger = await fundedUser(sb, backend, '1');
    const freshRequest = await merchant.user.json<Record<string, any>>(['request', '0.3', '--fresh-address', '--no-qr']);
    await payUri(payer.session, freshRequest.uri as string, {});
    await payUri(stranger.session, `nano:${freshRequest.receive_address as string}?amount=1`, {});
    await until(async () => (await merchant.user.json<Record<string, any>>(['status', freshRequest.transaction_id as string])).status === 'overpaid', 'the dust counted');
    const tooMuch = await merchant.user.json<{ error: { code: string; message: string } }>(['refund', freshRequest.transaction_id as string, '--to', stranger.address, '--amount', '0.3', '--dry-run']);
    expect(tooMuch).toMatchObject({ _code: 10, error: { code: 'REFUND_TOO_LARGE' } });
    expect(tooMuch.error.message).toMatch(/it sent 0\.000000000000000000000000000001 XNO \(1 raw\)/);
    const dust = await merchant.user.json<{ refund: Record<string, any> }>(['refund', freshRequest.transaction_id as string, '--to', stranger.address, '--dry-run']);
    expect(dust.refund).toMatchObject({ to: stranger.address, amount_raw: '1' });
  });

  it('a refund the spending policy holds runs with the approval a person gave, from a script', async () => {
    const made = await paidRequest(api, merchant, payer, '0.2');
    const id = made.id as string;
    await merchant.user.run(['policy', 'set', 'ask-above', '0.01']);
    try {
      const key = `approved-${backend}`;
      const held = await merchant.user.json<{ error: { code: string; approval: { id: string; amount: string } } }>(['refund', id, '--amount', '0.05', '--id', key, '--yes']);
      expect(held).toMatchObject({ _code: 14, error: { code: 'APPROVAL_REQUIRED', approval: { amount: '0.05' } } });
      const approval = held.error.approval.id;
      expect(await merchant.user.json(['approvals', 'approve', approval, '--yes'])).toMatchObject({ _code: 0, state: 'approved' });
      const before = (await sendsBetween(merchant.address, payer.address)).length;
      const done = await merchant.user.json<{ refund: { status: string; amount: string }; repeated: boolean }>(['refund', id, '--amount', '0.05', '--id', key, '--approval', approval, '--yes']);
      expect(done).toMatchObject({ _code: 0, refund: { status: 'sent', amount: '0.05' }, repeated: false });
      expect((await sendsBetween(merchant.address, payer.address)).length).toBe(before + 1);
    } finally {
      await merchant.user.run(['policy', 'unset', 'ask-above']);
    }
  });

  it('with several payers --to is required, and the payers are listed', async () => {
    if (backend !== 'node') return; // several payers of one request: a fresh address (node backend)
    const second = await fundedUser(sb, backend, '1');
    const made = await merchant.user.json<Record<string, any>>(['request', '0.2', '--fresh-address', '--no-qr']);
    await payUri(payer.session, `nano:${made.receive_address as string}?amount=${xnoToRaw('0.12')}`, {});
    await payUri(second.session, `nano:${made.receive_address as string}?amount=${xnoToRaw('0.1')}`, {});
    await until(async () => (await merchant.user.json<Record<string, any>>(['status', made.transaction_id as string])).status === 'overpaid', 'overpaid');
    // An overpaid request is not settled: a sweep leaves its money where the refund comes from.
    const swept = await merchant.user.json<{ accounts: Record<string, any>[] }>(['sweep', '--to', merchant.address, '--yes']);
    expect(swept.accounts.find((a) => a.request_id === made.transaction_id)).toMatchObject({ status: 'left', reason: expect.stringContaining('overpaid by 0.02 XNO') });
    const ambiguous = await merchant.user.json<{ error: { code: string; message: string } }>(['refund', made.transaction_id as string, '--yes']);
    expect(ambiguous).toMatchObject({ _code: 2, error: { code: 'PAYER_AMBIGUOUS' } });
    expect(ambiguous.error.message).toContain(`${payer.address} (0.12 XNO)`);
    expect(ambiguous.error.message).toContain(`${second.address} (0.1 XNO)`);
    // By default a payer gets back what it sent.
    const back = await merchant.user.json<{ refund: Record<string, any>; request: Record<string, any> }>(['refund', made.transaction_id as string, '--to', second.address, '--yes']);
    // Paid from the fresh account that received it (its payments received there first), not from the shop's own.
    expect(back.refund).toMatchObject({ to: second.address, amount: '0.1', from: made.receive_address });
    // Refunds of a request that was not paid leave its status as it is: partly refunded means paid.
    expect(back.request).toMatchObject({ status: 'overpaid', refunded_amount: '0.1', received_raw: xnoToRaw('0.22').toString() });
    // What left the fresh account does not change what it was paid.
    expect(await merchant.user.json(['status', made.transaction_id as string])).toMatchObject({ status: 'overpaid', is_paid: false, refunded_amount: '0.1', mismatch: { amount: '0.22' } });
  });
});

describe('a refund killed between signing and publishing', () => {
  it('refunds once: the rerun under its --id publishes the same block, and a rerun without one finishes it', async () => {
    const merchant = await backendUser(sb, 'service');
    const payer = await fundedUser(sb, 'service', '1');
    const server = await startCommand<Printed>(['checkout', 'serve', '--json', '--poll-interval', '1'], merchant.user.env);
    try {
      const api = apiOf(server);
      const journal = join(merchant.user.configDir, 'journal');
      const journaled = (): string[] => (existsSync(journal) ? readdirSync(journal).filter((f) => f.endsWith('.json')) : []);
      for (const key of ['kill-with-id', undefined]) {
        const made = await paidRequest(api, merchant, payer, '0.1');
        const id = made.id as string;
        const proxy = await startFaultyProxy(sb.url, (method, path) => (method === 'POST' && path === '/block/publish' ? 'hold' : 'pass'));
        const args = ['refund', id, '--yes', ...(key === undefined ? [] : ['--id', key])];
        const child = spawn(process.execPath, [BIN, ...args], { env: { ...merchant.user.env, NANOPAY_API_URL: proxy.url }, stdio: 'ignore' });
        await until(() => journaled().length === 1 && proxy.seen.includes('POST /block/publish'), 'the signed refund at publish');
        const entry = JSON.parse(readFileSync(join(journal, journaled()[0] as string), 'utf8')) as { hash: string; sendKind: string };
        expect(entry.sendKind).toBe('refund');
        child.kill('SIGKILL');
        await new Promise((resolve) => child.once('exit', resolve));
        await proxy.close();
        expect(sb.service.ledger.blocks.has(entry.hash)).toBe(false);

        const rerun = await merchant.user.json<{ refund: Record<string, any>; resumed: boolean; repeated: boolean }>(args);
        expect(rerun._code).toBe(0);
        expect(rerun.refund).toMatchObject({ status: 'sent', block: entry.hash, amount: made.amount });
        expect(key === undefined ? rerun.resumed : rerun.repeated).toBe(true);
        expect(journaled()).toEqual([]);
        // Run once more: nothing new (repeated under the key; without one, nothing is left).
        const third = await merchant.user.json<{ error?: { code: string }; repeated?: boolean }>(args);
        if (key === undefined) expect(third).toMatchObject({ _code: 10, error: { code: 'REFUND_TOO_LARGE' } });
        else expect(third).toMatchObject({ _code: 0, repeated: true });
        const refunds = (await api(`/api/v1/requests/${id}/refunds`)).body.data.data as Record<string, any>[];
        expect(refunds.map((r) => [r.status, r.block])).toEqual([['sent', entry.hash]]);
      }
      // One refund block per request, and nothing else sent to the payer.
      expect(await sendsBetween(merchant.address, payer.address)).toHaveLength(2);
    } finally {
      await server.stop();
    }
  });
});
