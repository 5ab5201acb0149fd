import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HttpServer } from '../../../src/http/server.js';
import { xnoToRaw } from '../../../src/nano/index.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { Paywall, parseRoute } from '../../../src/x402/paywall.js';
import { startPaywallServer } from '../../../src/x402/paywall-server.js';
import { decodeHeader } from '../../../src/x402/protocol.js';
import { newAccount, sandboxWithClient } from '../../helpers/ledger/chain.js';
import { rawRequest } from '../../helpers/network/raw-http.js';
import { sandboxSettler } from '../../helpers/ledger/x402.js';

let sb: RunningSandbox;
let upstream: Server;
let paywall: HttpServer;
let upstreamCalls = 0;
const payTo = newAccount().address;

beforeAll(async () => {
  ({ sb } = await sandboxWithClient());
  upstream = createServer((_req, res) => {
    upstreamCalls++;
    res.end('upstream');
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const { settler } = await sandboxSettler(sb.url);
  const workThreshold = String((await settler.supported()).kinds[0]?.extra?.workThreshold);
  paywall = await startPaywallServer({
    host: '127.0.0.1',
    port: 0,
    upstream: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
    paywall: new Paywall({ payTo, settler, workThreshold }),
    routes: ['GET /free/*=0', 'POST /search=0.005 settle=after'].map(parseRoute),
    defaultRaw: xnoToRaw('0.002'),
  });
});
afterAll(async () => {
  await paywall.close();
  upstream.closeAllConnections();
  await new Promise((resolve) => upstream.close(resolve));
  await sb.close();
});

describe('GET /.well-known/x402: what the paywall sells (issue 32, part 5)', () => {
  it('lists its routes in the order they match, each with the requirement its 402 states, then the price of any other request; unpaid, never forwarded', async () => {
    const response = await fetch(`${paywall.url}/.well-known/x402`);
    expect(response.status).toBe(200);
    const manifest = (await response.json()) as { items: { accepts: unknown[] }[] };
    const requirement = (amount: string) => ({ scheme: 'exact', network: 'nano:dev', asset: 'XNO', amount: xnoToRaw(amount).toString(), payTo, maxTimeoutSeconds: 300, extra: { work: 'required', workThreshold: expect.stringMatching(/^[0-9a-f]{16}$/) } });
    expect(manifest).toEqual({
      x402Version: 2,
      lastUpdated: expect.any(Number),
      items: [
        { resource: { url: `${paywall.url}/free/*` }, type: 'http', accepts: [], input: { method: 'GET', routeTemplate: '/free/*' } },
        { resource: { url: `${paywall.url}/search` }, type: 'http', accepts: [requirement('0.005')], input: { method: 'POST', routeTemplate: '/search' } },
        { resource: { url: `${paywall.url}/*` }, type: 'http', accepts: [requirement('0.002')], input: { method: '*', routeTemplate: '/*' } },
      ],
    });
    // What it lists is what a 402 states.
    const challenge = decodeHeader((await fetch(`${paywall.url}/report`)).headers.get('payment-required') as string, 'PAYMENT-REQUIRED') as { accepts: unknown[] };
    expect(challenge.accepts[0]).toEqual(manifest.items[2]?.accepts[0]);
    const search = decodeHeader((await fetch(`${paywall.url}/search`, { method: 'POST', body: '{}' })).headers.get('payment-required') as string, 'PAYMENT-REQUIRED') as { accepts: unknown[] };
    expect(search.accepts[0]).toEqual(manifest.items[1]?.accepts[0]);
    expect(await (await fetch(`${paywall.url}/.well-known/x402.json`)).json()).toEqual(manifest);
    expect(upstreamCalls).toBe(0);
  });

  it('takes the origin it advertises from a plain Host only: one that names another server is not echoed, in the manifest or a 402', async () => {
    const ask = async (target: string, host: string) => rawRequest(paywall.url, `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
    const urls = (reply: { body: unknown }) => (reply.body as { items: { resource: { url: string } }[] }).items.map((item) => item.resource.url);
    // As a reverse proxy passes the public name.
    expect(urls(await ask('/.well-known/x402', 'shop.example:8443'))[0]).toBe('http://shop.example:8443/free/*');
    for (const hostile of ['good.example@evil.example', 'evil.example/x', 'evil.example?', 'evil.example#']) {
      expect(urls(await ask('/.well-known/x402', hostile)).every((url) => url.startsWith(`${paywall.url}/`))).toBe(true);
      const required = (await ask('/report', hostile)).headers['payment-required'];
      expect((decodeHeader(required as string, 'PAYMENT-REQUIRED') as { resource: { url: string } }).resource.url).toBe(`${paywall.url}/report`);
    }
  });
});
