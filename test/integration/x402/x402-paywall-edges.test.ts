import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NodeClient } from '../../../src/api/node-client.js';
import type { HttpServer } from '../../../src/http/server.js';
import { hashBlock, type StateBlock } from '../../../src/nano/index.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { NanoSettler, type SettlingLedger } from '../../../src/x402/facilitator.js';
import { x402Middleware } from '../../../src/x402/middleware.js';
import { Paywall, parseRoute } from '../../../src/x402/paywall.js';
import { startPaywallServer } from '../../../src/x402/paywall-server.js';
import { decodeHeader, encodeHeader, parsePaymentRequired, type PaymentPayload } from '../../../src/x402/protocol.js';
import { FileSettlementRecord } from '../../../src/x402/settlements.js';
import { SandboxClient, newAccount, sandboxWithClient } from '../../helpers/ledger/chain.js';
import { tempDir } from '../../helpers/processes/temp.js';
import { payerAndPayee, paymentFor } from '../../helpers/ledger/x402.js';

/** A server that records every request target it is sent, as sent, and answers 200. */
interface Recorder {
  url: string;
  server: Server;
  calls: string[];
}

async function recorder(serve: (req: IncomingMessage) => string = (req) => `served ${req.method} ${req.url}`): Promise<Recorder> {
  const r: Recorder = { url: '', server: createServer(), calls: [] };
  r.server.on('request', (req: IncomingMessage, res) => {
    r.calls.push(`${req.method} ${req.url}`);
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end(serve(req)));
  });
  await new Promise<void>((resolve) => r.server.listen(0, '127.0.0.1', resolve));
  r.url = `http://127.0.0.1:${(r.server.address() as AddressInfo).port}`;
  return r;
}

async function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

/** A request with its target exactly as written (fetch and curl without --path-as-is clean dot segments up first). */
function asIs(base: string, target: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; headers: IncomingMessage['headers']; body: string }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: target, method: init.method ?? 'GET', headers: init.headers ?? {} }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

let sb: RunningSandbox;
let client: SandboxClient;
let node: NodeClient;
let up: Recorder;
let elsewhere: Recorder;
const servers: HttpServer[] = [];
const nodeServers: Server[] = [];

async function settlerOn(ledger: SettlingLedger): Promise<NanoSettler> {
  return new NanoSettler(ledger, new FileSettlementRecord(await tempDir('nanopay-x402-edges-')), { pollMs: 10 });
}

async function paywallServer(upstream: string, routes: string[], settler: NanoSettler, defaultXno = '0'): Promise<string> {
  const paywall = new Paywall({ payTo: newAccount().address, settler, workThreshold: (await client.advertisedThresholds()).send });
  const defaultRaw = BigInt(Math.round(Number(defaultXno) * 1e6)) * 10n ** 24n;
  const server = await startPaywallServer({ host: '127.0.0.1', port: 0, upstream, paywall, routes: routes.map(parseRoute), defaultRaw });
  servers.push(server);
  return server.url;
}

beforeAll(async () => {
  ({ sb, client } = await sandboxWithClient());
  const { NodeClient: Client } = await import('../../../src/api/node-client.js');
  node = new Client({ url: sb.url });
  up = await recorder();
  elsewhere = await recorder();
});
afterAll(async () => {
  for (const s of servers) await s.close();
  for (const s of [up.server, elsewhere.server, ...nodeServers]) await closeServer(s);
  await sb.close();
});

/** Paths that a naive proxy prices as one path and forwards as another. */
const ATTACKS = [
  '/free/../secret',
  '/free/%2e%2e/secret',
  '/free/%2E%2E/secret',
  '/free/.%2E/secret',
  '/free/./../secret',
  '/free/..%2fsecret',
  '/free%2F..%2Fsecret',
  '/free/..\\secret',
  '/free\\..\\secret',
  '/free/%252e%252e/secret',
  '/free/..;/secret',
  '/free/%2e%2e;x/secret',
  '/%73ecret',
  '//secret',
  '/premium;x/report',
  '/public/../../admin',
  '/public/%2e%2e/%2e%2e/admin',
  '/free/..',
];

describe('paywall: the path priced is the path forwarded (issue 31, point 1)', () => {
  it('dot segments, their encodings, encoded slashes, backslashes, double encoding and ;params never reach a dearer path for less', async () => {
    const { settler } = { settler: await settlerOn(node) };
    const routes = ['GET /free/*=0', 'GET /public/*=0', 'GET /secret=0.01', 'GET /premium/*=0.01'];
    const plain = await paywallServer(up.url, routes, settler);
    const prefixed = await paywallServer(`${up.url}/api`, routes, settler, '0.001');
    for (const base of [plain, prefixed]) {
      for (const target of ATTACKS) {
        const before = up.calls.length;
        const answer = await asIs(base, target);
        expect([400, 402], `${target} through ${base === plain ? 'the paywall' : 'the paywall with an /api prefix'} answered ${answer.status}: ${answer.body}`).toContain(answer.status);
        expect(up.calls.slice(before), target).toEqual([]);
      }
    }
    // What is refused says why, in the product's envelope.
    const refused = await asIs(plain, '/free/../secret');
    expect([refused.status, JSON.parse(refused.body).error]).toEqual([400, { error: 'INVALID_REQUEST', message: expect.stringMatching(/dot segment/), hint: expect.stringMatching(/without dot segments/) }]);
    // Plain paths still pass, as sent, under the prefix, with their query.
    expect((await asIs(prefixed, '/free/x?a=1&b=%2e')).body).toBe('served GET /api/free/x?a=1&b=%2e');
    expect((await asIs(plain, '/free/x')).body).toBe('served GET /free/x');
    expect((await asIs(plain, '/premium/x')).status).toBe(402);
  });

  it('headers that re-route a request upstream (X-Original-URL, X-Rewrite-URL, method overrides) never reach it', async () => {
    const seen = await recorder((req) => JSON.stringify(req.headers));
    try {
      const plain = await paywallServer(seen.url, ['GET /free/*=0', 'GET /secret=0.01', 'DELETE /free/*=0.01'], await settlerOn(node));
      const rerouting: Record<string, string> = {
        'x-original-url': '/secret',
        'x-rewrite-url': '/secret',
        'x-original-uri': '/secret',
        'x-forwarded-uri': '/secret',
        'x-forwarded-prefix': '/secret',
        'x-forwarded-path': '/secret',
        'x-envoy-original-path': '/secret',
        'x-http-method-override': 'DELETE',
        'x-http-method': 'DELETE',
        'x-method-override': 'DELETE',
        'x-original-method': 'DELETE',
      };
      const answer = await asIs(plain, '/free/x', { headers: { ...rerouting, 'x-kept': 'yes' } });
      expect(answer.status).toBe(200);
      const forwarded = JSON.parse(answer.body) as Record<string, string>;
      expect(Object.keys(rerouting).filter((name) => name in forwarded)).toEqual([]);
      expect(forwarded['x-kept']).toBe('yes');
    } finally {
      await closeServer(seen.server);
    }
  });

  it('a target that names another host (//host/path) goes to the upstream, never to that host', async () => {
    const plain = await paywallServer(up.url, ['GET /free/*=0'], await settlerOn(node));
    const target = `//${new URL(elsewhere.url).host}/steal`;
    const answer = await asIs(plain, target);
    expect(elsewhere.calls).toEqual([]);
    // Runs of "/" are one: the path forwarded (and priced) is /host/steal, on the upstream.
    expect([answer.status, up.calls.at(-1)]).toEqual([200, `GET /${new URL(elsewhere.url).host}/steal`]);
  });

  it('the SDK middleware refuses the same paths before its price function or handler sees them', async () => {
    const served: string[] = [];
    const paywall = new Paywall({ payTo: newAccount().address, settler: await settlerOn(node), workThreshold: (await client.advertisedThresholds()).send });
    const charge = x402Middleware(paywall, (req) => ((req.url ?? '').startsWith('/free/') ? undefined : '0.01'));
    // A handler that serves the resolved path, as many do (new URL(req.url, base)).
    const shop = createServer((req, res) =>
      void charge(req, res, () => {
        const path = new URL(req.url ?? '/', 'http://shop').pathname;
        served.push(path);
        res.end(`content of ${path}`);
      }),
    );
    await new Promise<void>((resolve) => shop.listen(0, '127.0.0.1', resolve));
    nodeServers.push(shop);
    const base = `http://127.0.0.1:${(shop.address() as AddressInfo).port}`;
    for (const target of ATTACKS) {
      const answer = await asIs(base, target);
      expect([400, 402], `${target} answered ${answer.status}: ${answer.body}`).toContain(answer.status);
    }
    expect(served).toEqual([]);
    expect((await asIs(base, '/free/x')).body).toBe('content of /free/x');
  });
});

/** A ledger on which the payer spends the same previous again (a rival block) just before the paywall publishes. */
function doubleSpent(rivals: StateBlock[]): SettlingLedger {
  return {
    kind: node.kind,
    accountInfo: (a) => node.accountInfo(a),
    blockInfo: (h) => node.blockInfo(h),
    activeDifficulty: () => node.activeDifficulty(),
    network: () => node.network(),
    publish: async (block, subtype, hash) => {
      const rival = rivals.shift();
      if (rival !== undefined) await node.publish(rival, 'send', hashBlock(rival));
      return node.publish(block, subtype, hash);
    },
  };
}

/** A payment for the challenge at `base + path`, and a rival block on the same previous. */
async function paymentAndRival(base: string, path: string, method: string): Promise<{ header: string; rival: StateBlock }> {
  const challenge = await fetch(`${base}${path}`, { method });
  expect(challenge.status).toBe(402);
  const required = parsePaymentRequired(decodeHeader(challenge.headers.get('payment-required') as string, 'PAYMENT-REQUIRED'));
  const { payer } = await payerAndPayee(client);
  const payment: PaymentPayload = await paymentFor(client, payer, required.accepts[0] as never);
  const rivalPayment = await paymentFor(client, payer, { ...(required.accepts[0] as never as PaymentPayload['accepted']), payTo: newAccount().address, amount: '1' });
  const { link_as_account: _, ...rival } = rivalPayment.payload.block as unknown as StateBlock & { link_as_account?: string };
  return { header: encodeHeader({ ...payment, resource: required.resource }), rival };
}

describe('paywall: a request that changes something runs only once paid (issue 31, point 2)', () => {
  it('a POST (PUT, PATCH, DELETE) is settled before the upstream runs: a double spender gets no side effect', async () => {
    const rivals: StateBlock[] = [];
    const base = await paywallServer(up.url, ['POST /orders=0.001', 'GET /report=0.001'], await settlerOn(doubleSpent(rivals)));
    const { header, rival } = await paymentAndRival(base, '/orders', 'POST');
    rivals.push(rival);
    const before = up.calls.length;
    const answer = await fetch(`${base}/orders`, { method: 'POST', body: 'buy', headers: { 'payment-signature': header } });
    expect(answer.status).toBe(402);
    expect(decodeHeader(answer.headers.get('payment-response') as string, 'PAYMENT-RESPONSE')).toMatchObject({ success: false });
    expect(up.calls.slice(before)).toEqual([]);
  });

  it('a POST paid honestly is settled, then forwarded, and its answer carries PAYMENT-RESPONSE', async () => {
    const base = await paywallServer(up.url, ['POST /orders=0.001'], await settlerOn(node));
    const { header } = await paymentAndRival(base, '/orders', 'POST');
    const answer = await fetch(`${base}/orders`, { method: 'POST', body: 'buy', headers: { 'payment-signature': header } });
    expect([answer.status, await answer.text()]).toEqual([200, 'served POST /orders']);
    const settlement = decodeHeader(answer.headers.get('payment-response') as string, 'PAYMENT-RESPONSE');
    expect(settlement).toMatchObject({ success: true });
    expect((await node.blockInfo(settlement.transaction as string)).confirmed).toBe(true);
  });

  it('the order is a route option: settle=before on a GET, settle=after on a POST', async () => {
    const rivals: StateBlock[] = [];
    const base = await paywallServer(up.url, ['GET /report=0.001 settle=before', 'POST /search=0.001 settle=after'], await settlerOn(doubleSpent(rivals)));
    const get = await paymentAndRival(base, '/report', 'GET');
    rivals.push(get.rival);
    let before = up.calls.length;
    expect((await fetch(`${base}/report`, { headers: { 'payment-signature': get.header } })).status).toBe(402);
    expect(up.calls.slice(before)).toEqual([]);
    const post = await paymentAndRival(base, '/search', 'POST');
    rivals.push(post.rival);
    before = up.calls.length;
    expect((await fetch(`${base}/search`, { method: 'POST', headers: { 'payment-signature': post.header } })).status).toBe(402);
    expect(up.calls.slice(before)).toEqual(['POST /search']);
    expect(() => parseRoute('GET /x=0.001 settle=never')).toThrow(/settle=before or settle=after/);
  });

  it('the SDK middleware settles a POST before its handler runs', async () => {
    const rivals: StateBlock[] = [];
    const handled: string[] = [];
    const paywall = new Paywall({ payTo: newAccount().address, settler: await settlerOn(doubleSpent(rivals)), workThreshold: (await client.advertisedThresholds()).send });
    const charge = x402Middleware(paywall, '0.001');
    const shop = createServer((req, res) =>
      void charge(req, res, () => {
        handled.push(`${req.method} ${req.url}`);
        res.end('order placed');
      }),
    );
    await new Promise<void>((resolve) => shop.listen(0, '127.0.0.1', resolve));
    nodeServers.push(shop);
    const base = `http://127.0.0.1:${(shop.address() as AddressInfo).port}`;
    const { header, rival } = await paymentAndRival(base, '/orders', 'POST');
    rivals.push(rival);
    expect((await fetch(`${base}/orders`, { method: 'POST', headers: { 'payment-signature': header } })).status).toBe(402);
    expect(handled).toEqual([]);
    const honest = await paymentAndRival(base, '/orders', 'POST');
    const paid = await fetch(`${base}/orders`, { method: 'POST', headers: { 'payment-signature': honest.header } });
    expect([paid.status, await paid.text()]).toEqual([200, 'order placed']);
    expect(decodeHeader(paid.headers.get('payment-response') as string, 'PAYMENT-RESPONSE')).toMatchObject({ success: true });
    expect(handled).toEqual(['POST /orders']);
  });
});

describe('paywall: the upstream hop', () => {
  it('forwards a body and answers byte for byte (its content coding and repeated headers kept), and sends a GET again when the upstream closed the kept-alive connection under it', async () => {
    const { gzipSync } = await import('node:zlib');
    const zipped = gzipSync(Buffer.from('{"answer":42}'));
    const seen: { method?: string; body: string; id?: string; payment?: string }[] = [];
    let requests = 0;
    const upstream = createServer((req, res) => {
      requests++;
      // The third request's kept-alive connection is closed under it, unanswered, as an upstream closes an idle one while the proxy sends on it.
      if (requests === 3) {
        req.socket.destroy();
        return;
      }
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ ...(req.method === undefined ? {} : { method: req.method }), body, ...(typeof req.headers['x-request-id'] === 'string' ? { id: req.headers['x-request-id'] } : {}), ...(typeof req.headers['x-payment'] === 'string' ? { payment: req.headers['x-payment'] } : {}) });
        res.writeHead(201, [['content-type', 'application/json'], ['content-encoding', 'gzip'], ['set-cookie', 'a=1'], ['set-cookie', 'b=2']]);
        res.end(zipped);
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    nodeServers.push(upstream);
    const base = await paywallServer(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, [], await settlerOn(node));

    const posted = await new Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }>((resolve, reject) => {
      const url = new URL(`${base}/echo`);
      const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { 'content-type': 'text/plain', 'x-payment': 'not forwarded' } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      });
      req.on('error', reject);
      req.end('a body');
    });
    expect(posted.status).toBe(201);
    expect(posted.headers['content-encoding']).toBe('gzip');
    expect(posted.headers['set-cookie']).toEqual(['a=1', 'b=2']);
    expect(posted.body.equals(zipped)).toBe(true);
    expect(seen[0]).toMatchObject({ method: 'POST', body: 'a body', id: posted.headers['x-request-id'] });
    expect(seen[0]?.payment).toBeUndefined();

    // The second GET goes out on the kept connection, finds it closed, and is sent once more on a new one.
    for (let i = 0; i < 2; i++) expect((await asIs(base, '/again')).status).toBe(201);
    expect(requests).toBe(4);
    expect(seen.map((s) => s.method)).toEqual(['POST', 'GET', 'GET']);
  });
});
