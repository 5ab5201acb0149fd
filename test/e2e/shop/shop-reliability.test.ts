import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { payUri } from '../../../src/ops/requests/payments.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { backendUser, fundedUser, type BackendUser } from '../../helpers/ledger/backend-users.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { startCommand, type RunningCommand } from '../../helpers/processes/serve.js';
import { startWebhookReceiver, until, type WebhookReceiver } from '../../helpers/network/webhook-receiver.js';

/**
 * The shop server killed with SIGKILL at random moments while customers pay, its webhook endpoint down
 * for a while: every paid request's event arrives, none is lost, a duplicate only ever repeats an event
 * id, every signature verifies, and each request's events arrive in order. SHOP_RELIABILITY_PAYMENTS sets
 * how many payments (npm test: 12, to keep the suite's time; `npm run bench:shop-reliability` runs 50).
 */
const PAYMENTS = Number(process.env.SHOP_RELIABILITY_PAYMENTS ?? 12);

let sb: RunningSandbox;
let merchant: BackendUser;
let payer: BackendUser;
let receiver: WebhookReceiver;
let secret = '';
let server: RunningCommand<{ url: string; token_file: string; webhook_secret_file: string }> | undefined;
let token = '';
const random = (min: number, max: number): number => min + Math.floor(Math.random() * (max - min));
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function start(): Promise<void> {
  server = await startCommand(
    ['checkout', 'serve', '--json', '--fresh-addresses', '--webhook', receiver.url, '--poll-interval', '1', '--webhook-backoff-ms', '100', '--webhook-timeout-ms', '500'],
    merchant.user.env,
  );
  token = readFileSync(server.printed.token_file, 'utf8').trim();
  secret = readFileSync(server.printed.webhook_secret_file, 'utf8').trim();
}

function kill9(): Promise<void> {
  const running = server;
  server = undefined;
  if (running === undefined || running.child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    running.child.once('close', () => resolve());
    running.child.kill('SIGKILL');
  });
}

/** The API, retried while the server is down or restarting (as a shop's backend would). */
async function api(path: string, init: RequestInit = {}): Promise<Record<string, unknown>> {
  for (let tries = 0; ; tries++) {
    try {
      if (server === undefined) throw new Error('down');
      const r = await fetch(`${server.printed.url}${path}`, { ...init, headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...(init.headers as Record<string, string>) } });
      const body = (await r.json()) as { success: boolean; data: Record<string, unknown> };
      if (!body.success) throw new Error(JSON.stringify(body));
      return body.data;
    } catch (error) {
      if (tries > 200) throw error;
      await sleep(100);
    }
  }
}

beforeAll(async () => {
  sb = await sandbox();
  merchant = await backendUser(sb, 'node');
  payer = await fundedUser(sb, 'node', '20');
  receiver = await startWebhookReceiver(() => secret);
  await start();
});

afterAll(async () => {
  await kill9();
  await receiver?.close();
  await sb?.close();
  await shutdownWorkers();
});

describe('the shop server under kill -9 (node backend)', () => {
  it(`${PAYMENTS} payments with the server killed at random and the endpoint down a while: every event delivered, in order, duplicates only by id`, async () => {
    const requests: Record<string, unknown>[] = [];
    for (let i = 0; i < PAYMENTS; i++) {
      // The same Idempotency-Key on a retry after a kill: never two requests for one order.
      requests.push(await api('/api/v1/requests', { method: 'POST', body: JSON.stringify({ amount: '0.1', order_id: `R-${i}` }), headers: { 'idempotency-key': `R-${i}` } }));
    }
    expect(new Set(requests.map((r) => r.id)).size).toBe(PAYMENTS);
    receiver.down = true;
    let paying = true;
    let kills = 0;
    const killer = (async () => {
      // At least three kills, whatever the payments' pace.
      while (paying || kills < 3) {
        await sleep(random(100, 800));
        await kill9();
        kills++;
        await sleep(random(0, 700));
        await start();
        // The endpoint comes back after a few kills.
        if (kills === 3) receiver.down = false;
      }
    })();
    for (const [i, request] of requests.entries()) {
      // Every fourth customer first sends half, then the rest: an underpaid event, then the paid one, in that order.
      const half = BigInt(request.amount_raw as string) / 2n;
      if (i % 4 === 0) {
        await payUri(payer.session, `nano:${request.receive_address as string}?amount=${half}`, {});
        await until(async () => (await api(`/api/v1/requests/${request.id as string}`)).status === 'underpaid', 'the underpaid status', 60_000);
      }
      const rest = i % 4 === 0 ? BigInt(request.amount_raw as string) - half : BigInt(request.amount_raw as string);
      await payUri(payer.session, `nano:${request.receive_address as string}?amount=${rest}`, {});
      await sleep(random(0, 250));
    }
    paying = false;
    await killer;
    receiver.down = false;
    if (server === undefined) await start();
    const paidIds = new Set(requests.map((r) => r.id as string));
    await until(() => new Set(receiver.events.filter((e) => e.type === 'request.paid').map((e) => e.data.object.id)).size === PAYMENTS, `request.paid for all ${PAYMENTS}`, 120_000);
    expect(kills).toBeGreaterThanOrEqual(3);
    expect(receiver.refused).toEqual([]);
    // A duplicate repeats an event (same id, same body); one change is never two events.
    const byRequestAndType = new Map<string, Set<string>>();
    for (const e of receiver.events) {
      const key = `${e.data.object.id} ${e.type}`;
      byRequestAndType.set(key, (byRequestAndType.get(key) ?? new Set()).add(e.id));
    }
    expect([...byRequestAndType.values()].every((ids) => ids.size === 1)).toBe(true);
    // Each paid, and the ones paid in two parts underpaid first: no other event.
    expect(byRequestAndType.size).toBe(PAYMENTS + Math.ceil(PAYMENTS / 4));
    for (const id of paidIds) {
      // In order: a request's first event (underpaid) before its paid one, whatever was resent.
      const types = receiver.events.filter((e) => e.data.object.id === id).map((e) => e.type);
      const firstPaid = types.indexOf('request.paid');
      expect(types.slice(firstPaid).every((t) => t === 'request.paid')).toBe(true);
    }
    const underpaid = requests.filter((_, i) => i % 4 === 0).map((r) => r.id);
    for (const id of underpaid) expect(receiver.events.filter((e) => e.data.object.id === id).map((e) => e.type)[0]).toBe('request.underpaid');
    for (const r of requests) expect((await api(`/api/v1/requests/${r.id as string}`)).status).toBe('paid');
    console.log(`${PAYMENTS} payments, ${kills} kills -9, ${receiver.events.length} deliveries received for ${byRequestAndType.size} events`);
  });

  it('a request paid while the server is down is found paid after the restart, and notified', async () => {
    const request = await api('/api/v1/requests', { method: 'POST', body: JSON.stringify({ amount: '0.2', order_id: 'while-down' }) });
    await kill9();
    await payUri(payer.session, request.uri as string, {});
    await sleep(300);
    expect(receiver.events.some((e) => e.data.object.id === request.id)).toBe(false);
    await start();
    await until(() => receiver.events.some((e) => e.data.object.id === request.id && e.type === 'request.paid'), 'the event after restart');
    expect((await api(`/api/v1/requests/${request.id as string}`)).status).toBe('paid');
  });
});
