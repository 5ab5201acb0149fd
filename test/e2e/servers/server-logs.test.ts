import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { backendUser, userSession, type BackendUser } from '../../helpers/ledger/backend-users.js';
import { userWithWallet, type CliUser } from '../../helpers/processes/cli.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { startCommand, type RunningCommand } from '../../helpers/processes/serve.js';
import { tempDir } from '../../helpers/processes/temp.js';

/**
 * --log-format json on every server of the built CLI: one JSON object a line on stderr (time, level, event, and for
 * each request its id, method, path without the query, status and duration), never a secret it holds or was sent.
 */
let sb: RunningSandbox;
let shop: BackendUser;
let wallet: CliUser;
let apiKey: string;
let dir: string;
const TOKEN = 'log-test-token-0123456789abcdefghijklmnopqrstuvwxyz';
/** What a client may put in a query string or a path, which no log may show. */
const QUERY_SECRET = 'sk_query_secret_5b1e9d';
const PATH_KEY = 'pathkey_secret_77c2a0';

beforeAll(async () => {
  sb = await sandbox();
  shop = await backendUser(sb, 'service');
  apiKey = (await shop.session.apiKey()) as string;
  ({ user: wallet } = await userWithWallet(sb.url, '1'));
  dir = await tempDir('nanopay-logs-');
  await writeFile(join(dir, 'token'), `${TOKEN}\n`, { mode: 0o600 });
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

interface Line {
  time: string;
  level: string;
  event: string;
  message: string;
  request_id?: string;
  method?: string;
  path?: string;
  status?: number;
  duration_ms?: number;
}

/** Every line of stderr, each one JSON object with the fields every line has. */
function jsonLines(stderr: string): Line[] {
  return stderr
    .split('\n')
    .filter((text) => text !== '')
    .map((text) => {
      const line = JSON.parse(text) as Line;
      expect(line).toMatchObject({ time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/), level: expect.stringMatching(/^(info|warn|error)$/), event: expect.stringMatching(/^[a-z_]+$/), message: expect.any(String) });
      return line;
    });
}

/** Stops the server with SIGTERM (exit 0) and returns its log, checked: JSON lines, the drain logged, no secret. */
async function stopAndRead(server: RunningCommand<unknown>, secrets: string[]): Promise<Line[]> {
  await server.stop();
  expect(server.child.exitCode).toBe(0);
  const stderr = server.stderr();
  for (const secret of [...secrets, QUERY_SECRET, PATH_KEY]) expect(stderr).not.toContain(secret);
  const lines = jsonLines(stderr);
  expect(lines.map((l) => l.event)).toEqual(expect.arrayContaining(['draining', 'stopped']));
  return lines;
}

/** GET with a request id of the client's and a secret in the query. */
async function call(url: string, init: RequestInit = {}): Promise<Response> {
  const response = await fetch(`${url}?token=${QUERY_SECRET}`, { ...init, headers: { 'x-request-id': 'client-req-1', ...(init.headers as Record<string, string>) } });
  expect(response.headers.get('x-request-id')).toBe('client-req-1');
  await response.arrayBuffer();
  return response;
}

function expectRequest(lines: Line[], path: string, status: number): void {
  expect(lines).toContainEqual(expect.objectContaining({ event: 'request', level: 'info', request_id: 'client-req-1', method: expect.any(String), path, status, duration_ms: expect.any(Number) }));
}

describe('--log-format json', () => {
  it('checkout serve: its token, webhook secret and the profile API key never show', async () => {
    const server = await startCommand<{ url: string; token_file: string; webhook_secret_file: string }>(
      ['checkout', 'serve', '--json', '--log-format', 'json', '--token-file', join(dir, 'token'), '--webhook', 'http://127.0.0.1:9/hooks'],
      shop.user.env,
    );
    const secret = readFileSync(server.printed.webhook_secret_file, 'utf8').trim();
    const created = await fetch(`${server.printed.url}/api/v1/requests`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', 'x-request-id': 'client-req-1' },
      body: JSON.stringify({ amount: '0.1' }),
    });
    const { id } = ((await created.json()) as { data: { id: string } }).data;
    await call(`${server.printed.url}/checkout/${id}`);
    await call(`${server.printed.url}/api/v1/requests`, { headers: { authorization: `Bearer ${PATH_KEY}` } });
    const lines = await stopAndRead(server, [TOKEN, secret, apiKey]);
    expectRequest(lines, `/checkout/${id}`, 200);
    expectRequest(lines, '/api/v1/requests', 401);
  });

  it('paywall and facilitator', async () => {
    const seen: unknown[] = [];
    const upstream = createServer((req, res) => {
      seen.push(req.headers['x-request-id']);
      res.setHeader('x-request-id', 'the-upstream-own-id');
      res.end('ok');
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const env = { ...shop.user.env, NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: sb.url };
    const paywall = await startCommand<{ url: string }>(
      ['paywall', '--json', '--log-format', 'json', '--upstream', `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, '--price', '0', '--to', shop.address],
      env,
    );
    const facilitator = await startCommand<{ url: string }>(['facilitator', '--json', '--log-format', 'json'], env);
    try {
      // The paywall's request id reaches the upstream, and is the only one its answer carries.
      await call(`${paywall.printed.url}/free`);
      expect(seen).toEqual(['client-req-1']);
      await call(`${facilitator.printed.url}/supported`);
      expectRequest(await stopAndRead(paywall, [apiKey]), '/free', 200);
    } finally {
      await paywall.stop();
      upstream.closeAllConnections();
      await new Promise((resolve) => upstream.close(resolve));
    }
    expectRequest(await stopAndRead(facilitator, [apiKey]), '/supported', 200);
  });

  it('agent and serve: their token never shows', async () => {
    const agent = await startCommand<{ url: string }>(['agent', '--json', '--port', '0', '--log-format', 'json', '--token-file', join(dir, 'token')], wallet.env);
    const serve = await startCommand<{ url: string }>(['serve', '--json', '--port', '0', '--log-format', 'json', '--token-file', join(dir, 'token')], wallet.env);
    const auth = { headers: { authorization: `Bearer ${TOKEN}` } };
    await call(`${agent.printed.url}/wallet/balance`, auth);
    await call(`${serve.printed.url}/wallet/balance`, auth);
    const key = (await userSession(wallet).apiKey()) as string;
    expectRequest(await stopAndRead(agent, [TOKEN, key]), '/wallet/balance', 200);
    expectRequest(await stopAndRead(serve, [TOKEN, key]), '/wallet/balance', 200);
  });

  it('sandbox: an API key in the path of /payment/create is masked, whatever the method', async () => {
    const data = await tempDir('nanopay-logs-sandbox-');
    const running = await startCommand<{ url: string }>(['sandbox', '--json', '--port', '0', '--data-dir', data, '--log-format', 'json'], { PATH: process.env.PATH, HOME: data, NO_COLOR: '1' });
    await call(`${running.printed.url}/payment/create/${shop.address}/${PATH_KEY}`);
    await call(`${running.printed.url}/payment/create/${shop.address}/${PATH_KEY}`, { method: 'POST' });
    await call(`${running.printed.url}/credits/info`, { headers: { authorization: `Bearer ${apiKey}` } });
    const lines = await stopAndRead(running, [apiKey]);
    // Keys this sandbox does not know (401): what matters is that none is logged.
    expectRequest(lines, `/payment/create/${shop.address}/***`, 401);
    expectRequest(lines, `/payment/create/${shop.address}/***`, 405);
    expectRequest(lines, '/credits/info', 401);
  });

  it('listen and checkout: the webhook secret never shows on stderr', async () => {
    const listen = await startCommand<{ webhook_secret: string }>(['listen', '--json', '--show-secret', '--log-format', 'json', '--forward-to', 'http://127.0.0.1:9/hooks'], shop.user.env);
    const page = await startCommand<{ url: string }>(['checkout', '--json', '--amount', '0.1', '--log-format', 'json'], shop.user.env);
    await call(page.printed.url);
    await stopAndRead(listen, [listen.printed.webhook_secret, apiKey]);
    const lines = await stopAndRead(page, [apiKey]);
    expectRequest(lines, new URL(page.printed.url).pathname, 200);
  });
});
