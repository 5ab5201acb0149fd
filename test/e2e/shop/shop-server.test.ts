import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { payUri } from '../../../src/ops/requests/payments.js';
import { createShopRequest } from '../../../src/shop/create.js';
import { createWallet } from '../../../src/ops/profile/wallet.js';
import { Session } from '../../../src/ops/session.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { BACKENDS, backendUser, fundedUser, type BackendUser } from '../../helpers/ledger/backend-users.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { startCommand, type RunningCommand } from '../../helpers/processes/serve.js';
import { PASSWORD } from '../../helpers/processes/cli.js';
import { startWebhookReceiver, until, type WebhookReceiver } from '../../helpers/network/webhook-receiver.js';

/**
 * `nanopay checkout serve` as a shop runs it: the built CLI in a child process on the sandbox (both
 * backends), called by a "shop backend" (fetch) with its token, paid by a customer, notified by signed webhooks.
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
  webhooks: string[];
}

/** Secrets a webhook URL may carry (a password, a query token): shown and recorded masked. */
const URL_PASSWORD = 'hook-password-7f3a';
const URL_TOKEN = 'query-token-91c2';
const withSecrets = (url: string): string => {
  const u = new URL(url);
  u.username = 'hook';
  u.password = URL_PASSWORD;
  u.search = `?token=${URL_TOKEN}`;
  return u.toString();
};

describe.each(BACKENDS)('nanopay listen on the %s backend', (backend) => {
  it('prints where the signing secret is (the secret itself only with --show-secret), and forwards each event of the profile, signed, with the answer', async () => {
    const shop = await backendUser(sb, backend);
    const payer = await fundedUser(sb, backend, '2');
    let secret = '';
    const receiver = await startWebhookReceiver(() => secret);
    const listen = await startCommand<{ forward_to: string; webhook_secret_file: string; webhook_secret?: string }>(['listen', '--json', '--forward-to', receiver.url, '--poll-interval', '1'], shop.user.env);
    try {
      secret = readFileSync(listen.printed.webhook_secret_file, 'utf8').trim().split('\n')[0] as string;
      expect(secret.length).toBeGreaterThanOrEqual(32);
      expect(listen.printed.webhook_secret).toBeUndefined();
      expect(listen.stdout()).not.toContain(secret);
      const { request } = await createShopRequest(shop.session, await shop.session.dataStore(), { amount: '0.3', order_id: 'L-1' }, undefined);
      await payUri(payer.session, request.uri, {});
      await until(() => receiver.events.length === 1, 'the forwarded event');
      expect(receiver.events[0]).toMatchObject({ type: 'request.paid', data: { object: { id: request.id, order_id: 'L-1' } } });
      expect(receiver.refused).toEqual([]);
      await until(() => listen.stdout().includes('"answer":"200"'), 'the printed answer');
      expect(JSON.parse(listen.stdout().split('\n')[1] as string)).toEqual({ event_id: receiver.events[0]?.id, type: 'request.paid', request_id: request.id, answer: '200' });
    } finally {
      await listen.stop();
      await receiver.close();
    }
  });
});

describe.each(BACKENDS)('listen beside checkout serve --webhook on the %s backend', (backend) => {
  it('is one more destination: the live endpoint still gets every event, and keeps getting them after the listener is killed', async () => {
    const shop = await backendUser(sb, backend);
    const payer = await fundedUser(sb, backend, '2');
    let secret = '';
    const live = await startWebhookReceiver(() => secret);
    const dev = await startWebhookReceiver(() => secret);
    const server = await startCommand<Printed>(['checkout', 'serve', '--json', '--webhook', live.url, '--poll-interval', '1', '--webhook-backoff-ms', '50'], shop.user.env);
    const listen = await startCommand<{ webhook_secret: string }>(['listen', '--json', '--show-secret', '--forward-to', dev.url, '--poll-interval', '1', '--webhook-backoff-ms', '50'], shop.user.env);
    try {
      secret = listen.printed.webhook_secret;
      const store = await shop.session.dataStore();
      const made: string[] = [];
      for (const amount of ['0.11', '0.12', '0.13']) {
        const { request } = await createShopRequest(shop.session, store, { amount }, undefined);
        made.push(request.id);
        await payUri(payer.session, request.uri, {});
      }
      const paidAt = (r: WebhookReceiver): string[] => r.events.filter((e) => e.type === 'request.paid').map((e) => e.data.object.id).sort();
      await until(() => paidAt(live).length === 3 && paidAt(dev).length === 3, 'each event at both endpoints');
      expect(paidAt(live)).toEqual([...made].sort());
      expect(paidAt(dev)).toEqual([...made].sort());

      // Gone without a word: the live endpoint is not held back by what the listener never takes.
      listen.child.kill('SIGKILL');
      const { request } = await createShopRequest(shop.session, store, { amount: '0.14' }, undefined);
      await payUri(payer.session, request.uri, {});
      await until(() => paidAt(live).includes(request.id), 'the next event at the live endpoint');
      expect(live.refused).toEqual([]);
    } finally {
      await listen.stop();
      await server.stop();
      await live.close();
      await dev.close();
    }
  });
});

describe.each(BACKENDS)('checkout serve on the %s backend', (backend) => {
  let merchant: BackendUser;
  let payer: BackendUser;
  let server: RunningCommand<Printed>;
  let receiver: WebhookReceiver;
  let token: string;
  let secret = '';

  const api = (path: string, init: RequestInit & { auth?: string } = {}) =>
    fetch(`${server.printed.url}${path}`, {
      ...init,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${init.auth ?? token}`, ...(init.headers as Record<string, string>) },
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as { success: boolean; data: Record<string, unknown> & { data?: Record<string, unknown>[]; has_more?: boolean }; error?: { error: string } } }));

  beforeAll(async () => {
    merchant = await backendUser(sb, backend);
    payer = await fundedUser(sb, backend, '5');
    receiver = await startWebhookReceiver(() => secret);
    server = await startCommand<Printed>(
      ['checkout', 'serve', '--json', '--webhook', withSecrets(receiver.url), '--shop-name', 'Test Shop', '--poll-interval', '1', '--webhook-backoff-ms', '50'],
      merchant.user.env,
    );
    token = readFileSync(server.printed.token_file, 'utf8').trim();
    secret = readFileSync(server.printed.webhook_secret_file, 'utf8').trim().split('\n')[0] as string;
    // Both made for the shop, private.
    expect(statSync(server.printed.token_file).mode & 0o777).toBe(0o600);
    expect(statSync(server.printed.webhook_secret_file).mode & 0o777).toBe(0o600);
  });

  afterAll(async () => {
    await server?.stop();
    await receiver?.close();
  });

  it('never answers the API without the token, nor to a web page', async () => {
    expect((await api('/api/v1/requests', { auth: 'wrong-token-wrong-token' })).status).toBe(401);
    const bare = await fetch(`${server.printed.url}/api/v1/requests`);
    expect(bare.status).toBe(401);
    const posted = await fetch(`${server.printed.url}/api/v1/requests`, { method: 'POST', body: JSON.stringify({ amount: '1' }), headers: { 'content-type': 'application/json' } });
    expect(posted.status).toBe(401);
    expect((await api('/api/v1/requests', { headers: { origin: 'https://evil.example' } })).status).toBe(403);
  });

  it('creates requests idempotently, finds and lists them by cursor, serves their pages', async () => {
    const body = JSON.stringify({ amount: '0.25', order_id: 'A-1', metadata: { cart: 7 }, redirect_url: 'https://shop.example/thanks' });
    const first = await api('/api/v1/requests', { method: 'POST', body, headers: { 'idempotency-key': 'order-A-1' } });
    expect(first.status).toBe(200);
    const made = first.body.data;
    expect(made).toMatchObject({ status: 'waiting', order_id: 'A-1', metadata: { cart: 7 }, currency: 'XNO', redirect_url: 'https://shop.example/thanks' });
    expect(made.checkout_url).toBe(`${server.printed.url}/checkout/${made.id as string}`);
    // Same key, same body: the same request; another body: refused, nothing made.
    expect((await api('/api/v1/requests', { method: 'POST', body, headers: { 'idempotency-key': 'order-A-1' } })).body.data.id).toBe(made.id);
    const other = await api('/api/v1/requests', { method: 'POST', body: JSON.stringify({ amount: '0.3' }), headers: { 'idempotency-key': 'order-A-1' } });
    expect(other).toMatchObject({ status: 409, body: { error: { error: 'IDEMPOTENCY_MISMATCH' } } });
    expect((await api('/api/v1/requests', { method: 'POST', body: JSON.stringify({ amount: 1.5 }) })).status).toBe(400);
    expect((await api('/api/v1/requests', { method: 'POST', body: JSON.stringify({ amount: '1', metadata: { big: 'x'.repeat(5000) } }) })).status).toBe(400);

    for (let i = 2; i <= 4; i++) expect((await api('/api/v1/requests', { method: 'POST', body: JSON.stringify({ amount: `0.0${i}`, order_id: `A-${i}` }) })).status).toBe(200);
    expect((await api(`/api/v1/requests/${made.id as string}`)).body.data).toEqual(made);
    const page1 = (await api('/api/v1/requests?limit=2')).body.data;
    expect(page1.data?.map((r) => r.order_id)).toEqual(['A-4', 'A-3']);
    expect(page1.has_more).toBe(true);
    const page2 = (await api(`/api/v1/requests?limit=2&starting_after=${page1.data?.[1]?.id as string}`)).body.data;
    expect(page2.data?.map((r) => r.order_id)).toEqual(['A-2', 'A-1']);
    expect((await api('/api/v1/requests?order_id=A-3')).body.data.data).toHaveLength(1);
    expect((await api('/api/v1/requests?status=paid')).body.data.data).toHaveLength(0);

    const html = await (await fetch(made.checkout_url as string)).text();
    expect(html).toContain(`>${made.amount as string}<`);
    expect(html).toContain('Test Shop · Order A-1');
    expect(html).toContain('id="test-mode"');
    expect((await fetch(`${server.printed.url}/checkout/00000000-0000-0000-0000-000000000000`)).status).toBe(404);
  });

  it('a payment turns the request paid, from the backend, and the shop gets one signed request.paid, after its endpoint was down', async () => {
    const made = (await api('/api/v1/requests', { method: 'POST', body: JSON.stringify({ amount: '0.5', order_id: 'B-1' }) })).body.data;
    receiver.down = true;
    await payUri(payer.session, `nano:${made.receive_address as string}?amount=${made.amount_raw as string}`, {});
    await until(async () => (await api(`/api/v1/requests/${made.id as string}`)).body.data.status === 'paid', 'the request paid');
    await new Promise((r) => setTimeout(r, 500));
    receiver.down = false;
    await until(() => receiver.events.some((e) => e.data.object.id === made.id), 'the webhook');
    const event = receiver.events.find((e) => e.data.object.id === made.id);
    expect(event).toMatchObject({ type: 'request.paid', data: { object: { status: 'paid', order_id: 'B-1' } } });
    expect(event?.id).toMatch(/^evt_/);
    expect(receiver.refused).toEqual([]);
    expect((await api('/api/v1/requests?status=paid')).body.data.data?.map((r) => r.id)).toEqual([made.id]);

    // webhooks list: the endpoint's refusals while down, then its 200.
    const listed = await merchant.user.json<{ events: { id: string; type: string; delivery: { attempts: number; delivered_at?: string; last_result?: string } }[] }>(['webhooks', 'list']);
    const record = listed.events.find((e) => e.id === event?.id);
    expect(record?.delivery.attempts).toBeGreaterThanOrEqual(2);
    expect(record?.delivery.delivered_at).toBeDefined();
    expect(record?.delivery.last_result).toMatch(/ 200$/);
    // Each refused attempt was a line of the server's log, with the endpoint's answer.
    expect(server.stderr()).toMatch(new RegExp(`webhook ${event?.id as string} \\(request\\.paid\\) not delivered: .+ 503; attempt 2`));
    // webhooks resend: the same event (same id and body) once more, newly signed.
    const resent = await merchant.user.json(['webhooks', 'resend', event?.id as string]);
    expect(resent).toMatchObject({ id: event?.id, queued: true, _code: 0 });
    await until(() => receiver.events.filter((e) => e.id === event?.id).length === 2, 'the resent event');
    expect(receiver.events.filter((e) => e.id === event?.id)[1]).toEqual(event);
    expect((await merchant.user.run(['webhooks', 'resend', 'evt_nope'])).code).toBe(9);
  });

  it('an unpaid request with expires_in turns expired, notified', async () => {
    const made = (await api('/api/v1/requests', { method: 'POST', body: JSON.stringify({ amount: '0.7', expires_in: 1 }) })).body.data;
    await until(() => receiver.events.some((e) => e.data.object.id === made.id && e.type === 'request.expired'), 'request.expired');
    expect((await api(`/api/v1/requests/${made.id as string}`)).body.data.status).toBe('expired');
  });

  it('the exact amount after the expiry is paid late on every surface: API, webhook, page, status (text and --json); never paid', async () => {
    const made = (await api('/api/v1/requests', { method: 'POST', body: JSON.stringify({ amount: '0.6', order_id: 'L-2', expires_in: 1 }) })).body.data;
    const id = made.id as string;
    await until(() => receiver.events.some((e) => e.data.object.id === id && e.type === 'request.expired'), 'request.expired');
    // The ledger dates blocks in whole seconds: the payment comes more than a second after the expiry.
    await sleep(Math.max(0, Date.parse(made.expires_at as string) + 1100 - Date.now()));
    const paid = await payUri(payer.session, made.uri as string, {});
    await until(async () => (await api(`/api/v1/requests/${id}`)).body.data.status === 'paid_late', 'paid_late in the API');
    expect((await api(`/api/v1/requests/${id}`)).body.data).toMatchObject({ status: 'paid_late', paid_by: [paid.hash] });
    await until(() => receiver.events.some((e) => e.data.object.id === id && e.type === 'request.paid_late'), 'request.paid_late');
    expect(receiver.events.filter((e) => e.data.object.id === id).map((e) => [e.type, e.data.object.status])).toEqual([
      ['request.expired', 'expired'],
      ['request.paid_late', 'paid_late'],
    ]);
    const html = await (await fetch(made.checkout_url as string)).text();
    expect(html).toContain('data-state="paid_late"');
    expect(html).toContain('Paid late');
    const text = await merchant.user.run(['status', id]);
    expect(text.stdout).toMatch(/^Paid late: /);
    expect(text.stdout).toContain(paid.hash as string);
    expect(await merchant.user.json(['status', id])).toMatchObject({
      _code: 0,
      status: 'paid_late',
      is_paid: false,
      expired: true,
      paid_late: { amount_raw: made.amount_raw, blocks: [paid.hash] },
    });
  });

  it('a webhook URL\'s password and query token are masked wherever it is shown or recorded; deliveries still reach it', async () => {
    expect(server.printed.webhooks).toEqual([expect.stringMatching(/^http:\/\/hook:\*\*\*@127\.0\.0\.1:\d+\/hooks\?token=\*\*\* #[0-9a-f]{8}$/)]);
    const { request } = await createShopRequest(merchant.session, await merchant.session.dataStore(), { amount: '0.01', order_id: 'MASK-1' }, undefined);
    await payUri(payer.session, request.uri, {});
    await until(() => receiver.events.some((e) => e.data.object.id === request.id), 'the delivery');
    const listed = await merchant.user.run(['webhooks', 'list', '--json']);
    await until(async () => (await merchant.user.run(['webhooks', 'list', '--json'])).stdout.includes('200'), 'the delivery recorded');
    const shown = [server.stdout(), server.stderr(), listed.stdout, (await merchant.user.run(['webhooks', 'list'])).stdout].join('\n');
    const stored = readdirSync(merchant.user.configDir, { recursive: true, encoding: 'utf8' })
      .filter((f) => statSync(join(merchant.user.configDir, f)).isFile())
      .map((f) => readFileSync(join(merchant.user.configDir, f)).toString('latin1'))
      .join('\n');
    for (const secretPart of [URL_PASSWORD, URL_TOKEN]) {
      expect(shown).not.toContain(secretPart);
      expect(stored).not.toContain(secretPart);
    }
  });

  it('a webhook secret rotated in its file signs the next delivery, without a restart', async () => {
    const rotated = `rotated-${'9'.repeat(40)}`;
    writeFileSync(server.printed.webhook_secret_file, `${rotated}\n${secret}\n`, { mode: 0o600 });
    secret = rotated;
    const { request } = await createShopRequest(merchant.session, await merchant.session.dataStore(), { amount: '0.02', order_id: 'ROTATE-1' }, undefined);
    await payUri(payer.session, request.uri, {});
    await until(() => receiver.events.some((e) => e.data.object.id === request.id), 'the delivery signed with the new secret');
    expect(receiver.refused).toEqual([]);
  });
});

describe('profiles of one config dir', () => {
  it('each has its own shop token and webhook secret: one profile\'s token opens no other\'s shop', async () => {
    const first = await backendUser(sb, 'node');
    const env = { ...first.user.env, NANOPAY_PROFILE: 'second shop' };
    await createWallet(new Session({ password: async () => PASSWORD, env }));
    const servers = [await startCommand<Printed>(['checkout', 'serve', '--json'], first.user.env), await startCommand<Printed>(['checkout', 'serve', '--json'], env)];
    try {
      const [a, b] = servers.map((s) => s.printed) as [Printed, Printed];
      expect(a.token_file).toBe(join(first.user.configDir, 'checkout.token'));
      expect(a.webhook_secret_file).toBe(join(first.user.configDir, 'webhook.secret'));
      expect(b.token_file).not.toBe(a.token_file);
      expect(b.webhook_secret_file).not.toBe(a.webhook_secret_file);
      const [tokenA, tokenB] = [readFileSync(a.token_file, 'utf8').trim(), readFileSync(b.token_file, 'utf8').trim()];
      expect(readFileSync(b.webhook_secret_file, 'utf8')).not.toBe(readFileSync(a.webhook_secret_file, 'utf8'));
      const list = (url: string, token: string) => fetch(`${url}/api/v1/requests`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status);
      expect([await list(a.url, tokenA), await list(a.url, tokenB), await list(b.url, tokenB), await list(b.url, tokenA)]).toEqual([200, 401, 200, 401]);
    } finally {
      for (const server of servers) await server.stop();
    }
  });
});
