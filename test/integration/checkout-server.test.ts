import { request as httpRequest, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCheckoutServer, type CheckoutServer } from '../../src/checkout/server.js';
import type { CheckoutRequest } from '../../src/ops/requests/checkout.js';
import type { RequestState } from '../../src/ops/requests/matching.js';

const address = 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj';
const request: CheckoutRequest = {
  transaction_id: '0b8f2a8e-1c1d-4c4e-9a55-1f0f7f3a9b10',
  receive_address: address,
  amount: '1.000000000000000000000000000001',
  amount_raw: '1000000000000000000000000000001',
  uri: `nano:${address}?amount=1000000000000000000000000000001`,
};

let server: CheckoutServer;
let pageUrl: string;
const answer: { state: RequestState } = { state: 'waiting' };
const log: string[] = [];

beforeAll(async () => {
  server = await startCheckoutServer({
    host: '127.0.0.1',
    port: 0,
    read: async () => ({ ...answer, ...(answer.state === 'paid' ? { block_hash: 'B'.repeat(64) } : {}) }),
    intervalMs: 50,
    maxStreams: 3,
    maxStreamsPerClient: 2,
    log: (line) => log.push(line),
  });
  pageUrl = server.add(request, { state: 'waiting' });
});

afterAll(async () => {
  await server?.close();
});

interface Stream {
  response: IncomingMessage;
  text: () => string;
  ended: Promise<void>;
}

/** Opens an event stream and collects what arrives. */
function stream(): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${pageUrl}/events`, (response) => {
      let text = '';
      response.on('data', (d: Buffer) => (text += d.toString()));
      const ended = new Promise<void>((done) => response.on('end', () => done()));
      resolve({ response, text: () => text, ended });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the checkout server', () => {
  it('serves the page with a strict policy and refuses anything but GET', async () => {
    const page = await fetch(pageUrl);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toMatch(/^default-src 'none'/);
    expect(await page.text()).toContain(request.amount);
    expect((await fetch(pageUrl, { method: 'POST' })).status).toBe(405);
    const unknown = await fetch(pageUrl.replace(/[0-9a-f-]{36}$/, '11111111-1111-4111-8111-111111111111'));
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toContain('Payment not found');
  });

  it('caps event streams (per client and in all), pushes the paid state, then ends the streams', async () => {
    const first = await stream();
    const second = await stream();
    expect([first.response.statusCode, second.response.statusCode]).toEqual([200, 200]);
    const third = await stream();
    expect(third.response.statusCode).toBe(503);
    third.response.resume();
    await expect.poll(() => first.text()).toContain('event: status\ndata: {"state":"waiting","is_paid":false}');

    answer.state = 'paid';
    await Promise.all([first.ended, second.ended]);
    for (const s of [first, second]) expect(s.text()).toContain(`event: status\ndata: {"state":"paid","is_paid":true,"block_hash":"${'B'.repeat(64)}"}`);
    // The slots are free again.
    const again = await stream();
    expect(again.response.statusCode).toBe(200);
    await again.ended;
    expect(again.text()).toContain('"state":"paid"');
    expect(log.some((line) => / 503 /.test(line))).toBe(true);
  });
});
