import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { xnoToRaw } from '../../../src/nano/index.js';
import { exportWallet } from '../../../src/ops/profile/wallet.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { AgentClient, AgentError } from '../../../src/sdk/agent-client.js';
import { userSession } from '../../helpers/ledger/backend-users.js';
import { userWithWallet, type CliUser } from '../../helpers/processes/cli.js';
import { fund, ledger, sandbox } from '../../helpers/ledger/sandbox.js';
import { expectEnvelopeError as expectRawEnvelopeError, httpCall, sendHostileRequests } from '../../helpers/network/raw-http.js';
import { startServe, type ServeProcess } from '../../helpers/processes/serve.js';

let sb: RunningSandbox;
let user: CliUser;
let address: string;
let serve: ServeProcess;
/** A second `nanopay serve`, configured by its environment: a token, and proof of work from an unreachable work server. */
let configured: ServeProcess;
const token = 'a-long-enough-test-token';
const other = 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj';

interface Reply {
  status: number;
  body: { success: boolean; data: Record<string, any> | null; error: { error: string; message: string } | null };
}

/** A raw HTTP request, so tests control every header (Host, Origin, Content-Type). */
function call(method: string, path: string, options: { body?: string; headers?: Record<string, string>; base?: string } = {}): Promise<Reply> {
  const url = new URL(path, options.base ?? serve.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers: { ...(options.body === undefined ? {} : { 'content-type': 'application/json' }), ...options.headers } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Reply['body'] });
        } catch {
          reject(new Error(`not JSON (HTTP ${res.statusCode}): ${text.slice(0, 200)}`));
        }
      });
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

const post = (path: string, body: unknown, headers: Record<string, string> = {}) => call('POST', path, { body: JSON.stringify(body), headers });

function expectEnvelopeError(reply: Reply, status: number, code: string): void {
  expect(reply.status).toBe(status);
  expect(reply.body).toMatchObject({ success: false, data: null, error: { error: code } });
  expect(typeof reply.body.error?.message).toBe('string');
}

beforeAll(async () => {
  sb = await sandbox();
  // The wallet is made in-process (wallet create has its own tests); serve is the child process under test.
  ({ user, address } = await userWithWallet(sb.url));
  await fund(sb.url, address, '10');
  [serve, configured] = await Promise.all([
    // The sandbox is on this machine: a paid fetch reaches it only because it is allowed by name.
    startServe(user, [], { NANOPAY_FETCH_ALLOW_HOSTS: new URL(sb.url).host }),
    startServe(user, [], { NANOPAY_TOOLSET_TOKEN: token, NANO_WORK_MODE: 'remote', NANO_WORK_SERVER_URL: 'http://127.0.0.1:9', NANO_WORK_TIMEOUT_MS: '500' }),
  ]);
});

afterAll(async () => {
  await Promise.all([serve?.stop(), configured?.stop()]);
  await sb?.close();
});

describe('the seven routes', () => {
  it('GET /wallet/balance (auto receive)', async () => {
    const before = await call('GET', '/wallet/balance');
    expect(before.status).toBe(200);
    expect(before.body).toMatchObject({ success: true, error: null, data: { account: address, balance: '0', pending: '10', pending_raw: xnoToRaw('10').toString() } });
    const received = await call('GET', '/wallet/balance?auto_receive_pending_blocks=true');
    expect(received.body.data).toMatchObject({ balance: '10', balance_raw: xnoToRaw('10').toString(), pending: '0' });
    for (const key of ['account', 'balance', 'balance_raw', 'pending', 'pending_raw']) expect(typeof received.body.data?.[key]).toBe('string');
  });

  it('POST /wallet/send', async () => {
    const sent = await post('/wallet/send', { recipient_address: other, amount: '0.5' });
    expect(sent.status).toBe(200);
    expect(sent.body.data).toMatchObject({ amount: '0.5', recipient: other });
    expect(sent.body.data?.hash).toMatch(/^[0-9A-F]{64}$/);
    expectEnvelopeError(await post('/wallet/send', { recipient_address: 'nano_bad', amount: '1' }), 400, 'INVALID_ADDRESS');
    expectEnvelopeError(await post('/wallet/send', { recipient_address: other, amount: '1e3' }), 400, 'INVALID_NUMBER_FORMAT');
    expectEnvelopeError(await post('/wallet/send', { recipient_address: other, amount: '-1' }), 400, 'INVALID_NEGATIVE_AMOUNT');
    expectEnvelopeError(await post('/wallet/send', { recipient_address: other, amount: `0.${'1'.repeat(31)}` }), 400, 'TOO_MANY_DECIMAL_PLACES');
    expectEnvelopeError(await post('/wallet/send', { recipient_address: other, amount: '1000' }), 402, 'INSUFFICIENT_FUNDS');
    expectEnvelopeError(await post('/wallet/send', { recipient_address: other }), 400, 'INVALID_REQUEST');
    expectEnvelopeError(await call('POST', '/wallet/send', { body: '{"recipient_address": ' }), 400, 'INVALID_JSON');
  });

  it('POST /payment/request and GET /payment/status/{id}', async () => {
    const request = await post('/payment/request', { receive_address: address, amount: '0.25', redirect_url: 'https://shop.example/ok' });
    expect(request.status).toBe(200);
    expect(request.body.data).toMatchObject({ receive_address: address });
    expect(typeof request.body.data?.amount).toBe('string');
    const id = request.body.data?.transaction_id as string;
    const status = await call('GET', `/payment/status/${id}`);
    expect(status.body.data).toEqual({ success: true, message: expect.any(String), transaction_id: id, is_paid: false });
    expectEnvelopeError(await call('GET', '/payment/status/00000000-0000-4000-8000-000000000000'), 404, 'INVALID_TRANSACTION_ID');
    expectEnvelopeError(await call('GET', '/payment/status/junk'), 400, 'INVALID_TRANSACTION_ID');
  });

  it('GET /credits, POST /credits/topup/{n}', async () => {
    const credits = await call('GET', '/credits');
    expect(typeof credits.body.data?.credits).toBe('number');
    for (const tier of [10, 50, 100, 500, 1000, 5000, 10000, 50000, 100000]) expect(typeof credits.body.data?.[`current_credits_price_${tier}`]).toBe('number');
    const topup = await post('/credits/topup/10', {});
    expect(topup.status).toBe(200);
    // Upstream's fields, and the block that paid with whether it is a retry's answer (idempotency keys).
    expect(topup.body.data).toEqual({ topped_up_credits: 10, new_credits_balance: expect.any(Number), hash: expect.stringMatching(/^[0-9A-F]{64}$/), repeated: false });
    expectEnvelopeError(await post('/credits/topup/7', {}), 400, 'INVALID_CREDITS_AMOUNT');
  });

  it('POST /donate/{amount}', async () => {
    const donated = await post('/donate/0.1', {});
    expect(donated.status).toBe(200);
    expect(donated.body.data).toEqual({ success: true, amount: '0.1', message: expect.any(String), hash: expect.stringMatching(/^[0-9A-F]{64}$/), repeated: false });
    expectEnvelopeError(await post('/donate/abc', {}), 400, 'INVALID_NUMBER_FORMAT');
  });

  it('POST /http/fetch-paid fetches a URL that asks for no payment, and needs max_xno', async () => {
    const fetched = await post('/http/fetch-paid', { url: `${sb.url}/network/active-difficulty`, max_xno: '0.01' });
    expect(fetched.status).toBe(200);
    expect(fetched.body.data).toMatchObject({ status: expect.any(Number), payment: null, truncated: false });
    expectEnvelopeError(await post('/http/fetch-paid', { url: sb.url }), 400, 'INVALID_REQUEST');
    // Another server of this machine (the toolset itself) is not allowed: nothing is fetched.
    const local = await post('/http/fetch-paid', { url: `${serve.url}/wallet/balance`, max_xno: '0.01' });
    expectEnvelopeError(local, 400, 'INVALID_REQUEST');
    expect(local.body.error?.message).toMatch(/on this machine or a private network/);
    expectEnvelopeError(await post('/http/fetch-paid', { url: 'file:///etc/passwd', max_xno: '0.01' }), 400, 'INVALID_REQUEST');
  });

  it('unknown routes are 404 envelopes', async () => {
    expectEnvelopeError(await call('GET', '/nope'), 404, 'NOT_FOUND');
  });

  it('ten concurrent sends all land in one chain, balances exact', async () => {
    const before = BigInt((await call('GET', '/wallet/balance')).body.data?.balance_raw as string);
    const amounts = Array.from({ length: 10 }, (_, i) => `0.0${i + 1}`);
    const results = await Promise.all(amounts.map((amount) => post('/wallet/send', { recipient_address: other, amount })));
    for (const r of results) expect(r.body.success).toBe(true);
    const blocks = (await ledger(sb.url)).blocks.filter((b) => b.account === address);
    const heights = blocks.map((b) => Number(b.height)).sort((a, b) => a - b);
    expect(heights).toEqual(heights.map((_, i) => i + 1));
    for (const r of results) expect(blocks.some((b) => b.hash === r.body.data?.hash)).toBe(true);
    const spent = amounts.reduce((sum, a) => sum + xnoToRaw(a), 0n);
    const after = BigInt((await call('GET', '/wallet/balance')).body.data?.balance_raw as string);
    expect(after).toBe(before - spent);
  });

  it('makes the next block\'s work while idle', async () => {
    for (let i = 0; i < 100 && !/work ready for the next block/.test(serve.stderr()); i++) await new Promise((r) => setTimeout(r, 50));
    expect(serve.stderr()).toMatch(/work ready for the next block/);
  });

  it('logs one line per request, with none of the actual secrets', async () => {
    expect(serve.stderr()).toMatch(/POST \/wallet\/send 200 \d+ms/);
    const exported = await exportWallet(userSession(user));
    const apiKey = await userSession(user).apiKey();
    const secrets = [exported.secret, ...exported.accounts.map((a) => a.private_key), apiKey as string, user.env.NANOPAY_PASSWORD as string];
    expect(secrets.every((s) => s.length >= 8)).toBe(true);
    const log = serve.stderr().toLowerCase();
    for (const secret of secrets) expect(log).not.toContain(secret.toLowerCase());
  });
});

describe('guards', () => {
  it('refuse a foreign Host, an Origin, a cross-site fetch, text/plain and big bodies; nothing is sent', async () => {
    const before = (await ledger(sb.url)).blocks.length;
    const body = JSON.stringify({ recipient_address: other, amount: '0.01' });
    expectEnvelopeError(await call('POST', '/wallet/send', { body, headers: { host: 'evil.example:3123' } }), 403, 'FORBIDDEN');
    expectEnvelopeError(await call('POST', '/wallet/send', { body, headers: { origin: 'https://evil.example' } }), 403, 'FORBIDDEN');
    expectEnvelopeError(await call('POST', '/wallet/send', { body, headers: { 'sec-fetch-site': 'cross-site' } }), 403, 'FORBIDDEN');
    expectEnvelopeError(await call('POST', '/wallet/send', { body, headers: { 'content-type': 'text/plain' } }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    expectEnvelopeError(await call('POST', '/wallet/send', { body: JSON.stringify({ amount: 'x'.repeat(100_000) }) }), 413, 'PAYLOAD_TOO_LARGE');
    expect((await ledger(sb.url)).blocks.length).toBe(before);
  });

  it('with a token (NANOPAY_TOOLSET_TOKEN) every request needs it', async () => {
    expectEnvelopeError(await call('GET', '/wallet/balance', { base: configured.url }), 401, 'UNAUTHORIZED');
    expectEnvelopeError(await call('GET', '/wallet/balance', { base: configured.url, headers: { authorization: 'Bearer wrong-token-of-some-size' } }), 401, 'UNAUTHORIZED');
    const ok = await call('GET', '/wallet/balance', { base: configured.url, headers: { authorization: `Bearer ${token}` } });
    expect(ok.status).toBe(200);
  });

  it('refuses to bind a non-loopback address without a token', async () => {
    const result = await user.run(['serve', '--host', '0.0.0.0', '--port', '0']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/token/);
  });

  it('a --token-file that cannot be read is a usage error naming the flag, not a bug', async () => {
    const missing = await user.json<{ error: { code: string; message: string } }>(['serve', '--port', '0', '--token-file', `${user.configDir}/no-such-token`]);
    expect(missing).toMatchObject({ _code: 2, error: { code: 'USAGE' } });
    expect(missing.error.message).toContain('--token-file');
  });
});

describe('clients of the upstream toolset', () => {
  // Plain node:http requests with only the headers those clients send: no Content-Type unless a JSON body goes with it.
  const json = { 'content-type': 'application/json' };

  it('every route answers requests shaped like theirs', async () => {
    expect((await httpCall(serve.url, 'GET', '/wallet/balance')).body).toMatchObject({ success: true, data: { account: address }, error: null });
    expect((await httpCall(serve.url, 'GET', '/wallet/balance?auto_receive_pending_blocks=true')).body).toMatchObject({ success: true, data: { pending: '0' } });
    const sent = await httpCall(serve.url, 'POST', '/wallet/send', { headers: json, body: JSON.stringify({ recipient_address: other, amount: '0.001' }) });
    expect(sent.body).toMatchObject({ success: true, data: { amount: '0.001', recipient: other }, error: null });
    const request = await httpCall(serve.url, 'POST', '/payment/request', { headers: json, body: JSON.stringify({ receive_address: address, amount: '0.3', redirect_url: null }) });
    expect(request.body).toMatchObject({ success: true, data: { receive_address: address }, error: null });
    const id = request.body.data?.transaction_id as string;
    expect((await httpCall(serve.url, 'GET', `/payment/status/${id}`)).body).toMatchObject({ success: true, data: { transaction_id: id, is_paid: false } });
    expect((await httpCall(serve.url, 'GET', '/credits')).body).toMatchObject({ success: true, data: { credits: expect.any(Number) } });
    const topup = await httpCall(serve.url, 'POST', '/credits/topup/10');
    // The envelope, and (this toolset answers from the sandbox) its mark: test money.
    expect(topup.body).toEqual({ success: true, data: { topped_up_credits: 10, new_credits_balance: expect.any(Number), hash: expect.any(String), repeated: false }, error: null, sandbox: true });
    const donated = await httpCall(serve.url, 'POST', '/donate/0.01');
    expect(donated.body).toEqual({ success: true, data: { success: true, amount: '0.01', message: expect.any(String), hash: expect.any(String), repeated: false }, error: null, sandbox: true });
  });

  it('null is an absent optional field; a required one stays required', async () => {
    const request = await httpCall(serve.url, 'POST', '/payment/request', { headers: json, body: JSON.stringify({ receive_address: null, amount: '0.4', redirect_url: null }) });
    expect(request.body).toMatchObject({ success: true, data: { receive_address: address } });
    expectRawEnvelopeError(await httpCall(serve.url, 'POST', '/wallet/send', { headers: json, body: JSON.stringify({ recipient_address: other, amount: null }) }), 400, 'INVALID_REQUEST');
  });

  it('their failures are envelopes', async () => {
    const numeric = await httpCall(serve.url, 'POST', '/wallet/send', { headers: json, body: JSON.stringify({ recipient_address: other, amount: 0.1 }) });
    expectRawEnvelopeError(numeric, 400, 'INVALID_NUMBER_FORMAT');
    expect(numeric.body.error?.message).toMatch(/string.*not a JSON number/);
    expectRawEnvelopeError(await httpCall(serve.url, 'POST', '/payment/request', { headers: json, body: '{"amount": 2}' }), 400, 'INVALID_NUMBER_FORMAT');
    expectRawEnvelopeError(await httpCall(serve.url, 'POST', '/wallet/send', { body: JSON.stringify({ recipient_address: other, amount: '0.1' }) }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    expectRawEnvelopeError(await httpCall(serve.url, 'GET', '/payment/status/junk'), 400, 'INVALID_TRANSACTION_ID');
    expectRawEnvelopeError(await httpCall(serve.url, 'GET', '/payment/status/%E0%A4%A'), 400, 'INVALID_REQUEST');
    expectRawEnvelopeError(await httpCall(serve.url, 'POST', '/credits/topup/7'), 400, 'INVALID_CREDITS_AMOUNT');
    expectRawEnvelopeError(await httpCall(serve.url, 'POST', '/donate/abc'), 400, 'INVALID_NUMBER_FORMAT');
    expectRawEnvelopeError(await httpCall(serve.url, 'POST', '/donate/-1'), 400, 'INVALID_NEGATIVE_AMOUNT');
    expectRawEnvelopeError(await httpCall(serve.url, 'GET', '/donate/1'), 405, 'NOT_FOUND');
    expectRawEnvelopeError(await httpCall(serve.url, 'POST', '/credits'), 405, 'NOT_FOUND');
  });
});

describe('no request ends nanopay serve', () => {
  it('odd targets, bad escapes, absurd methods, oversized and cut bodies all get an envelope; the toolset keeps answering', async () => {
    await sendHostileRequests(serve.url, { getWithParam: '/payment/status/', get: '/credits', post: '/wallet/send', headersOnly: [400, 'INVALID_REQUEST'] });
    expect(serve.child.exitCode).toBe(null);
    expect((await httpCall(serve.url, 'GET', '/credits')).status).toBe(200);
  });
});

describe('AgentClient', () => {
  it('check_balance, pay and request_payment against nanopay serve; failures raise AgentError', async () => {
    const agent = new AgentClient(serve.url);
    const balance = await agent.check_balance(true);
    expect(balance.address).toBe(address);
    expect(typeof balance.balance).toBe('string');
    const paid = await agent.pay(other, '0.01');
    expect(paid.hash).toMatch(/^[0-9A-F]{64}$/);
    const request = await agent.request_payment('0.2');
    expect(request.receive_address).toBe(address);
    expect(xnoToRaw(request.amount) > xnoToRaw('0.2')).toBe(true);
    const failure = await agent.pay('nano_nope', '1').catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(AgentError);
    expect(failure).toMatchObject({ error_code: 'INVALID_ADDRESS' });
  });
});

describe('proof of work as configured', () => {
  it('with NANO_WORK_MODE=remote and no reachable work server, a send is WORK_SERVER_ERROR, never made on this machine', async () => {
    const before = (await ledger(sb.url)).blocks.length;
    const body = JSON.stringify({ recipient_address: other, amount: '0.01' });
    expectEnvelopeError(await call('POST', '/wallet/send', { base: configured.url, body, headers: { authorization: `Bearer ${token}` } }), 502, 'WORK_SERVER_ERROR');
    expect((await ledger(sb.url)).blocks.length).toBe(before);
  });
});
