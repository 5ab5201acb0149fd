import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { payUri } from '../../../src/ops/requests/payments.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import type { SqliteStore } from '../../../src/store/sqlite.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { BACKENDS, backendUser, fundedUser, type BackendUser } from '../../helpers/ledger/backend-users.js';
import { ratesBody, startRateSource, type RateSource } from '../../helpers/network/rate-source.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { startCommand, type RunningCommand } from '../../helpers/processes/serve.js';
import { startWebhookReceiver, until, type WebhookReceiver } from '../../helpers/network/webhook-receiver.js';

/**
 * Prices in the shop's currency (issue 33, point 2), through the built CLI and checkout serve's API on both
 * backends of the sandbox, against a rate source this test runs on a loopback port (no network).
 */
let sb: RunningSandbox;
const sources: RateSource[] = [];

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  for (const source of sources) await source.close();
  await sb?.close();
  await shutdownWorkers();
});

async function rateSource(rates?: Record<string, string>): Promise<RateSource> {
  const source = await startRateSource(rates);
  sources.push(source);
  return source;
}

/** 19.99 EUR at 0.93 EUR per XNO: 21.494623655… XNO, rounded up to 0.000001 XNO. */
const EUR_19_99_AT_0_93 = 21_494_624n * 10n ** 24n;

interface Printed {
  url: string;
  token_file: string;
  webhook_secret_file: string;
}

describe.each(BACKENDS)('a price in the shop\'s currency on the %s backend', (backend) => {
  let merchant: BackendUser;
  let payer: BackendUser;
  let rates: RateSource;

  beforeAll(async () => {
    merchant = await backendUser(sb, backend);
    payer = await fundedUser(sb, backend, '10');
    rates = await rateSource();
    expect((await merchant.user.run(['config', 'set', 'rate-source', rates.url])).code).toBe(0);
  });

  it('request 19.99 --currency EUR: XNO computed once from the rate (exactly, rounded up), the offset on top; the price and rate kept and shown by status', async () => {
    const made = await merchant.user.json<{ transaction_id: string; amount: string; amount_raw: string; expires_at: string; fiat: Record<string, string> }>(['request', '19.99', '--currency', 'EUR', '--no-qr']);
    expect(made._code).toBe(0);
    // The quote holds for rate-quote-window (15 minutes unless set), and the request expires with it on either backend.
    expect(made.fiat).toEqual({
      currency: 'EUR',
      amount: '19.99',
      rate: '0.93',
      rate_source: rates.url,
      rate_time: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
      quote_expires_at: made.expires_at,
    });
    // The request's own matching offset (node) or the service's adjustment comes on top of the rounded amount.
    const extra = BigInt(made.amount_raw) - EUR_19_99_AT_0_93;
    expect(extra > 0n && extra < 10n ** 24n).toBe(true);
    expect(made.amount.startsWith('21.494624')).toBe(true);

    // Fixed for the life of the request: a new rate changes nothing of it.
    rates.answer = () => ({ status: 200, body: ratesBody({ EUR: '0.95' }) });
    const status = await merchant.user.json(['status', made.transaction_id]);
    expect(status).toMatchObject({ _code: 0, status: 'waiting', amount: made.amount, fiat: made.fiat });
    const text = await merchant.user.run(['status', made.transaction_id]);
    expect(text.stdout).toContain(`Price: 19.99 EUR (at 0.93 EUR per XNO, ${rates.url} at ${made.fiat.rate_time}), held until ${made.expires_at}`);
    const shown = await merchant.user.run(['request', '1', '--currency', 'eur', '--no-qr']);
    expect(shown.stdout).toContain('Price: 1 EUR (at 0.95 EUR per XNO');
  });

  it('the shop API takes {amount, currency}: the price is in the answer, the page, status and the events; paid, with the payer and the time', async () => {
    let secret = '';
    const receiver: WebhookReceiver = await startWebhookReceiver(() => secret);
    const server: RunningCommand<Printed> = await startCommand<Printed>(['checkout', 'serve', '--json', '--webhook', receiver.url, '--poll-interval', '1'], merchant.user.env);
    try {
      secret = readFileSync(server.printed.webhook_secret_file, 'utf8').trim();
      const token = readFileSync(server.printed.token_file, 'utf8').trim();
      const api = async (path: string, body?: unknown) => {
        const response = await fetch(`${server.printed.url}${path}`, {
          method: body === undefined ? 'GET' : 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        return { status: response.status, body: (await response.json()) as { data: Record<string, unknown> & { fiat: Record<string, string> }; error?: { error: string } } };
      };
      rates.answer = () => ({ status: 200, body: ratesBody({ EUR: '0.95', USD: '1.01' }) });
      const made = (await api('/api/v1/requests', { amount: '5', currency: 'usd', order_id: 'F-1' })).body.data;
      // 5 / 1.01 = 4.95049504…, rounded up.
      expect(made).toMatchObject({ status: 'waiting', currency: 'XNO', order_id: 'F-1', fiat: { currency: 'USD', amount: '5', rate: '1.01', rate_source: rates.url } });
      const extra = BigInt(made.amount_raw as string) - 4_950_496n * 10n ** 24n;
      expect(extra > 0n && extra < 10n ** 24n).toBe(true);
      // Its expiry is the quote's end (rate-quote-window, 15 minutes unless set), on either backend, not a day.
      expect(made.expires_at).toBe(made.fiat.quote_expires_at);
      const lasts = Date.parse(made.expires_at as string) - Date.parse(made.created_at as string);
      expect(lasts >= 900_000 && lasts < 86_400_000).toBe(true);
      expect((await api(`/api/v1/requests/${made.id as string}`)).body.data).toEqual(made);
      // An XNO request has no price.
      expect((await api('/api/v1/requests', { amount: '0.1' })).body.data.fiat).toBeNull();

      const html = await (await fetch(made.checkout_url as string)).text();
      expect(html).toContain('<span id="price" class="value">5 USD</span>');
      expect(html).toContain('at 1.01 USD per XNO');
      expect(await merchant.user.json(['status', made.id as string])).toMatchObject({ _code: 0, fiat: made.fiat });

      const paid = await payUri(payer.session, made.uri as string, {});
      await until(() => receiver.events.some((e) => e.data.object.id === made.id && e.type === 'request.paid'), 'request.paid');
      const event = receiver.events.find((e) => e.data.object.id === made.id) as unknown as { data: { object: Record<string, unknown> } };
      expect(event.data.object).toMatchObject({ status: 'paid', fiat: made.fiat, paid_by: [paid.hash], payers: [payer.address] });
      expect(Date.parse(event.data.object.paid_at as string)).toBeGreaterThanOrEqual(Date.parse(made.created_at as string));
      expect((await api(`/api/v1/requests/${made.id as string}`)).body.data).toMatchObject({ status: 'paid', fiat: made.fiat, payers: [payer.address] });
    } finally {
      await server.stop();
      await receiver.close();
    }
  });
});

describe('the rate source is never trusted blindly (node backend: nanopay keeps the requests, so none made is seen)', () => {
  let merchant: BackendUser;
  let rates: RateSource;

  beforeAll(async () => {
    merchant = await backendUser(sb, 'node');
    rates = await rateSource();
    expect((await merchant.user.run(['config', 'set', 'rate-source', rates.url])).code).toBe(0);
  });

  const storedRequests = async (): Promise<number> => {
    const store = (await merchant.session.dataStore()) as SqliteStore;
    return (store.db.prepare('SELECT COUNT(*) AS n FROM requests').get() as { n: number }).n;
  };

  const refused = async (args: string[], code: string, message: RegExp): Promise<void> => {
    const before = await storedRequests();
    const result = await merchant.user.json<{ error: { code: string; message: string } }>(args);
    expect(result).toMatchObject({ _code: 5, error: { code } });
    expect(result.error.message).toMatch(message);
    expect(result.error.message).toContain('no request was made');
    expect(await storedRequests()).toBe(before);
  };

  it('a stale rate is refused (RATE_STALE), by the source\'s own time; within rate-max-age it is taken', async () => {
    rates.answer = () => ({ status: 200, body: ratesBody({ EUR: '0.93' }, new Date(Date.now() - 11 * 60_000).toISOString()) });
    await refused(['request', '10', '--currency', 'EUR'], 'RATE_STALE', /older than rate-max-age \(10m\)/);
    expect((await merchant.user.run(['config', 'set', 'rate-max-age', '1h'])).code).toBe(0);
    expect(await merchant.user.json(['request', '10', '--currency', 'EUR'])).toMatchObject({ _code: 0, fiat: { rate: '0.93' } });
    expect((await merchant.user.run(['config', 'set', 'rate-max-age', '--unset'])).code).toBe(0);
  });

  it('a rate that moved more than rate-max-move from the last accepted is refused (RATE_MOVED), in a later process too; a larger bound lets it through', async () => {
    rates.answer = () => ({ status: 200, body: ratesBody({ EUR: '0.93' }) });
    expect(await merchant.user.json(['request', '1', '--currency', 'EUR'])).toMatchObject({ _code: 0, fiat: { rate: '0.93' } });
    // 0.93 → 1.03 is 10.75 %: over the default 10 %. Each command is a new process: the last accepted rate is the store's.
    rates.answer = () => ({ status: 200, body: ratesBody({ EUR: '1.03' }) });
    await refused(['request', '1', '--currency', 'EUR'], 'RATE_MOVED', /is 1\.03, more than rate-max-move \(10%\) away from the last accepted, 0\.93/);
    rates.answer = () => ({ status: 200, body: ratesBody({ EUR: '1.02' }) });
    expect(await merchant.user.json(['request', '1', '--currency', 'EUR'])).toMatchObject({ _code: 0, fiat: { rate: '1.02' } });
    // Now the last accepted is 1.02: 0.9 is 11.8 % below it.
    rates.answer = () => ({ status: 200, body: ratesBody({ EUR: '0.9' }) });
    await refused(['request', '1', '--currency', 'EUR'], 'RATE_MOVED', /is 0\.9, more than/);
    expect((await merchant.user.run(['config', 'set', 'rate-max-move', '12.5'])).code).toBe(0);
    expect(await merchant.user.json(['request', '1', '--currency', 'EUR'])).toMatchObject({ _code: 0, fiat: { rate: '0.9' } });
    expect((await merchant.user.run(['config', 'set', 'rate-max-move', 'lots'])).code).toBe(3);
  });

  it('no answer, not JSON, no such currency, not a rate, a time in the future, no source: RATE_UNAVAILABLE, nothing made', async () => {
    const now = new Date().toISOString();
    rates.answer = () => ({ status: 503, body: '{}' });
    await refused(['request', '1', '--currency', 'EUR'], 'RATE_UNAVAILABLE', /answered HTTP 503/);
    rates.answer = () => ({ status: 200, body: '<html>rates</html>' });
    await refused(['request', '1', '--currency', 'EUR'], 'RATE_UNAVAILABLE', /did not answer JSON/);
    rates.answer = () => ({ status: 200, body: ratesBody({ EUR: '0.93' }, now) });
    await refused(['request', '1', '--currency', 'JPY'], 'RATE_UNAVAILABLE', /The JPY rate .* is not given/);
    for (const bad of ['0', '-0.93', '0,93', '1e400', '0.1234567890123456789012345678901']) {
      rates.answer = () => ({ status: 200, body: `{"XNO": {"EUR": ${JSON.stringify(bad)}}, "time": "${new Date().toISOString()}"}` });
      await refused(['request', '1', '--currency', 'EUR'], 'RATE_UNAVAILABLE', /not a positive decimal/);
    }
    rates.answer = () => ({ status: 200, body: ratesBody({ EUR: '0.93' }, new Date(Date.now() + 3_600_000).toISOString()) });
    await refused(['request', '1', '--currency', 'EUR'], 'RATE_UNAVAILABLE', /in the future/);
    const unreachable = await merchant.user.json<{ error: { code: string; message: string } }>(['request', '1', '--currency', 'EUR'], { env: { NANOPAY_RATE_SOURCE: 'http://127.0.0.1:9/rates' } });
    expect(unreachable).toMatchObject({ _code: 5, error: { code: 'RATE_UNAVAILABLE', message: expect.stringContaining('no request was made') } });
    const unset = await (await backendUser(sb, 'node')).user.json<{ error: { code: string; message: string } }>(['request', '1', '--currency', 'EUR']);
    expect(unset).toMatchObject({ _code: 5, error: { code: 'RATE_UNAVAILABLE', message: expect.stringContaining('No rate source is set') } });
    // Bad input is the caller's (exit 3), and asks nobody.
    const hits = rates.hits;
    expect((await merchant.user.run(['request', '19,99', '--currency', 'EUR'])).code).toBe(3);
    expect((await merchant.user.run(['request', '1', '--currency', 'EURO'])).code).toBe(3);
    expect(rates.hits).toBe(hits);
  });

  it("CoinGecko's simple price is read as is: JSON numbers exactly as written (never through a float), dated by last_updated_at", async () => {
    const seconds = Math.floor(Date.now() / 1000);
    // As a float, 0.9123456789012345678 would be 0.9123456789012346.
    rates.answer = () => ({ status: 200, body: `{"nano":{"eur":0.9123456789012345678,"usd":9.5e-1,"last_updated_at":${seconds}}}` });
    expect((await merchant.user.run(['config', 'set', 'rate-max-move', '50'])).code).toBe(0);
    const eur = await merchant.user.json<{ fiat: Record<string, string> }>(['request', '1', '--currency', 'EUR']);
    expect(eur.fiat).toMatchObject({ rate: '0.9123456789012345678', rate_time: new Date(seconds * 1000).toISOString() });
    expect(await merchant.user.json(['request', '1', '--currency', 'USD'])).toMatchObject({ fiat: { rate: '0.95' } });
    rates.answer = () => ({ status: 200, body: `{"nano":{"eur":0.93,"last_updated_at":${seconds - 3600}}}` });
    await refused(['request', '1', '--currency', 'EUR'], 'RATE_STALE', /older than rate-max-age/);
  });

  it('checkout serve asks the source once per rate-cache, and refuses with the code when the rate is refused: 502, nothing made', async () => {
    const shop = await backendUser(sb, 'node');
    const source = await rateSource();
    for (const [name, value] of [['rate-source', source.url], ['rate-cache', '1h']] as const) expect((await shop.user.run(['config', 'set', name, value])).code).toBe(0);
    const server = await startCommand<Printed>(['checkout', 'serve', '--json'], shop.user.env);
    try {
      const token = readFileSync(server.printed.token_file, 'utf8').trim();
      const create = async (amount: string) => {
        const response = await fetch(`${server.printed.url}/api/v1/requests`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ amount, currency: 'EUR' }),
        });
        return { status: response.status, body: (await response.json()) as { data: { fiat: { rate: string } } | null; error: { error: string } | null } };
      };
      const made = await Promise.all(['1', '2', '3'].map(create));
      made.push(await create('4'));
      expect(made.map((m) => m.body.data?.fiat.rate)).toEqual(['0.93', '0.93', '0.93', '0.93']);
      // Four requests, three of them at once: one question to the source.
      expect(source.hits).toBe(1);
      // The settings are read at each request: a shorter cache applies at once, and the source is asked again after it.
      expect((await shop.user.run(['config', 'set', 'rate-cache', '1s'])).code).toBe(0);
      await sleep(1100);
      source.answer = () => ({ status: 200, body: ratesBody({ EUR: '0.93' }, new Date(Date.now() - 3_600_000).toISOString()) });
      const stale = await create('4');
      expect(stale).toMatchObject({ status: 502, body: { error: { error: 'RATE_STALE' } } });
      expect(source.hits).toBe(2);
      const listed = await fetch(`${server.printed.url}/api/v1/requests?limit=100`, { headers: { authorization: `Bearer ${token}` } });
      expect(((await listed.json()) as { data: { data: unknown[] } }).data.data).toHaveLength(4);
    } finally {
      await server.stop();
    }
  });
});
