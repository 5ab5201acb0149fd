import { rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashBlock, xnoToRaw } from '../../../src/nano/index.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { Paywall } from '../../../src/x402/paywall.js';
import { x402Middleware } from '../../../src/x402/middleware.js';
import { decodeHeader, encodeHeader, parsePaymentRequired } from '../../../src/x402/protocol.js';
import { SandboxClient, newAccount, sandboxWithClient } from '../../helpers/ledger/chain.js';
import { payerAndPayee, paymentFor, sandboxSettler } from '../../helpers/ledger/x402.js';

let sb: RunningSandbox;
let client: SandboxClient;
let dir: string;
let server: Server;
let url: string;
let payTo: string;
const handled: string[] = [];

beforeAll(async () => {
  ({ sb, client } = await sandboxWithClient());
  const made = await sandboxSettler(sb.url);
  dir = made.dir;
  payTo = newAccount().address;
  const paywall = new Paywall({ payTo, settler: made.settler, workThreshold: (await client.advertisedThresholds()).send });
  const charge = x402Middleware(paywall, (req) => (req.url === '/free' ? undefined : '0.001'));
  // A plain node:http handler behind the middleware: /broken fails after the payment was verified.
  server = createServer((req, res) =>
    void charge(req, res, () => {
      handled.push(req.url ?? '');
      if (req.url === '/broken') return void res.writeHead(500, { 'content-type': 'text/plain' }).end('broken');
      res.setHeader('content-type', 'text/plain');
      res.write('paid ');
      res.end('content');
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await sb.close();
  await rm(dir, { recursive: true, force: true });
});

async function pay(path: string, payer: Parameters<typeof paymentFor>[1], headerName = 'payment-signature'): Promise<{ response: Response; hash: string; header: string }> {
  const challenge = await fetch(`${url}${path}`);
  expect(challenge.status).toBe(402);
  const required = parsePaymentRequired(decodeHeader(challenge.headers.get('payment-required') as string, 'PAYMENT-REQUIRED'));
  const payment = await paymentFor(client, payer, required.accepts[0] as never);
  const header = encodeHeader({ ...payment, resource: required.resource, scheme: 'exact', network: 'nano:dev' });
  // Peers' extra top-level keys (scheme, network) are accepted on input.
  const response = await fetch(`${url}${path}`, { headers: { [headerName]: header } });
  return { response, hash: hashBlock(payment.payload.block as never), header };
}

describe('x402Middleware in an Express app', () => {
  it('charges a route and passes res.json through with PAYMENT-RESPONSE', async () => {
    const { settler, dir: expressDir } = await sandboxSettler(sb.url);
    const app = express();
    app.use(x402Middleware(new Paywall({ payTo, settler, workThreshold: (await client.advertisedThresholds()).send }), '0.002') as unknown as express.RequestHandler);
    app.get('/json', (_req, res) => void res.json({ ok: true }));
    const shop = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    try {
      const shopUrl = `http://127.0.0.1:${(shop.address() as AddressInfo).port}`;
      const challenge = await fetch(`${shopUrl}/json`);
      expect(challenge.status).toBe(402);
      const required = parsePaymentRequired(decodeHeader(challenge.headers.get('payment-required') as string, 'PAYMENT-REQUIRED'));
      const { payer } = await payerAndPayee(client);
      const payment = await paymentFor(client, payer, required.accepts[0] as never);
      const paid = await fetch(`${shopUrl}/json`, { headers: { 'payment-signature': encodeHeader(payment) } });
      expect([paid.status, await paid.json()]).toEqual([200, { ok: true }]);
      expect(decodeHeader(paid.headers.get('payment-response') as string, 'PAYMENT-RESPONSE')).toMatchObject({ success: true, transaction: hashBlock(payment.payload.block as never) });
    } finally {
      shop.closeAllConnections();
      shop.close();
      await rm(expressDir, { recursive: true, force: true });
    }
  });
});

describe('x402Middleware on a node:http handler', () => {
  it('lets free requests through, charges the others, settles after success', async () => {
    const free = await fetch(`${url}/free`);
    expect([free.status, await free.text()]).toEqual([200, 'paid content']);
    const { payer } = await payerAndPayee(client);
    const { response, hash } = await pay('/thing', payer);
    expect([response.status, await response.text()]).toEqual([200, 'paid content']);
    const settlement = decodeHeader(response.headers.get('payment-response') as string, 'PAYMENT-RESPONSE');
    expect(settlement).toMatchObject({ success: true, transaction: hash, amount: xnoToRaw('0.001').toString() });
    expect((await client.call('POST', '/block/info', { hash })).data.confirmed).toBe('true');
  });

  it('reads the payment from X-PAYMENT too, as v1-style clients send it', async () => {
    const { payer } = await payerAndPayee(client);
    const { response, hash } = await pay('/thing', payer, 'x-payment');
    expect(response.status).toBe(200);
    expect(decodeHeader(response.headers.get('payment-response') as string, 'PAYMENT-RESPONSE')).toMatchObject({ success: true, transaction: hash });
  });

  it('a failed handler answer passes through and the block is never published; a replay of a settled block is refused', async () => {
    const { payer } = await payerAndPayee(client);
    const { response, hash } = await pay('/broken', payer);
    expect([response.status, await response.text()]).toEqual([500, 'broken']);
    expect((await client.call('POST', '/block/info', { hash })).success).toBe(false);

    const paid = await pay('/thing', payer);
    expect(paid.response.status).toBe(200);
    const before = handled.length;
    const replay = await fetch(`${url}/thing`, { headers: { 'payment-signature': paid.header } });
    expect(replay.status).toBe(402);
    expect(decodeHeader(replay.headers.get('payment-required') as string, 'PAYMENT-REQUIRED').error).toMatch(/frontier_mismatch|already_settled/);
    expect(handled.length).toBe(before);
  });
});
