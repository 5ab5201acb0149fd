import { existsSync, readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../../src/api/client.js';
import { NodeClient } from '../../../src/api/node-client.js';
import { xnoToRaw } from '../../../src/nano/index.js';
import { Session } from '../../../src/ops/session.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { findTool, runTool } from '../../../src/toolset/tools.js';
import { signCheque } from '../../../src/x402/client.js';
import { backendNetwork } from '../../../src/x402/network.js';
import { decodeHeader, encodeHeader, parsePaymentPayload, type PaymentRequirements } from '../../../src/x402/protocol.js';
import { userSession } from '../../helpers/ledger/backend-users.js';
import { PASSWORD, userWithWallet, type CliUser } from '../../helpers/processes/cli.js';
import { startFaultyProxy, type FaultyProxy } from '../../helpers/network/faulty-proxy.js';
import { nodeMerchantAndCustomer } from '../../helpers/ledger/node-users.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { startCommand } from '../../helpers/processes/serve.js';
import { sandboxSettler } from '../../helpers/ledger/x402.js';

let sb: RunningSandbox;
let merchant: CliUser;
let customer: CliUser;
let merchantAddress: string;
let upstream: Server;
let upstreamUrl: string;
const servers: Server[] = [];
const proxies: FaultyProxy[] = [];

beforeAll(async () => {
  sb = await sandbox();
  ({ merchant, customer, merchantAddress } = await nodeMerchantAndCustomer(sb, {}));
  upstream = createServer((req, res) => res.end(`report for ${req.url}`));
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const s of [upstream, ...servers]) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
  for (const p of proxies) await p.close();
  await sb.close();
});

/** A node in front of the sandbox whose `version` says `network` (undefined: says none). */
async function nodeSaying(network: string | undefined): Promise<string> {
  const proxy = await startFaultyProxy(sb.url, () => ({ node: (answer, body) => (body.action === 'version' ? { ...answer, network } : answer) }));
  proxies.push(proxy);
  return proxy.url;
}

function journalEmpty(user: CliUser): boolean {
  const dir = join(user.configDir, 'journal');
  return !existsSync(dir) || readdirSync(dir).filter((f) => f.endsWith('.json')).length === 0;
}

const PRICE = xnoToRaw('0.001');

/** The scheme spec's own example requirement: no extra. */
function specShaped(network: string): PaymentRequirements {
  return { scheme: 'exact', network, asset: 'XNO', amount: PRICE.toString(), payTo: merchantAddress, maxTimeoutSeconds: 120 };
}

/**
 * A seller offering `accepts` (verbatim) and settling on the sandbox with nanopay's settler: a payment for any of them on
 * the settler's network is settled and answered 200 with PAYMENT-RESPONSE.
 */
async function seller(accepts: PaymentRequirements[]): Promise<{ url: string; paid: string[] }> {
  const { settler } = await sandboxSettler(sb.url);
  const paid: string[] = [];
  const server = createServer((req, res) => {
    const header = req.headers['payment-signature'];
    if (header === undefined) {
      res.writeHead(402, { 'payment-required': encodeHeader({ x402Version: 2, error: 'Payment required', resource: { url: `http://x${req.url}` }, accepts }) });
      return void res.end('{}');
    }
    const payment = parsePaymentPayload(decodeHeader(header as string, 'PAYMENT-SIGNATURE'));
    paid.push(payment.accepted.network);
    void settler.settle(payment, payment.accepted).then((settlement) => {
      res.writeHead(settlement.success ? 200 : 402, { 'payment-response': encodeHeader(settlement) });
      res.end(settlement.success ? 'the goods' : '{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, paid };
}

describe('the network is the backend\'s (issue 35, point 1)', () => {
  it("the sandbox's paywall says nano:dev in PAYMENT-REQUIRED and PAYMENT-RESPONSE, its facilitator in /supported", async () => {
    const paywall = await startCommand<{ url: string; network: string }>(['paywall', '--upstream', upstreamUrl, '--price', '0.001', '--to', merchantAddress, '--json'], merchant.env);
    const facilitator = await startCommand<{ url: string; network: string }>(['facilitator', '--json'], merchant.env);
    try {
      expect([paywall.printed.network, facilitator.printed.network]).toEqual(['nano:dev', 'nano:dev']);
      const challenge = await fetch(`${paywall.printed.url}/report`);
      expect(decodeHeader(challenge.headers.get('payment-required') as string, 'PAYMENT-REQUIRED')).toMatchObject({ accepts: [{ network: 'nano:dev' }] });
      const supported = (await (await fetch(`${facilitator.printed.url}/supported`)).json()) as { kinds: { network: string }[] };
      expect(supported.kinds.map((k) => k.network)).toEqual(['nano:dev']);
      const paid = await customer.json<{ status: number; payment: { settlement: { network: string; success: boolean } } }>(['fetch', `${paywall.printed.url}/report`, '--max', '0.01', '--yes']);
      expect([paid.status, paid.payment.settlement]).toEqual([200, expect.objectContaining({ success: true, network: 'nano:dev' })]);
    } finally {
      await paywall.stop();
      await facilitator.stop();
    }
  });

  it("the sandbox's service backend is nano:dev too, and a sandbox at live thresholds is nano:test: never nano:mainnet", async () => {
    const { user } = await userWithWallet(sb.url, '1');
    const paywall = await startCommand<{ url: string; network: string }>(['paywall', '--upstream', upstreamUrl, '--price', '0.001', '--json'], user.env);
    try {
      expect(paywall.printed.network).toBe('nano:dev');
    } finally {
      await paywall.stop();
    }
    const live = await sandbox({ thresholds: 'live' });
    try {
      expect(await backendNetwork(new NodeClient({ url: live.url }), undefined)).toBe('nano:test');
      const key = ((await (await fetch(`${live.url}/wallet/create`, { method: 'POST' })).json()) as { data: { api_key: string } }).data.api_key;
      expect(await backendNetwork(new ApiClient({ baseUrl: live.url, apiKey: key }), undefined)).toBe('nano:test');
    } finally {
      await live.close();
    }
  });

  it('--network may name a node that does not say; it may not rename one that does', async () => {
    const wrong = await merchant.run(['paywall', '--upstream', upstreamUrl, '--price', '0.001', '--to', merchantAddress, '--network', 'nano:mainnet']);
    expect([wrong.code, wrong.stderr]).toEqual([2, expect.stringMatching(/settles on nano:dev, but nano:mainnet was named/)]);
    const silent = { ...merchant.env, NANOPAY_NODE_URL: await nodeSaying(undefined) };
    const unnamed = await merchant.run(['facilitator'], { env: silent });
    expect([unnamed.code, unnamed.stderr]).toEqual([2, expect.stringMatching(/does not say which Nano network[\s\S]*--network/)]);
    const named = await startCommand<{ url: string; network: string }>(['facilitator', '--network', 'nano:beta', '--json'], silent);
    try {
      expect(named.printed.network).toBe('nano:beta');
      expect(((await (await fetch(`${named.printed.url}/supported`)).json()) as { kinds: { network: string }[] }).kinds[0]?.network).toBe('nano:beta');
    } finally {
      await named.stop();
    }
  });
});

describe('the client pays only its own network (issue 35, point 2)', () => {
  it('a sandbox client refuses a nano:mainnet requirement (fetch, http_fetch_paid, signCheque), paying nothing', async () => {
    const { url, paid } = await seller([specShaped('nano:mainnet')]);
    const cli = await customer.run(['fetch', `${url}/report`, '--max', '0.01', '--yes']);
    expect([cli.code, cli.stderr]).toEqual([7, expect.stringMatching(/paid on nano:mainnet; this wallet's backend is on nano:dev; nothing was paid/)]);
    const allowed = new Session({ password: async () => PASSWORD, env: { ...customer.env, NANOPAY_FETCH_ALLOW_HOSTS: new URL(url).host } });
    expect((await runTool(allowed, findTool('http_fetch_paid'), { url: `${url}/report`, max_xno: '0.01' })).envelope.error).toMatchObject({ error: 'X402_UNPAYABLE' });
    await expect(signCheque(userSession(customer), specShaped('nano:mainnet'), { maxXno: '0.01' })).rejects.toMatchObject({ code: 'X402_UNPAYABLE' });
    expect(paid).toEqual([]);
    expect(journalEmpty(customer)).toBe(true);
  });

  it('a client on the live network (its node says so, or x402-network names it) refuses nano:dev, paying nothing', async () => {
    const { url, paid } = await seller([specShaped('nano:dev')]);
    const live = await customer.run(['fetch', `${url}/report`, '--max', '0.01', '--yes'], { env: { ...customer.env, NANOPAY_NODE_URL: await nodeSaying('live') } });
    expect([live.code, live.stderr]).toEqual([7, expect.stringMatching(/paid on nano:dev; this wallet's backend is on nano:mainnet/)]);
    const silent = { ...customer.env, NANOPAY_NODE_URL: await nodeSaying(undefined) };
    const unnamed = await customer.run(['fetch', `${url}/report`, '--max', '0.01', '--yes'], { env: silent });
    expect([unnamed.code, unnamed.stderr]).toEqual([2, expect.stringMatching(/does not say which Nano network[\s\S]*x402-network/)]);
    expect((await customer.run(['config', 'set', 'x402-network', 'nano:mainnet'])).code).toBe(0);
    try {
      const configured = await customer.run(['fetch', `${url}/report`, '--max', '0.01', '--yes'], { env: silent });
      expect([configured.code, configured.stderr]).toEqual([7, expect.stringMatching(/paid on nano:dev; this wallet's backend is on nano:mainnet/)]);
      // On a node that says nano:dev, the setting naming mainnet is refused, not believed.
      const disagreeing = await customer.run(['fetch', `${url}/report`, '--max', '0.01', '--yes']);
      expect([disagreeing.code, disagreeing.stderr]).toEqual([2, expect.stringMatching(/settles on nano:dev, but nano:mainnet was named/)]);
    } finally {
      await customer.run(['config', 'set', 'x402-network', '--unset']);
    }
    expect(paid).toEqual([]);
    expect(journalEmpty(customer)).toBe(true);
  });

  it('a 402 offering several networks is paid on the one that matches, even when another is cheaper', async () => {
    const cheaper = { ...specShaped('nano:mainnet'), amount: '1' };
    const { url, paid } = await seller([cheaper, specShaped('nano:dev')]);
    const result = await customer.json<{ status: number; body: string; payment: { amount_raw: string } }>(['fetch', `${url}/report`, '--max', '0.01', '--yes']);
    expect([result.status, result.body, result.payment.amount_raw, paid]).toEqual([200, 'the goods', PRICE.toString(), ['nano:dev']]);
  });
});

describe('requirements without extra (issue 35, point 3)', () => {
  it("the spec's own example shape (no extra) is paid, with work at the network's send threshold", async () => {
    const { url, paid } = await seller([specShaped('nano:dev')]);
    const result = await customer.json<{ status: number; body: string; payment: { hash: string } }>(['fetch', `${url}/report`, '--max', '0.01', '--yes']);
    expect([result.status, result.body, paid]).toEqual([200, 'the goods', ['nano:dev']]);
    expect((await new NodeClient({ url: sb.url }).blockInfo(result.payment.hash)).confirmed).toBe(true);
  });
});
