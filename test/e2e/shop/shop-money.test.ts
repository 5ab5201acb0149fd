import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addressToPublicKey, xnoToRaw } from '../../../src/nano/index.js';
import { payUri } from '../../../src/ops/requests/payments.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { backendUser, fundedUser, type BackendUser } from '../../helpers/ledger/backend-users.js';
import { postgresUnavailable, startPostgres, type PostgresCluster } from '../../helpers/ledger/postgres.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { startCommand, type RunningCommand } from '../../helpers/processes/serve.js';
import { startWebhookReceiver, until, type WebhookReceiver } from '../../helpers/network/webhook-receiver.js';

/**
 * A shop's money where its features meet (issue 43, points 1 to 3), on the sandbox's node with the guide's busy-shop
 * setup (checkout serve --fresh-addresses), on SQLite and on PostgreSQL: refunds are paid from the fresh account
 * that received the payment; a refund that fails is retried, logged, and given up with request.refund_failed;
 * sweeps leave the money of requests that are not settled; partly refunded means paid; a request paid in full after
 * a partial refund gets request.paid; the API lists payers with their amounts.
 */
const skipPostgres = postgresUnavailable();
type Printed = { url: string; token_file: string; webhook_secret_file: string };
type Api = (path: string, init?: RequestInit) => Promise<{ status: number; body: { data: Record<string, any> } }>;
interface LogLine {
  event: string;
  level: string;
  [field: string]: unknown;
}

let sb: RunningSandbox;
let cluster: PostgresCluster | undefined;

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  await cluster?.stop();
  await sb?.close();
  await shutdownWorkers();
});

/** The sends of the ledger from `from` to `to`. */
function sendsBetween(from: string, to: string): string[] {
  const link = addressToPublicKey(to);
  return [...sb.service.ledger.blocks.values()].filter((b) => b.subtype === 'send' && b.block.account === from && b.block.link === link).map((b) => b.hash);
}

const stores = [
  ['SQLite', undefined],
  ['PostgreSQL', skipPostgres],
] as const;

describe.each(stores)('a busy shop on %s (fresh addresses, node backend)', (store, skip) => {
  let merchant: BackendUser;
  let payer: BackendUser;
  let cold: BackendUser;
  let env: NodeJS.ProcessEnv;
  let receiver: WebhookReceiver;
  let secret = '';
  let server: RunningCommand<Printed> | undefined;
  let api: Api;

  const serve = async (...extra: string[]): Promise<void> => {
    await server?.stop();
    server = await startCommand<Printed>(
      ['checkout', 'serve', '--json', '--fresh-addresses', '--webhook', receiver.url, '--poll-interval', '1', '--webhook-backoff-ms', '50', '--log-format', 'json', ...extra],
      env,
    );
    secret = readFileSync(server.printed.webhook_secret_file, 'utf8').trim().split('\n')[0] as string;
    const token = readFileSync(server.printed.token_file, 'utf8').trim();
    const url = server.printed.url;
    api = (path, init = {}) =>
      fetch(`${url}${path}`, { ...init, headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...(init.headers as Record<string, string>) } }).then(async (r) => ({
        status: r.status,
        body: (await r.json()) as { data: Record<string, any> },
      }));
  };
  const logLines = (): LogLine[] =>
    (server?.stderr() ?? '')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as LogLine);
  const shown = async (id: string): Promise<Record<string, any>> => (await api(`/api/v1/requests/${id}`)).body.data;
  const made = async (amount: string, extra: Record<string, unknown> = {}): Promise<Record<string, any>> =>
    (await api('/api/v1/requests', { method: 'POST', body: JSON.stringify({ amount, ...extra }) })).body.data;
  /** A request of the shop, paid its amount by the payer, once the server has seen it paid. */
  const paidRequest = async (amount: string): Promise<Record<string, any>> => {
    const request = await made(amount);
    await payUri(payer.session, request.uri as string, {});
    await until(async () => (await shown(request.id as string)).status === 'paid', 'paid');
    return request;
  };
  const eventsOf = (id: string): [string, string][] => receiver.events.filter((e) => e.data.object.id === id).map((e) => [e.type, e.data.object.status]);

  beforeAll(async () => {
    if (skip !== undefined) return;
    merchant = await backendUser(sb, 'node');
    payer = await fundedUser(sb, 'node', '5');
    cold = await backendUser(sb, 'node');
    env = merchant.user.env;
    if (store === 'PostgreSQL') {
      cluster ??= await startPostgres();
      env = { ...env, NANOPAY_DATABASE_URL: await cluster.createDatabase(`money_${randomUUID().replaceAll('-', '')}`) };
    }
    receiver = await startWebhookReceiver(() => secret);
    await serve('--refunds');
  });

  afterAll(async () => {
    await server?.stop();
    await receiver?.close();
  });

  it.skipIf(skip !== undefined)('refunds an order from the fresh account that was paid, receiving there first, and tells the shop', async () => {
    const request = await paidRequest('0.3');
    // Nothing was received yet: the payment waits at the fresh account, and the shop's own account is empty.
    const ordered = await api(`/api/v1/requests/${request.id as string}/refunds`, { method: 'POST', body: '{}' });
    expect(ordered).toMatchObject({ status: 202, body: { data: { status: 'pending', to: payer.address, amount: '0.3' } } });
    await until(async () => (await shown(request.id as string)).status === 'refunded', 'refunded by the server');
    const [refund] = (await api(`/api/v1/requests/${request.id as string}/refunds`)).body.data.data as Record<string, any>[];
    expect(refund).toMatchObject({ status: 'sent', from: request.receive_address, to: payer.address, amount_raw: xnoToRaw('0.3').toString() });
    expect(sendsBetween(request.receive_address as string, payer.address)).toEqual([refund?.block]);
    expect(sendsBetween(merchant.address, payer.address)).toEqual([]);
    expect(await shown(request.id as string)).toMatchObject({ is_paid: false, received_amount: '0.3', refunded_amount: '0.3' });
    await until(() => eventsOf(request.id as string).length === 2, 'the refund event');
    expect(eventsOf(request.id as string)).toEqual([
      ['request.paid', 'paid'],
      ['request.refunded', 'refunded'],
    ]);
    const event = receiver.events.find((e) => e.type === 'request.refunded' && e.data.object.id === request.id) as unknown as { data: Record<string, any> };
    expect(event.data.refund).toMatchObject({ id: refund?.id, status: 'sent', block: refund?.block });
    expect(event.data.object).toMatchObject({ is_paid: false, received_amount_raw: xnoToRaw('0.3').toString(), refunded_amount_raw: xnoToRaw('0.3').toString() });
    expect(logLines().find((l) => l.event === 'refund_sent' && l.refund_id === refund?.id)).toMatchObject({ request_id: request.id, from: request.receive_address, block: refund?.block });
    // Status changes are logged as fields, not only as words.
    expect(logLines().find((l) => l.event === 'request_status' && l.request_id === request.id)).toMatchObject({ from: 'waiting', to: 'paid', is_paid: true });
  });

  it.skipIf(skip !== undefined)('a refund the policy refuses ends in request.refund_failed; one that lacks funds is retried, logged, and sent by the next run', async () => {
    const refused = await paidRequest('0.2');
    expect((await merchant.user.run(['policy', 'set', 'per-send', '0.01'], { env })).code).toBe(0);
    try {
      await api(`/api/v1/requests/${refused.id as string}/refunds`, { method: 'POST', body: '{}' });
      await until(() => eventsOf(refused.id as string).some(([type]) => type === 'request.refund_failed'), 'request.refund_failed');
    } finally {
      await merchant.user.run(['policy', 'unset', 'per-send'], { env });
    }
    const failed = receiver.events.find((e) => e.type === 'request.refund_failed' && e.data.object.id === refused.id) as unknown as { data: Record<string, any> };
    expect(failed.data.refund).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'POLICY_DENIED' } });
    expect(failed.data.object).toMatchObject({ status: 'paid', is_paid: true, refunded_amount: '0' });
    expect(logLines().find((l) => l.event === 'refund_failed' && l.request_id === refused.id)).toMatchObject({ level: 'error', code: 'POLICY_DENIED' });

    // Its money swept away (it is settled), and the shop's own account empty: a refund cannot be paid yet.
    const short = await paidRequest('0.1');
    const swept = await merchant.user.json<{ accounts: Record<string, any>[] }>(['sweep', '--to', cold.address, '--yes'], { env });
    expect(swept.accounts.find((a) => a.request_id === short.id)).toMatchObject({ status: 'swept', amount: '0.1' });
    const ordered = (await api(`/api/v1/requests/${short.id as string}/refunds`, { method: 'POST', body: '{}' })).body.data;
    await until(() => logLines().some((l) => l.event === 'refund_retry' && l.refund_id === ordered.id), 'the retry in the log');
    expect(logLines().find((l) => l.event === 'refund_retry' && l.refund_id === ordered.id)).toMatchObject({ level: 'warn', code: 'INSUFFICIENT_FUNDS', attempts: 1 });
    const waiting = ((await api(`/api/v1/requests/${short.id as string}/refunds`)).body.data.data as Record<string, any>[])[0];
    expect(waiting).toMatchObject({ status: 'pending', attempts: 1, error: { code: 'INSUFFICIENT_FUNDS' } });
    expect(Date.parse(waiting?.next_attempt_at as string)).toBeGreaterThan(Date.now());
    // The shop's own account holds enough now: the next run pays it from there.
    await payUri(payer.session, `nano:${merchant.address}?amount=${xnoToRaw('0.5')}`, {});
    const run = await merchant.user.json<{ done: { refund: Record<string, any> }[] }>(['refund', '--pending', '--yes'], { env });
    expect(run.done.map((d) => d.refund)).toMatchObject([{ id: ordered.id, status: 'sent', from: merchant.address }]);
    expect(sendsBetween(merchant.address, payer.address)).toEqual([run.done[0]?.refund.block]);
  });

  it.skipIf(skip !== undefined)('partly refunded means paid: an underpaid request keeps its status with a refund, and gets request.paid when the rest comes', async () => {
    const request = await made('0.3');
    const address = request.receive_address as string;
    await payUri(payer.session, `nano:${address}?amount=${xnoToRaw('0.1')}`, {});
    await until(async () => (await shown(request.id as string)).status === 'underpaid', 'underpaid');
    const back = await merchant.user.json<{ refund: Record<string, any>; request: Record<string, any> }>(['refund', request.id as string, '--amount', '0.04', '--yes'], { env });
    expect(back).toMatchObject({ _code: 0, refund: { status: 'sent', from: address }, request: { status: 'underpaid' } });
    await until(() => eventsOf(request.id as string).some(([type]) => type === 'request.refunded'), 'the refund event');
    expect(await shown(request.id as string)).toMatchObject({ status: 'underpaid', is_paid: false, received_amount: '0.1', refunded_amount: '0.04' });
    // The rest: paid in full, with its refund counted.
    await payUri(payer.session, `nano:${address}?amount=${xnoToRaw('0.2')}`, {});
    await until(() => eventsOf(request.id as string).some(([type]) => type === 'request.paid'), 'request.paid');
    expect(eventsOf(request.id as string)).toEqual([
      ['request.underpaid', 'underpaid'],
      ['request.refunded', 'underpaid'],
      ['request.paid', 'partially_refunded'],
    ]);
    expect(await shown(request.id as string)).toMatchObject({ status: 'partially_refunded', is_paid: true, received_amount: '0.3', refunded_amount: '0.04' });
    expect(await merchant.user.json(['status', request.id as string], { env })).toMatchObject({ status: 'partially_refunded', is_paid: true });
    const rows = JSON.parse((await merchant.user.run(['requests', 'export', '--format', 'json'], { env })).stdout) as Record<string, any>[];
    expect(rows.find((r) => r.id === request.id)).toMatchObject({ status: 'partially_refunded', is_paid: true, received_amount: '0.3', refunded_amount: '0.04' });
  });

  it.skipIf(skip !== undefined)('an order the spending policy holds waits for its approval, and the server sends it once a person gave it', async () => {
    const request = await paidRequest('0.2');
    expect((await merchant.user.run(['policy', 'set', 'ask-above', '0.05'], { env })).code).toBe(0);
    try {
      const ordered = (await api(`/api/v1/requests/${request.id as string}/refunds`, { method: 'POST', body: JSON.stringify({ amount: '0.1' }) })).body.data;
      await until(() => logLines().some((l) => l.event === 'refund_held' && l.refund_id === ordered.id), 'held in the log');
      const held = ((await api(`/api/v1/requests/${request.id as string}/refunds`)).body.data.data as Record<string, any>[])[0];
      expect(held).toMatchObject({ status: 'pending', approval_id: expect.stringMatching(/^apr_/), error: { code: 'APPROVAL_REQUIRED' } });
      // Rounds meanwhile do not ask the policy again: one approval, still pending.
      await new Promise((r) => setTimeout(r, 1500));
      expect(sendsBetween(request.receive_address as string, payer.address)).toEqual([]);
      expect(await merchant.user.json(['approvals', 'approve', held?.approval_id as string, '--yes'], { env })).toMatchObject({ _code: 0, state: 'approved' });
      await until(async () => (await shown(request.id as string)).status === 'partially_refunded', 'sent by the server with the approval');
      expect(sendsBetween(request.receive_address as string, payer.address)).toHaveLength(1);
    } finally {
      await merchant.user.run(['policy', 'unset', 'ask-above'], { env });
    }
  });

  it.skipIf(skip !== undefined)('lists payers with their amounts, and a sweep leaves what is not settled, says why, and holds for approval', async () => {
    // A server that signs nothing: a refund ordered now waits.
    await serve();
    const stranger = await fundedUser(sb, 'node', '1');
    const overpaid = await made('0.2');
    await payUri(payer.session, `nano:${overpaid.receive_address as string}?amount=${xnoToRaw('0.15')}`, {});
    await until(async () => (await shown(overpaid.id as string)).status === 'underpaid', 'the first payment');
    await payUri(stranger.session, `nano:${overpaid.receive_address as string}?amount=${xnoToRaw('0.1')}`, {});
    await until(async () => (await shown(overpaid.id as string)).received_amount === '0.25', 'both payments');
    const seen = await shown(overpaid.id as string);
    expect(seen).toMatchObject({ status: 'overpaid', is_paid: false });
    expect((seen.payments as Record<string, any>[]).map((p) => [p.from, p.amount]).sort()).toEqual(
      [
        [payer.address, '0.15'],
        [stranger.address, '0.1'],
      ].sort(),
    );
    const late = await made('0.1', { expires_in: 1 });
    // A node dates its blocks to the second: the payment comes a whole second after the expiry.
    await new Promise((r) => setTimeout(r, 2500));
    await payUri(payer.session, late.uri as string, {});
    // An expired request is left to the slow rounds (the node's WebSocket follows open ones): the customer looking at
    // its page has it read at once.
    const looking = httpRequest(`${late.checkout_url as string}/events`, (res) => res.resume());
    looking.end();
    await until(async () => (await shown(late.id as string)).status === 'paid_late', 'paid late');
    looking.destroy();
    const refundWaits = await paidRequest('0.1');
    await api(`/api/v1/requests/${refundWaits.id as string}/refunds`, { method: 'POST', body: JSON.stringify({ amount: '0.03' }) });
    const settled = await paidRequest('0.15');

    expect((await merchant.user.run(['policy', 'set', 'ask-above', '0.12'], { env })).code).toBe(0);
    const first = await merchant.user.json<Record<string, any>>(['sweep', '--to', cold.address, '--yes'], { env });
    const line = (id: unknown): Record<string, any> => (first.accounts as Record<string, any>[]).find((a) => a.request_id === id) as Record<string, any>;
    expect(line(overpaid.id)).toMatchObject({ status: 'left', amount: '0.25', reason: expect.stringContaining('overpaid') });
    expect(line(late.id)).toMatchObject({ status: 'left', reason: expect.stringContaining('paid late') });
    expect(line(refundWaits.id)).toMatchObject({ status: 'left', reason: expect.stringContaining('refund') });
    expect(line(settled.id)).toMatchObject({ status: 'held', approval_id: expect.stringMatching(/^apr_/) });
    expect(first.held).toBeGreaterThanOrEqual(1);
    expect(BigInt(first.left_total_raw as string)).toBeGreaterThanOrEqual(xnoToRaw('0.45'));
    for (const r of [overpaid, late, refundWaits, settled]) expect(sendsBetween(r.receive_address as string, cold.address)).toEqual([]);

    // Approved by a person: the next run (a script, or the server's timer) sends each with its approval.
    for (const held of (first.accounts as Record<string, any>[]).filter((a) => a.status === 'held')) {
      expect(await merchant.user.json(['approvals', 'approve', held.approval_id as string, '--yes'], { env })).toMatchObject({ _code: 0, state: 'approved' });
    }
    await merchant.user.run(['policy', 'unset', 'ask-above'], { env });
    // A late payment the merchant honours is swept when named; the others stay where they are.
    const second = await merchant.user.json<Record<string, any>>(['sweep', '--to', cold.address, '--yes', '--include', late.id as string], { env });
    expect(second).toMatchObject({ _code: 0, resumed: true, held: 0 });
    expect(sendsBetween(settled.receive_address as string, cold.address)).toHaveLength(1);
    expect((second.accounts as Record<string, any>[]).find((a) => a.request_id === late.id)).toMatchObject({ status: 'swept', amount: '0.1' });
    expect(sendsBetween(overpaid.receive_address as string, cold.address)).toEqual([]);
    expect(sendsBetween(refundWaits.receive_address as string, cold.address)).toEqual([]);
  });
});
