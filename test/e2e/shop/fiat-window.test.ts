import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Session } from '../../../src/ops/session.js';
import { payUri } from '../../../src/ops/requests/payments.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import type { AcceptedRate } from '../../../src/store/prices.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { BACKENDS, backendUser, fundedUser, type BackendUser } from '../../helpers/ledger/backend-users.js';
import { postgresUnavailable, startPostgres, type PostgresCluster } from '../../helpers/ledger/postgres.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { ratesBody, startRateSource, type RateSource } from '../../helpers/network/rate-source.js';
import { startWebhookReceiver, until, type WebhookReceiver } from '../../helpers/network/webhook-receiver.js';
import { PASSWORD } from '../../helpers/processes/cli.js';
import { startCommand } from '../../helpers/processes/serve.js';

/**
 * Issue 43, point 5: fiat prices with a lifetime. A price in another currency holds its XNO amount for
 * rate-quote-window, and its request expires then, on both backends (a payment after it is paid late); the
 * movement bound holds against every rate accepted in the last hour, not just the last, on SQLite and PostgreSQL.
 */
let sb: RunningSandbox;
let cluster: PostgresCluster | undefined;
const sources: RateSource[] = [];
const sessions: Session[] = [];
const pgSkip = postgresUnavailable();

beforeAll(async () => {
  sb = await sandbox();
  if (pgSkip === undefined) cluster = await startPostgres();
});

afterAll(async () => {
  for (const session of sessions) await session.close();
  for (const source of sources) await source.close();
  await cluster?.stop();
  await sb?.close();
  await shutdownWorkers();
});

async function rateSource(rates?: Record<string, string>): Promise<RateSource> {
  const source = await startRateSource(rates);
  sources.push(source);
  return source;
}

/** 0.91^n exactly, as a decimal: a rate falling 9 % at each step. */
function falling(n: number): string {
  const units = (91n ** BigInt(n)).toString().padStart(2 * n + 1, '0');
  return n === 0 ? '1' : `${units.slice(0, -2 * n)}.${units.slice(-2 * n)}`;
}

interface Made {
  _code: number | null;
  amount: string;
  fiat?: { rate: string };
  error?: { code: string; message: string };
}

describe.each(['sqlite', 'postgres'] as const)('the movement bound over the last hour, on %s', (kind) => {
  let merchant: BackendUser;
  let rates: RateSource;
  /** What the merchant's commands get on top of their environment: the PostgreSQL store, for postgres. */
  let env: NodeJS.ProcessEnv = {};

  beforeAll(async () => {
    if (kind === 'postgres' && pgSkip !== undefined) return;
    merchant = await backendUser(sb, 'node');
    if (kind === 'postgres') env = { NANOPAY_DATABASE_URL: await (cluster as PostgresCluster).createDatabase(`fiat_${randomUUID().replaceAll('-', '')}`) };
    rates = await rateSource();
    expect((await merchant.user.run(['config', 'set', 'rate-source', rates.url], { env })).code).toBe(0);
  });

  const request = (currency = 'EUR'): Promise<Made> => merchant.user.json<Made>(['request', '10', '--currency', currency, '--no-qr'], { env });

  it.skipIf(kind === 'postgres' && pgSkip !== undefined)(
    'a source falling 9 % per call: refused (RATE_MOVED) once the fall from a rate of the last hour passes 10 %, so 12 requests never price 10 EUR above 11 XNO',
    async () => {
      let calls = 0;
      rates.answer = () => ({ status: 200, body: ratesBody({ EUR: falling(calls++) }) });
      const made: Made[] = [];
      for (let i = 0; i < 12; i++) made.push(await request());
      expect(calls).toBe(12);
      // 1, then 0.91 (9 % down): taken. 0.8281 is 9 % below the last but 17.19 % below 1, accepted minutes ago.
      expect(made.slice(0, 2).map((m) => [m._code, m.fiat?.rate])).toEqual([
        [0, '1'],
        [0, '0.91'],
      ]);
      for (const refused of made.slice(2)) {
        expect(refused).toMatchObject({ _code: 5, error: { code: 'RATE_MOVED', message: expect.stringContaining('no request was made') } });
      }
      expect(made[2]?.error?.message).toMatch(/is 0\.8281, more than rate-max-move \(10%\) away from one accepted at \S+, within the last 1h, 1 \(from /);
      const highest = made.filter((m) => m._code === 0).reduce((max, m) => (Number(m.amount) > max ? Number(m.amount) : max), 0);
      expect(highest > 10 && highest < 11).toBe(true);

      // The owner lets a real move through with a larger bound: the rates accepted before it no longer count.
      rates.answer = () => ({ status: 200, body: ratesBody({ EUR: '0.85' }) });
      expect(await request()).toMatchObject({ _code: 5, error: { code: 'RATE_MOVED' } });
      expect((await merchant.user.run(['config', 'set', 'rate-max-move', '20'], { env })).code).toBe(0);
      expect(await request()).toMatchObject({ _code: 0, fiat: { rate: '0.85' } });
      expect((await merchant.user.run(['config', 'set', 'rate-max-move', '--unset'], { env })).code).toBe(0);
      // 0.81 is 4.7 % below 0.85; 11 % below 0.91 and 19 % below 1, which were before it.
      rates.answer = () => ({ status: 200, body: ratesBody({ EUR: '0.81' }) });
      expect(await request()).toMatchObject({ _code: 0, fiat: { rate: '0.81' } });
    },
  );

  it.skipIf(kind === 'postgres' && pgSkip !== undefined)('after a quiet hour only the last accepted counts, as before', async () => {
    // Rates accepted by an earlier process: 1 two hours ago, 1.2 ninety minutes ago (the last).
    const session = new Session({ password: async () => PASSWORD, env: { ...merchant.user.env, ...env } });
    sessions.push(session);
    const store = await session.dataStore();
    const at = (minutesAgo: number) => new Date(Date.now() - minutesAgo * 60_000).toISOString();
    const accepted = (rate: string, minutesAgo: number): AcceptedRate => ({ currency: 'USD', rate, source: rates.url, time: at(minutesAgo), accepted_at: at(minutesAgo), max_move: '10' });
    await store.prices.accept(accepted('1', 120), at(180));
    await store.prices.accept(accepted('1.2', 90), at(180));
    rates.answer = () => ({ status: 200, body: ratesBody({ USD: '1.35' }) });
    const moved = await request('USD');
    expect(moved).toMatchObject({ _code: 5, error: { code: 'RATE_MOVED' } });
    expect(moved.error?.message).toMatch(/is 1\.35, more than rate-max-move \(10%\) away from the last accepted, 1\.2 \(from /);
    // 12 % above 1, but that was two hours ago; 6.7 % below 1.2.
    rates.answer = () => ({ status: 200, body: ratesBody({ USD: '1.12' }) });
    expect(await request('USD')).toMatchObject({ _code: 0, fiat: { rate: '1.12' } });
  });
});

describe('the rate-quote-window setting', () => {
  it('is 15m unless set, and lasts from 1s to 1d', async () => {
    const { user } = await backendUser(sb, 'node');
    type Listed = { settings: { name: string; value: string | null; source: string }[] };
    const setting = async () => (await user.json<Listed>(['config', 'list'])).settings.find((s) => s.name === 'rate-quote-window');
    expect(await setting()).toMatchObject({ value: '15m', source: 'default' });
    for (const refused of ['0s', '2d', 'soon']) {
      const set = await user.json<{ error: { code: string; message: string } }>(['config', 'set', 'rate-quote-window', refused]);
      expect(set).toMatchObject({ _code: 2, error: { code: 'USAGE' } });
    }
    expect((await user.run(['config', 'set', 'rate-quote-window', '1h30m'])).code).toBe(0);
    expect(await setting()).toMatchObject({ value: '1h30m', source: 'profile' });
  });
});

interface Printed {
  url: string;
  token_file: string;
  webhook_secret_file: string;
}

interface Status {
  _code: number | null;
  status: string;
  is_paid: boolean;
  expired?: boolean;
  expires_at?: string;
  paid_late?: { blocks: string[] };
  error?: { code: string; message: string };
}

/** Until `iso` is more than `ms` past (by this machine's clock, which the CLI and the servers share). */
async function past(iso: string, ms = 100): Promise<void> {
  await sleep(Math.max(0, Date.parse(iso) + ms - Date.now()));
}

// On the service backend the quote's end lives only in the store (with the price, and the shop's row): both kinds.
const QUOTE_CASES = BACKENDS.flatMap((backend) => (['sqlite', 'postgres'] as const).map((kind) => [backend, kind] as const));

describe.each(QUOTE_CASES)('a price in the shop\'s currency holds for rate-quote-window on the %s backend, %s store', (backend, kind) => {
  let merchant: BackendUser;
  let payer: BackendUser;
  let rates: RateSource;
  /** What the merchant's commands get on top of their environment: the PostgreSQL store, for postgres. */
  let env: NodeJS.ProcessEnv = {};
  const skipped = kind === 'postgres' && pgSkip !== undefined;

  beforeAll(async () => {
    if (skipped) return;
    merchant = await backendUser(sb, backend);
    payer = await fundedUser(sb, backend, '10');
    if (kind === 'postgres') env = { NANOPAY_DATABASE_URL: await (cluster as PostgresCluster).createDatabase(`quote_${randomUUID().replaceAll('-', '')}`) };
    rates = await rateSource();
    for (const [name, value] of [['rate-source', rates.url], ['rate-quote-window', '4s']]) expect((await merchant.user.run(['config', 'set', name as string, value as string], { env })).code).toBe(0);
  });

  it.skipIf(skipped)('request --currency: it expires at the quote\'s end (the fiat object says when); a longer --expires-in is refused; paid after it, it is paid late, not paid', async () => {
    const hits = rates.hits;
    const longer = await merchant.user.json<{ error: { code: string; message: string } }>(['request', '1', '--currency', 'EUR', '--expires-in', '1h'], { env });
    expect(longer).toMatchObject({ _code: 3, error: { code: 'INVALID_REQUEST', message: expect.stringContaining('holds for rate-quote-window (4s)') } });
    expect(rates.hits).toBe(hits);

    const before = Date.now();
    const shorter = await merchant.user.json<{ expires_at: string; fiat: { quote_expires_at: string } }>(['request', '1', '--currency', 'EUR', '--expires-in', '2s', '--no-qr'], { env });
    const after = Date.now();
    expect(shorter).toMatchObject({ _code: 0, fiat: { quote_expires_at: shorter.expires_at } });
    expect(Date.parse(shorter.expires_at)).toBeGreaterThanOrEqual(before + 2000);
    expect(Date.parse(shorter.expires_at)).toBeLessThanOrEqual(after + 2000);

    const start = Date.now();
    const made = await merchant.user.json<{ transaction_id: string; uri: string; expires_at: string; fiat: { quote_expires_at: string } }>(['request', '1', '--currency', 'EUR', '--no-qr'], { env });
    const end = Date.now();
    expect(made).toMatchObject({ _code: 0, fiat: { rate: '0.93', quote_expires_at: made.expires_at } });
    expect(Date.parse(made.expires_at)).toBeGreaterThanOrEqual(start + 4000);
    expect(Date.parse(made.expires_at)).toBeLessThanOrEqual(end + 4000);
    // The quote's end is kept with the price in this store (on the service backend nothing else knows it).
    const session = new Session({ password: async () => PASSWORD, env: { ...merchant.user.env, ...env } });
    sessions.push(session);
    expect(await (await session.dataStore()).prices.of(made.transaction_id)).toMatchObject({ quote_expires_at: made.expires_at });

    await past(made.expires_at);
    expect(await merchant.user.json<Status>(['status', made.transaction_id], { env })).toMatchObject({ _code: 0, status: 'expired', is_paid: false, expired: true, expires_at: made.expires_at });
    const watched = await merchant.user.run(['status', made.transaction_id, '--watch', '--timeout', '30'], { env });
    expect(watched.code).toBe(11);
    expect(watched.stderr).toContain('REQUEST_EXPIRED');

    // The ledger dates blocks in whole seconds: the payment comes more than a second after the expiry.
    await past(made.expires_at, 1100);
    const paid = await payUri(payer.session, made.uri, {});
    const late = await merchant.user.json<Status>(['status', made.transaction_id], { env });
    expect(late).toMatchObject({ _code: 0, status: 'paid_late', is_paid: false, expires_at: made.expires_at, paid_late: { blocks: [paid.hash] } });
  });

  it.skipIf(skipped)('the shop API: the request expires at the quote\'s end (webhook request.expired), a longer expires_in is refused, a payment after it is paid late', async () => {
    let secret = '';
    const receiver: WebhookReceiver = await startWebhookReceiver(() => secret);
    const server = await startCommand<Printed>(['checkout', 'serve', '--json', '--webhook', receiver.url, '--poll-interval', '1'], { ...merchant.user.env, ...env });
    try {
      secret = readFileSync(server.printed.webhook_secret_file, 'utf8').trim();
      const token = readFileSync(server.printed.token_file, 'utf8').trim();
      const api = async (path: string, body?: unknown) => {
        const response = await fetch(`${server.printed.url}${path}`, {
          method: body === undefined ? 'GET' : 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        return { status: response.status, body: (await response.json()) as { data: Record<string, unknown> & { fiat: Record<string, string> }; error?: { error: string; message: string } } };
      };
      const longer = await api('/api/v1/requests', { amount: '1', currency: 'EUR', expires_in: 3600 });
      expect(longer).toMatchObject({ status: 400, body: { error: { error: 'INVALID_REQUEST' } } });
      expect(longer.body.error?.message).toContain('holds for rate-quote-window (4s)');

      const made = (await api('/api/v1/requests', { amount: '1', currency: 'EUR', order_id: 'W-1' })).body.data;
      expect(made).toMatchObject({ status: 'waiting', fiat: { rate: '0.93', quote_expires_at: made.expires_at } });
      expect(Date.parse(made.expires_at as string)).toBeGreaterThanOrEqual(Date.parse(made.created_at as string) + 4000);
      expect(Date.parse(made.expires_at as string)).toBeLessThan(Date.parse(made.created_at as string) + 60_000);
      expect(await (await fetch(made.checkout_url as string)).text()).toContain(`held until <span id="quote-expires-at">${made.expires_at as string}</span>`);

      const events = (type: string) => receiver.events.filter((e) => e.data.object.id === made.id && e.type === type);
      await until(() => events('request.expired').length > 0, 'request.expired');
      expect((events('request.expired')[0]?.created ?? 0) * 1000).toBeGreaterThanOrEqual(Math.floor(Date.parse(made.expires_at as string) / 1000) * 1000);
      expect((await api(`/api/v1/requests/${made.id as string}`)).body.data).toMatchObject({ status: 'expired' });

      await past(made.expires_at as string, 1100);
      const paid = await payUri(payer.session, made.uri as string, {});
      await until(() => events('request.paid_late').length > 0, 'request.paid_late');
      expect(events('request.paid').length).toBe(0);
      expect((await api(`/api/v1/requests/${made.id as string}`)).body.data).toMatchObject({ status: 'paid_late', paid_by: [paid.hash] });
    } finally {
      await server.stop();
      await receiver.close();
    }
  });
});
