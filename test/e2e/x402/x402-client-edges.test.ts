import { existsSync, readdirSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { xnoToRaw } from '../../../src/nano/index.js';
import { Session } from '../../../src/ops/session.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { NanoPay } from '../../../src/sdk/nanopay.js';
import { findTool, runTool } from '../../../src/toolset/tools.js';
import { signCheque } from '../../../src/x402/client.js';
import { x402Middleware } from '../../../src/x402/middleware.js';
import { nanoRequirement } from '../../../src/x402/nano-exact.js';
import { Paywall } from '../../../src/x402/paywall.js';
import { encodeHeader } from '../../../src/x402/protocol.js';
import { userSession } from '../../helpers/ledger/backend-users.js';
import { PASSWORD, type CliUser } from '../../helpers/processes/cli.js';
import { nodeMerchantAndCustomer } from '../../helpers/ledger/node-users.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { sandboxSettler } from '../../helpers/ledger/x402.js';

let sb: RunningSandbox;
let customer: CliUser;
let merchantAddress: string;
const servers: Server[] = [];

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Every request a server got, with the payment header it carried (if any). */
interface Seen {
  url: string;
  payment: boolean;
}

/**
 * A seller on the sandbox (the real middleware, paid to the merchant): /paid costs 0.001 XNO, /paid-away costs the
 * same and then answers 302 to `away`; /to-paid (free) redirects to /paid on the same origin, /to (free) to `away`.
 */
async function seller(seen: Seen[], away: () => string): Promise<string> {
  const { settler } = await sandboxSettler(sb.url);
  const charge = x402Middleware(new Paywall({ payTo: merchantAddress, settler, workThreshold: 'ffc0000000000000' }), (req) => ((req.url ?? '').startsWith('/paid') ? '0.001' : undefined));
  return listen((req, res) => {
    seen.push({ url: req.url ?? '', payment: req.headers['payment-signature'] !== undefined || req.headers['x-payment'] !== undefined });
    void charge(req, res, () => {
      if (req.url === '/to-paid') return void res.writeHead(302, { location: '/paid' }).end();
      if (req.url === '/to') return void res.writeHead(302, { location: `${away()}/paid` }).end();
      if (req.url === '/paid-away') return void res.writeHead(302, { location: `${away()}/paid` }).end();
      res.end('the goods');
    });
  });
}

function journalEmpty(user: CliUser): boolean {
  const dir = join(user.configDir, 'journal');
  return !existsSync(dir) || readdirSync(dir).filter((f) => f.endsWith('.json')).length === 0;
}

/** A 402 whose requirement states `workThreshold` (a real payee and price). */
async function demanding(workThreshold: string): Promise<string> {
  const requirement = nanoRequirement(merchantAddress, xnoToRaw('0.001'), 'nano:dev', workThreshold);
  return listen((req, res) => {
    if (req.headers['payment-signature'] !== undefined) return void res.writeHead(500).end('paid?');
    res.writeHead(402, { 'payment-required': encodeHeader({ x402Version: 2, error: 'Payment required', resource: { url: `http://x${req.url}` }, accepts: [requirement] }) });
    res.end('{}');
  });
}

beforeAll(async () => {
  sb = await sandbox();
  ({ customer, merchantAddress } = await nodeMerchantAndCustomer(sb, {}));
});
afterAll(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
  await sb.close();
});

describe('work a server states (issue 31, point 3)', () => {
  it('a threshold harder than 64 times the live send work is refused at once by fetch, fetchWithPayment, http_fetch_paid and signCheque; nothing is signed', async () => {
    const url = await demanding('ffffffffffffffff');
    const cli = await customer.run(['fetch', `${url}/report`, '--max', '0.01', '--yes'], { timeoutMs: 30_000 });
    expect([cli.code, cli.stderr]).toEqual([7, expect.stringMatching(/work at ffffffffffffffff.*nothing was paid/s)]);
    expect(cli.stderr).toMatch(/X402_UNPAYABLE[\s\S]*Hint:/);

    const sdk = new NanoPay({ password: PASSWORD, env: customer.env });
    await expect(sdk.fetchWithPayment(`${url}/report`, {}, { maxXno: '0.01', signal: AbortSignal.timeout(20_000) })).rejects.toMatchObject({ code: 'X402_UNPAYABLE' });

    const allowed = new Session({ password: async () => PASSWORD, env: { ...customer.env, NANOPAY_FETCH_ALLOW_HOSTS: new URL(url).host } });
    const tool = await runTool(allowed, findTool('http_fetch_paid'), { url: `${url}/report`, max_xno: '0.01' }, AbortSignal.timeout(20_000));
    expect(tool.envelope.error).toMatchObject({ error: 'X402_UNPAYABLE' });

    const requirement = nanoRequirement(merchantAddress, xnoToRaw('0.001'), 'nano:dev', 'ffffffffffffffff');
    await expect(signCheque(userSession(customer), requirement, { maxXno: '0.01', signal: AbortSignal.timeout(20_000) })).rejects.toMatchObject({ code: 'X402_UNPAYABLE' });
    expect(journalEmpty(customer)).toBe(true);
  });

  it('the work of a payment is bounded by --timeout: a work server that never answers ends in TIMEOUT (exit 8), nothing signed', async () => {
    const url = await demanding('ffc0000000000000');
    const silent = await listen(() => undefined);
    const env = { ...customer.env, NANO_WORK_MODE: 'remote', NANO_WORK_SERVER_URL: silent, NANO_WORK_TIMEOUT_MS: '600000' };
    const cli = await customer.run(['fetch', `${url}/report`, '--max', '0.01', '--yes', '--timeout', '2s'], { env, timeoutMs: 30_000 });
    expect([cli.code, cli.stderr]).toEqual([8, expect.stringMatching(/proof of work.*--timeout.*nothing was signed or paid/s)]);
    expect(journalEmpty(customer)).toBe(true);
  });
});

describe('redirects (issue 31, point 4)', () => {
  it('a redirect to another origin (same host, other port) is returned as is: nothing is paid, no payment header goes anywhere, and the JSON says so', async () => {
    const there: Seen[] = [];
    const here: Seen[] = [];
    const other = await seller(there, () => '');
    const first = await seller(here, () => other);
    const result = await customer.json<{ status: number; payment: unknown; redirect: unknown }>(['fetch', `${first}/to`, '--max', '0.01', '--yes']);
    expect(result).toMatchObject({ status: 302, payment: null, redirect: { location: `${other}/paid`, followed: false } });
    expect(there).toEqual([]);
    expect(here.filter((s) => s.payment)).toEqual([]);
    expect(journalEmpty(customer)).toBe(true);

    // The SDK alike.
    const sdk = new NanoPay({ password: PASSWORD, env: customer.env });
    const paid = await sdk.fetchWithPayment(`${first}/to`, {}, { maxXno: '0.01' });
    expect([paid.response.status, paid.payment, paid.redirect]).toEqual([302, undefined, `${other}/paid`]);
    expect(there).toEqual([]);
  });

  it('http to https on the same host is another origin too', async () => {
    const seen: Seen[] = [];
    const here = await seller(seen, () => '');
    const https = `https://${new URL(here).host}`;
    const upgrade = await listen((_req, res) => void res.writeHead(301, { location: `${https}/paid` }).end());
    const result = await customer.json<{ status: number; payment: unknown; redirect: unknown }>(['fetch', `${upgrade}/x`, '--max', '0.01', '--yes']);
    expect(result).toMatchObject({ status: 301, payment: null, redirect: { location: `${https}/paid`, followed: false } });
    expect(seen).toEqual([]);
  });

  it('a redirect on the same origin is followed, and the payment goes to that origin only', async () => {
    const seen: Seen[] = [];
    const here = await seller(seen, () => '');
    const result = await customer.json<{ status: number; body: string; payment: { pay_to: string } }>(['fetch', `${here}/to-paid`, '--max', '0.01', '--yes']);
    expect([result.status, result.body, result.payment.pay_to]).toEqual([200, 'the goods', merchantAddress]);
    expect(seen.map((s) => `${s.url}${s.payment ? ' paid' : ''}`)).toEqual(['/to-paid', '/paid', '/paid paid']);
  });

  it('a paid answer that redirects to another origin is not followed: the payment header is never sent there', async () => {
    const there: Seen[] = [];
    const here: Seen[] = [];
    const other = await seller(there, () => '');
    const first = await seller(here, () => other);
    const result = await customer.json<{ status: number; payment: { hash: string }; redirect: unknown }>(['fetch', `${first}/paid-away`, '--max', '0.01', '--yes']);
    expect(result).toMatchObject({ status: 302, payment: { pay_to: merchantAddress }, redirect: { location: `${other}/paid`, followed: false } });
    expect(there).toEqual([]);
  });

  it('http_fetch_paid follows no redirect at all (each hop is checked when the model asks for it)', async () => {
    const there: Seen[] = [];
    const here: Seen[] = [];
    const other = await seller(there, () => '');
    const first = await seller(here, () => other);
    const allowed = new Session({ password: async () => PASSWORD, env: { ...customer.env, NANOPAY_FETCH_ALLOW_HOSTS: `${new URL(first).host},${new URL(other).host}` } });
    for (const path of ['/to', '/to-paid']) {
      const tool = await runTool(allowed, findTool('http_fetch_paid'), { url: `${first}${path}`, max_xno: '0.01' });
      expect(tool.envelope.data).toMatchObject({ status: 302, payment: null });
    }
    expect(there).toEqual([]);
    expect(here.map((s) => s.url)).toEqual(['/to', '/to-paid']);
  });
});
