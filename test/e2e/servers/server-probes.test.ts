import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { payUri } from '../../../src/ops/requests/payments.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { startAgentProcess } from '../../helpers/network/agent.js';
import { backendUser, fundedUser, userSession } from '../../helpers/ledger/backend-users.js';
import { newUser, runCli, userWithWallet } from '../../helpers/processes/cli.js';
import { createWallet } from '../../../src/ops/profile/wallet.js';
import { nodeMerchantAndCustomer } from '../../helpers/ledger/node-users.js';
import { parsePrometheus, sampleValue, type PromFamily } from '../../helpers/network/prometheus.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { startCommand, startServe, type RunningCommand } from '../../helpers/processes/serve.js';
import { tempDir } from '../../helpers/processes/temp.js';
import { startWebhookReceiver, until } from '../../helpers/network/webhook-receiver.js';

/**
 * What an operator asks of each server run by the built CLI: GET /healthz (the process answers), GET /readyz (its
 * store and backend answer; 503 with the reason otherwise), GET /metrics in the Prometheus text format, read back
 * by a strict parser (test/helpers/network/prometheus.ts), behind the token or on --metrics-listen.
 */
let sb: RunningSandbox;
/** Every request the sandbox (the backend) answered. */
const backendLog: string[] = [];

beforeAll(async () => {
  sb = await sandbox({ log: (line) => backendLog.push(line) });
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

interface Envelope {
  success: boolean;
  data: Record<string, unknown> | null;
  error: { error: string; message: string } | null;
}

async function get(url: string, token?: string): Promise<{ status: number; body: Envelope }> {
  const response = await fetch(url, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
  return { status: response.status, body: (await response.json()) as Envelope };
}

async function scrape(url: string, token?: string): Promise<Map<string, PromFamily>> {
  const response = await fetch(`${url}/metrics`, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  return parsePrometheus(await response.text());
}

/** Both probes answer 200 in the server's envelope (the toolset's may add its sandbox mark). */
async function expectHealthy(url: string, checks: Record<string, string>): Promise<void> {
  expect(await get(`${url}/healthz`)).toMatchObject({ status: 200, body: { success: true, data: { status: 'ok' }, error: null } });
  expect(await get(`${url}/readyz`)).toMatchObject({ status: 200, body: { success: true, data: { status: 'ready', checks }, error: null } });
}

interface ShopPrinted {
  url: string;
  token_file: string;
  webhook_secret_file: string;
}

describe('checkout serve', () => {
  it('answers /healthz and /readyz without the token, /metrics only with it; a flood of /readyz asks the service once in a while, at no credit', async () => {
    const shop = await backendUser(sb, 'service');
    const server = await startCommand<ShopPrinted>(['checkout', 'serve', '--json'], shop.user.env);
    try {
      const token = readFileSync(server.printed.token_file, 'utf8').trim();
      await expectHealthy(server.printed.url, { store: 'ok', backend: 'ok', wallet: 'ok' });
      expect((await fetch(`${server.printed.url}/metrics`)).status).toBe(401);
      expect((await fetch(`${server.printed.url}/metrics`, { headers: { authorization: 'Bearer not-the-token-at-all' } })).status).toBe(401);
      const asks = (): number => backendLog.filter((line) => line.startsWith('GET /credits/info ')).length;
      const before = asks();
      const answers = await Promise.all(Array.from({ length: 30 }, () => get(`${server.printed.url}/readyz`)));
      expect(answers.every((a) => a.status === 200)).toBe(true);
      expect(asks() - before).toBeLessThan(30);
      const families = await scrape(server.printed.url, token);
      expect(sampleValue(families, 'nanopay_http_requests_total', { method: 'GET', route: '/readyz', status: '200' })).toBeGreaterThanOrEqual(31);
      expect(sampleValue(families, 'nanopay_http_requests_total', { route: '/metrics', status: '401' })).toBe(2);
    } finally {
      await server.stop();
    }
  });

  it('counts requests by status, payments, webhook deliveries, failures, backlog and its age, live pages, store latency', async () => {
    const shop = await backendUser(sb, 'service');
    const payer = await fundedUser(sb, 'service', '2');
    let secret = '';
    const receiver = await startWebhookReceiver(() => secret);
    const server = await startCommand<ShopPrinted>(['checkout', 'serve', '--json', '--webhook', receiver.url, '--poll-interval', '1', '--webhook-backoff-ms', '50'], shop.user.env);
    try {
      const token = readFileSync(server.printed.token_file, 'utf8').trim();
      secret = readFileSync(server.printed.webhook_secret_file, 'utf8').trim().split('\n')[0] as string;
      const metrics = (): Promise<Map<string, PromFamily>> => scrape(server.printed.url, token);
      const value = async (name: string, labels: Record<string, string> = {}): Promise<number | undefined> => sampleValue(await metrics(), name, labels);
      const create = async (amount: string): Promise<{ id: string; uri: string }> => {
        const response = await fetch(`${server.printed.url}/api/v1/requests`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ amount }),
        });
        return ((await response.json()) as { data: { id: string; uri: string } }).data;
      };
      const start = await metrics();
      expect(sampleValue(start, 'nanopay_payments_total', { status: 'paid' })).toBe(0);
      expect(sampleValue(start, 'nanopay_webhook_deliveries_total', { result: 'delivered' })).toBe(0);
      expect(sampleValue(start, 'nanopay_webhook_backlog')).toBe(0);
      expect(sampleValue(start, 'nanopay_webhook_oldest_pending_seconds')).toBe(0);
      expect(sampleValue(start, 'nanopay_sse_viewers')).toBe(0);

      // A page watched live.
      const watched = await create('0.31');
      const stream = (await fetch(`${server.printed.url}/checkout/${watched.id}/events`)).body?.getReader();
      await stream?.read();
      expect(await value('nanopay_sse_viewers')).toBe(1);

      // A payment, its event delivered.
      const paid = await create('0.3');
      await payUri(payer.session, paid.uri, {});
      await until(async () => (await value('nanopay_webhook_deliveries_total', { result: 'delivered' })) === 1, 'the delivery counted');
      // The store's count follows the attempt's (and a scrape may reuse a read of the last second).
      await until(async () => (await value('nanopay_webhook_backlog')) === 0, 'the backlog empty');
      const after = await metrics();
      expect(sampleValue(after, 'nanopay_shop_requests_created_total')).toBe(2);
      expect(sampleValue(after, 'nanopay_payments_total', { status: 'paid' })).toBe(1);
      expect(sampleValue(after, 'nanopay_webhook_oldest_pending_seconds')).toBe(0);
      expect(sampleValue(after, 'nanopay_http_requests_total', { method: 'POST', route: '/api/v1/requests', status: '200' })).toBe(2);
      expect(sampleValue(after, 'nanopay_store_operation_seconds_count', { op: 'shop.create' })).toBe(2);
      expect(sampleValue(after, 'nanopay_store_operation_seconds_bucket', { op: 'shop.create', le: '+Inf' })).toBe(2);

      // The endpoint down: failures are counted, the event waits in the store, and its wait shows.
      receiver.down = true;
      const waiting = await create('0.29');
      await payUri(payer.session, waiting.uri, {});
      await until(async () => ((await value('nanopay_webhook_deliveries_total', { result: 'failed' })) ?? 0) >= 1, 'a failed delivery counted');
      await until(async () => (await value('nanopay_webhook_backlog')) === 1, 'the event waiting');
      expect(await value('nanopay_webhook_oldest_pending_seconds')).toBeGreaterThan(0);
      receiver.down = false;
      await until(async () => (await value('nanopay_webhook_backlog')) === 0, 'the backlog delivered');
      expect(await value('nanopay_webhook_oldest_pending_seconds')).toBe(0);
      await stream?.cancel();
    } finally {
      await server.stop();
      await receiver.close();
    }
  });

  it('a shop without a wallet is not ready (every order would fail), and is once the wallet is made', async () => {
    const user = await newUser(sb.url, { NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: sb.url });
    const server = await startCommand<ShopPrinted>(['checkout', 'serve', '--json'], user.env);
    try {
      const { status, body } = await get(`${server.printed.url}/readyz`);
      expect([status, body.error?.error, body.error?.message]).toEqual([503, 'NOT_READY', expect.stringMatching(/wallet: NOT_FOUND: No active wallet/)]);
      await createWallet(userSession(user));
      await until(async () => (await get(`${server.printed.url}/readyz`)).status === 200, 'ready once the wallet is made');
    } finally {
      await server.stop();
    }
  });

  it('is not ready once its backend is gone, with the reason (a refused connection, not a timeout) and no address of it; the retries are lines of its JSON log', async () => {
    const other = await sandbox();
    const port = new URL(other.url).port;
    const shop = await backendUser(other, 'service');
    const server = await startCommand<ShopPrinted>(['checkout', 'serve', '--json', '--log-format', 'json', '--poll-interval', '1'], shop.user.env);
    try {
      await expectHealthy(server.printed.url, { store: 'ok', backend: 'ok', wallet: 'ok' });
      // An open order, whose status the server keeps reading (and retrying) once the backend is gone.
      const token = readFileSync(server.printed.token_file, 'utf8').trim();
      const order = await fetch(`${server.printed.url}/api/v1/requests`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ amount: '0.1' }) });
      expect(order.status).toBe(200);
      await other.close();
      await until(async () => (await get(`${server.printed.url}/readyz`)).status === 503, 'not ready');
      const { body } = await get(`${server.printed.url}/readyz`);
      expect(body.error?.error).toBe('NOT_READY');
      expect(body.error?.message).toMatch(/^Not ready: backend: /);
      // A probe asks once: a refused connection is said as such at once, not after the probe's 2 s bound.
      expect(body.error?.message).toMatch(/refused/i);
      expect(body.error?.message).not.toMatch(/no answer within/);
      expect(body.error?.message).not.toContain(port);
      expect((await get(`${server.printed.url}/healthz`)).status).toBe(200);
      await until(async () => server.stderr().includes('"backend_retry"'), 'a retry of the order\'s status logged');
    } finally {
      await server.stop();
    }
    const lines = server
      .stderr()
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as { event: string; level: string });
    expect(lines).toContainEqual(expect.objectContaining({ event: 'backend_retry', level: 'warn' }));
  });
});

describe('paywall and facilitator', () => {
  it('the paywall answers /healthz and /readyz itself, forwards /metrics like any path, and serves its metrics on --metrics-listen', async () => {
    const calls: string[] = [];
    const upstream = createServer((req, res) => {
      calls.push(req.url ?? '');
      res.end(`report for ${req.url}`);
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const { merchant, customer, merchantAddress } = await nodeMerchantAndCustomer(sb, {});
    const paywall = await startCommand<{ url: string; metrics_url: string }>(
      ['paywall', '--json', '--upstream', `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, '--price', '0.001', '--to', merchantAddress, '--metrics-listen', '127.0.0.1:0'],
      merchant.env,
    );
    try {
      await expectHealthy(paywall.printed.url, { store: 'ok', backend: 'ok' });
      expect(calls).toEqual([]);
      // Its own /metrics is not on the public port: there it is one more priced path of the upstream's.
      expect((await fetch(`${paywall.printed.url}/metrics`)).status).toBe(402);
      expect(sampleValue(await scrape(paywall.printed.metrics_url), 'nanopay_payments_total', { result: 'settled' })).toBe(0);
      const paid = await customer.run(['fetch', `${paywall.printed.url}/report`, '--yes', '--max', '0.01']);
      expect(paid.code).toBe(0);
      const families = await scrape(paywall.printed.metrics_url);
      expect(sampleValue(families, 'nanopay_payments_total', { result: 'settled' })).toBe(1);
      expect(sampleValue(families, 'nanopay_http_requests_total', { method: 'GET', route: '(fallback)', status: '402' })).toBeGreaterThanOrEqual(2);
      expect(sampleValue(families, 'nanopay_http_requests_total', { method: 'GET', route: '(fallback)', status: '200' })).toBe(1);
      await expectHealthy(paywall.printed.metrics_url, { store: 'ok', backend: 'ok' });
    } finally {
      await paywall.stop();
      upstream.closeAllConnections();
      await new Promise((resolve) => upstream.close(resolve));
    }
  });

  it('the facilitator answers /healthz and /readyz, and its metrics only on --metrics-listen', async () => {
    const { merchant } = await nodeMerchantAndCustomer(sb, {});
    const facilitator = await startCommand<{ url: string; metrics_url: string }>(['facilitator', '--json', '--metrics-listen', '127.0.0.1:0'], merchant.env);
    try {
      await expectHealthy(facilitator.printed.url, { store: 'ok', backend: 'ok' });
      expect((await get(`${facilitator.printed.url}/metrics`)).status).toBe(404);
      const refused = await fetch(`${facilitator.printed.url}/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({}) });
      expect(await refused.json()).toMatchObject({ isValid: false });
      const families = await scrape(facilitator.printed.metrics_url);
      expect(sampleValue(families, 'nanopay_x402_verifications_total', { result: 'valid' })).toBe(0);
      expect(sampleValue(families, 'nanopay_x402_verifications_total', { result: 'invalid' })).toBe(1);
      expect(sampleValue(families, 'nanopay_payments_total', { result: 'settled' })).toBe(0);
      expect(sampleValue(families, 'nanopay_http_requests_total', { method: 'POST', route: '/verify', status: '200' })).toBe(1);
    } finally {
      await facilitator.stop();
    }
  });
});

/** A bearer token in a private file, as --token-file takes it. */
async function tokenFile(token: string): Promise<string> {
  const file = join(await tempDir('nanopay-probes-token-'), 'token');
  await writeFile(file, `${token}\n`, { mode: 0o600 });
  return file;
}

describe('agent, serve and sandbox', () => {
  it('the agent answers /healthz and /readyz without its token, /metrics only with it', async () => {
    const { user } = await userWithWallet(sb.url, '1');
    const token = 'agent-token-0123456789abcdefghijklmnopqrstuv';
    const agent = await startAgentProcess(user.env, ['--token-file', await tokenFile(token)]);
    try {
      await expectHealthy(agent.url, { wallet: 'ok', backend: 'ok' });
      expect((await get(`${agent.url}/status`)).status).toBe(401);
      expect((await get(`${agent.url}/metrics`)).status).toBe(401);
      expect((await get(`${agent.url}/wallet/balance`, token)).status).toBe(200);
      const families = await scrape(agent.url, token);
      expect(sampleValue(families, 'nanopay_tool_calls_total', { tool: 'wallet.balance', result: 'ok' })).toBe(1);
      expect(sampleValue(families, 'nanopay_http_requests_total', { route: '/status', status: '401' })).toBe(1);
    } finally {
      await agent.stop();
    }
  });

  it('serve answers /healthz and /readyz without its token, /metrics only with it', async () => {
    const { user } = await userWithWallet(sb.url, '1');
    const token = 'serve-token-0123456789abcdefghijklmnopqrstuv';
    const serve = await startServe(user, ['--token-file', await tokenFile(token)]);
    try {
      await expectHealthy(serve.url, { wallet: 'ok', backend: 'ok' });
      expect((await get(`${serve.url}/metrics`)).status).toBe(401);
      expect((await get(`${serve.url}/credits`, token)).status).toBe(200);
      expect(sampleValue(await scrape(serve.url, token), 'nanopay_tool_calls_total', { tool: 'credits.get', result: 'ok' })).toBe(1);
    } finally {
      await serve.stop();
    }
  });

  it('a start that fails leaves nothing listening: the command ends with its error', async () => {
    const dir = await tempDir('nanopay-probes-start-');
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const port = String((busy.address() as AddressInfo).port);
    const env = { PATH: process.env.PATH, HOME: dir, NO_COLOR: '1' };
    try {
      // The probes listen first; the main port is taken: the probes' server is closed again, and the command ends.
      const taken = await runCli(['sandbox', '--port', port, '--data-dir', dir, '--metrics-listen', '127.0.0.1:0'], env);
      expect([taken.code, taken.stderr]).toEqual([10, expect.stringContaining(`127.0.0.1:${port} is already in use`)]);
      const probesTaken = await runCli(['sandbox', '--port', '0', '--data-dir', dir, '--metrics-listen', `127.0.0.1:${port}`], env);
      expect(probesTaken.code).toBe(10);
      const outOfRange = await runCli(['sandbox', '--port', '0', '--data-dir', dir, '--metrics-listen', '127.0.0.1:99999'], env);
      expect([outOfRange.code, outOfRange.stderr]).toEqual([2, expect.stringContaining('--metrics-listen must be host:port (a port up to 65535)')]);
    } finally {
      await new Promise((resolve) => busy.close(resolve));
    }
  });

  it('the sandbox answers /healthz and /readyz, and its metrics on --metrics-listen', async () => {
    const dir = await tempDir('nanopay-sandbox-probes-');
    const running: RunningCommand<{ url: string; metrics_url: string }> = await startCommand(
      ['sandbox', '--port', '0', '--data-dir', dir, '--quiet', '--json', '--metrics-listen', '127.0.0.1:0'],
      { PATH: process.env.PATH, HOME: dir, NO_COLOR: '1' },
    );
    try {
      await expectHealthy(running.printed.url, { store: 'ok' });
      expect((await get(`${running.printed.url}/metrics`)).status).toBe(404);
      expect(sampleValue(await scrape(running.printed.metrics_url), 'nanopay_http_requests_total', { route: '/readyz', status: '200' })).toBe(1);
    } finally {
      await running.stop();
    }
  });
});
