import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { call } from '../../../src/api/http.js';
import { NodeClient } from '../../../src/api/node-client.js';
import { exchange, type Exchange } from '../../../src/api/transport.js';
import { NanoPayError } from '../../../src/errors.js';
import { deriveAccount } from '../../../src/nano/index.js';
import { tempDirSync } from '../../helpers/processes/temp.js';

/** A request as the server saw it. */
interface Seen {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

interface Running {
  url: string;
  seen: Seen[];
}

type Handler = (req: IncomingMessage, res: ServerResponse, seen: Seen, index: number) => void;

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** A real server on an ephemeral loopback port; `handle` answers (or not) each request once its body is in. */
async function serve(handle: Handler, tls?: { key: Buffer; cert: Buffer }): Promise<Running> {
  const seen: Seen[] = [];
  const sockets = new Set<Socket>();
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const entry = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body };
      seen.push(entry);
      handle(req, res, entry, seen.length - 1);
    });
  };
  const server: Server = tls === undefined ? createServer(onRequest) : https.createServer(tls, onRequest);
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  return { url: `${tls === undefined ? 'http' : 'https'}://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const json = (res: ServerResponse, status: number, data: unknown, headers: Record<string, string> = {}): void => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(data));
};

/** A safe read by default: two retries, as the clients configure them. */
const get = (url: string, more: Partial<Exchange> = {}): Promise<{ status: number; text: string }> =>
  exchange({ url, method: 'GET', headers: {}, timeoutMs: 2_000, retries: 2, party: 'service', where: `GET ${url}`, hint: 'check it', ...more });

async function refusal(promise: Promise<unknown>): Promise<NanoPayError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof NanoPayError) return error;
    throw error;
  }
  throw new Error('expected a NanoPayError');
}

describe('retries', () => {
  it('a safe call is retried after a 503 and gets the answer that follows', async () => {
    const server = await serve((_req, res, _seen, i) => (i === 0 ? json(res, 503, { error: 'busy' }) : json(res, 200, { ok: true })));
    expect(await get(`${server.url}/x`)).toEqual({ status: 200, text: '{"ok":true}' });
    expect(server.seen).toHaveLength(2);
  });

  it('a safe call is retried after a dropped connection', async () => {
    const server = await serve((req, res, _seen, i) => (i === 0 ? req.socket.destroy() : json(res, 200, { ok: true })));
    expect(await get(`${server.url}/x`)).toEqual({ status: 200, text: '{"ok":true}' });
    expect(server.seen).toHaveLength(2);
  });

  it('the retries run out: the last answer is returned as it is, after as many tries as configured', async () => {
    const server = await serve((_req, res) => json(res, 500, { error: 'down' }));
    expect(await get(`${server.url}/x`, { retries: 1 })).toEqual({ status: 500, text: '{"error":"down"}' });
    expect(server.seen).toHaveLength(2);
  });

  it('an answer that is not a transient failure is not retried', async () => {
    const server = await serve((_req, res) => json(res, 404, { error: 'no such thing' }));
    expect((await get(`${server.url}/x`)).status).toBe(404);
    expect(server.seen).toHaveLength(1);
  });

  it('writes are never retried: a service POST that is not safe, and a node process', async () => {
    const server = await serve((req) => req.socket.destroy());
    const error = await refusal(call({ baseUrl: server.url, retries: 2 }, { method: 'POST', path: '/block/publish', body: { block: 1 }, safe: false }));
    expect(error.code).toBe('REQUEST_ERROR');
    expect(error.message).toMatch(/^Could not reach the service for POST http:\/\/127\.0\.0\.1:\d+\/block\/publish: ECONNRESET$/);
    expect(server.seen).toHaveLength(1);

    const node = await serve((req) => req.socket.destroy());
    const account = deriveAccount({ seed: '0'.repeat(64), index: 0 });
    const block = { type: 'state' as const, account: account.address, previous: '0'.repeat(64), representative: account.address, balance: '1', link: '1'.repeat(64), signature: 'A'.repeat(128), work: '0'.repeat(16) };
    const nodeError = await refusal(new NodeClient({ url: node.url, retries: 2 }).publish(block, 'send', 'B'.repeat(64)));
    expect(nodeError.message).toMatch(/^Could not reach the node for process at http:\/\/127\.0\.0\.1:\d+: ECONNRESET$/);
    expect(node.seen).toHaveLength(1);
  });

  it('a call its caller retries itself (once) is tried once', async () => {
    const server = await serve((_req, res) => json(res, 503, {}));
    const error = await refusal(call({ baseUrl: server.url, retries: 2 }, { method: 'GET', path: '/status', safe: true, once: true }));
    expect(error.message).toMatch(/with HTTP 503$/);
    expect(server.seen).toHaveLength(1);
  });

  it('Retry-After is honoured: a short one is waited for and retried, a long one (seconds or a date) returns the answer', async () => {
    const short = await serve((_req, res, _seen, i) => (i === 0 ? json(res, 429, {}, { 'retry-after': '1' }) : json(res, 200, { ok: true })));
    expect((await get(`${short.url}/x`)).status).toBe(200);
    expect(short.seen).toHaveLength(2);

    const long = await serve((_req, res) => json(res, 429, {}, { 'retry-after': '120' }));
    expect((await get(`${long.url}/x`)).status).toBe(429);
    expect(long.seen).toHaveLength(1);

    const date = await serve((_req, res) => json(res, 503, {}, { 'retry-after': new Date(Date.now() + 3_600_000).toUTCString() }));
    expect((await get(`${date.url}/x`)).status).toBe(503);
    expect(date.seen).toHaveLength(1);
  });

  it('413 is retried only when the server says when (Retry-After)', async () => {
    const plain = await serve((_req, res) => json(res, 413, {}));
    expect((await get(`${plain.url}/x`)).status).toBe(413);
    expect(plain.seen).toHaveLength(1);

    const told = await serve((_req, res, _seen, i) => (i === 0 ? json(res, 413, {}, { 'retry-after': '0' }) : json(res, 200, {})));
    expect((await get(`${told.url}/x`)).status).toBe(200);
    expect(told.seen).toHaveLength(2);
  });
});

describe('time and aborts', () => {
  it('a server that accepts and never answers: "did not answer in time", retried like any transient failure', async () => {
    const server = await serve(() => undefined);
    const error = await refusal(get(`${server.url}/x`, { timeoutMs: 300, retries: 1 }));
    expect(error.code).toBe('REQUEST_ERROR');
    expect(error.message).toBe(`The service did not answer GET ${server.url}/x in time`);
    expect(error.hint).toBe('check it');
    expect(server.seen).toHaveLength(2);
  });

  it('a body that starts and never ends is cut by the same timeout', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"partial":');
    });
    const error = await refusal(get(`${server.url}/x`, { timeoutMs: 300, retries: 0 }));
    expect(error.message).toBe(`The service did not answer GET ${server.url}/x in time`);
  });

  it('nothing listening: "could not reach" with the code', async () => {
    const server = await serve(() => undefined);
    const port = new URL(server.url).port;
    await closers.pop()?.();
    const error = await refusal(get(`http://127.0.0.1:${port}/x`, { retries: 0 }));
    expect(error.message).toBe(`Could not reach the service for GET http://127.0.0.1:${port}/x: ECONNREFUSED`);
  });

  it('an abort during the wait before a retry ends the call at once, with no further request', async () => {
    const controller = new AbortController();
    // The wait the server asks for is long; the abort comes once the answer has been delivered.
    const server = await serve((_req, res) => {
      res.on('finish', () => setTimeout(() => controller.abort(), 300));
      json(res, 503, {}, { 'retry-after': '2' });
    });
    let settled = false;
    const pending = refusal(get(`${server.url}/x`, { signal: controller.signal }).finally(() => (settled = true)));
    await new Promise<void>((resolve) => controller.signal.addEventListener('abort', () => resolve()));
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(true);
    expect((await pending).message).toBe(`Could not reach the service for GET ${server.url}/x: ERR_ABORTED`);
    expect(server.seen).toHaveLength(1);
  });

  it('an abort in flight ends the attempt; a deadline (AbortSignal.timeout) reads as "in time"', async () => {
    const server = await serve(() => undefined);
    const error = await refusal(get(`${server.url}/x`, { signal: AbortSignal.timeout(200), timeoutMs: 60_000 }));
    expect(error.message).toBe(`The service did not answer GET ${server.url}/x in time`);
    expect(server.seen).toHaveLength(1);
  });
});

describe('answers and requests', () => {
  it('a body over 16 MiB is refused and not retried, declared or streamed', async () => {
    const chunk = Buffer.alloc(1024 * 1024, 'a');
    const declared = await serve((_req, res) => {
      res.writeHead(200, { 'content-length': String(17 * chunk.length) });
      res.write(chunk);
    });
    expect((await refusal(get(`${declared.url}/x`))).message).toBe(`The service answered GET ${declared.url}/x with more than 16 MiB`);
    expect(declared.seen).toHaveLength(1);

    const streamed = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const more = (): void => {
        while (res.write(chunk));
        res.once('drain', more);
      };
      more();
    });
    const error = await refusal(get(`${streamed.url}/x`));
    expect(error.code).toBe('REQUEST_ERROR');
    expect(error.message).toBe(`The service answered GET ${streamed.url}/x with more than 16 MiB`);
    expect(streamed.seen).toHaveLength(1);
  });

  it('an answer is read whole as UTF-8, whatever its chunks, with its status', async () => {
    const text = JSON.stringify({ note: 'Ӿ 1 — ₿ ✓ '.repeat(5000) });
    const server = await serve((_req, res) => {
      res.writeHead(418, { 'content-type': 'application/json' });
      const bytes = Buffer.from(text);
      // Split inside a multi-byte character.
      res.write(bytes.subarray(0, 9));
      res.end(bytes.subarray(9));
    });
    expect(await get(`${server.url}/x`)).toEqual({ status: 418, text });
  });

  it('a JSON body with its type and length; accept JSON; the path prefix and query of the URL kept; credentials as basic auth', async () => {
    const server = await serve((_req, res) => json(res, 200, {}));
    const base = server.url.replace('http://', 'http://us%40er:p%3Ass@');
    await exchange({ url: `${base}/prefix/v1/thing?x=1`, method: 'POST', headers: { 'x-api-key': 'k' }, body: { amount: '1', note: 'é' }, timeoutMs: 2_000, retries: 0, party: 'node', where: 'w', hint: 'h' });
    const [seen] = server.seen;
    expect(seen?.method).toBe('POST');
    expect(seen?.path).toBe('/prefix/v1/thing?x=1');
    expect(JSON.parse(seen?.body ?? '')).toEqual({ amount: '1', note: 'é' });
    expect(seen?.headers).toMatchObject({
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(seen?.body ?? '')),
      accept: 'application/json',
      'x-api-key': 'k',
      authorization: `Basic ${Buffer.from('us@er:p:ss').toString('base64')}`,
    });
  });

  it("the service's key headers; a GET has no body", async () => {
    const server = await serve((_req, res) => json(res, 200, { success: true, data: { ok: 1 }, error: null }));
    expect(await call({ baseUrl: `${server.url}/api/`, apiKey: 'secret-key' }, { method: 'GET', path: '/account/balance', safe: true })).toEqual({ ok: 1 });
    const [seen] = server.seen;
    expect(seen?.path).toBe('/api/account/balance');
    expect(seen?.body).toBe('');
    expect(seen?.headers).toMatchObject({ authorization: 'Bearer secret-key', 'x-api-key': 'secret-key', accept: 'application/json' });
    expect(seen?.headers['content-type']).toBeUndefined();
  });

  it('redirects are followed; keys stay with their origin; 303 turns a POST into a GET', async () => {
    const elsewhere = await serve((_req, res) => json(res, 200, { there: true }));
    const server = await serve((req, res) => {
      if (req.url === '/old') return void res.writeHead(307, { location: '/new' }).end();
      if (req.url === '/new') return void res.writeHead(308, { location: `${elsewhere.url}/moved` }).end();
      if (req.url === '/see-other') return void res.writeHead(303, { location: '/result' }).end();
      json(res, 200, { here: true });
    });
    const post = (path: string): Promise<{ status: number; text: string }> =>
      exchange({ url: `${server.url}${path}`, method: 'POST', headers: { authorization: 'Bearer k', 'x-api-key': 'k' }, body: { a: 1 }, timeoutMs: 2_000, retries: 0, party: 'service', where: 'w', hint: 'h' });

    expect(await post('/old')).toEqual({ status: 200, text: '{"there":true}' });
    expect(server.seen.map((s) => [s.method, s.path, s.body, s.headers['x-api-key']])).toEqual([
      ['POST', '/old', '{"a":1}', 'k'],
      ['POST', '/new', '{"a":1}', 'k'],
    ]);
    expect(elsewhere.seen.map((s) => [s.method, s.path, s.body])).toEqual([['POST', '/moved', '{"a":1}']]);
    expect(elsewhere.seen[0]?.headers.authorization).toBeUndefined();
    expect(elsewhere.seen[0]?.headers['x-api-key']).toBeUndefined();

    expect(await post('/see-other')).toEqual({ status: 200, text: '{"here":true}' });
    expect(server.seen.slice(2).map((s) => [s.method, s.path, s.body, s.headers.authorization])).toEqual([
      ['POST', '/see-other', '{"a":1}', 'Bearer k'],
      ['GET', '/result', '', 'Bearer k'],
    ]);
  });

  it('a redirect loop ends', async () => {
    const server = await serve((_req, res) => void res.writeHead(302, { location: '/again' }).end());
    expect((await refusal(get(`${server.url}/x`, { retries: 0 }))).message).toBe(`Could not reach the service for GET ${server.url}/x: ERR_TOO_MANY_REDIRECTS`);
    expect(server.seen).toHaveLength(11);
  });
});

describe('credentials in the URL never appear in an error', () => {
  const secret = 'hunter2secret';
  it.each<[string, Handler, Partial<Exchange>]>([
    ['no answer', () => undefined, { timeoutMs: 200 }],
    ['a dropped connection', (req) => req.socket.destroy(), {}],
    ['an oversized answer', (_req, res) => void res.writeHead(200, { 'content-length': String(64 * 1024 * 1024) }).write('x'), {}],
    ['a redirect loop', (_req, res) => void res.writeHead(302, { location: '/again' }).end(), {}],
  ])('%s', async (_name, handle, more) => {
    const server = await serve(handle);
    const base = server.url.replace('http://', `http://user:${secret}@`);
    const error = await refusal(call({ baseUrl: base, retries: 0, ...(more.timeoutMs === undefined ? {} : { timeoutMs: more.timeoutMs }) }, { method: 'GET', path: '/x', safe: true }));
    expect(error.code).toBe('REQUEST_ERROR');
    expect(`${error.message} ${error.hint ?? ''}`).not.toContain(secret);
    expect(error.message).toContain('http://***@127.0.0.1:');
    // The server was asked, with the credentials as basic auth.
    expect(server.seen[0]?.headers.authorization).toBe(`Basic ${Buffer.from(`user:${secret}`).toString('base64')}`);
  });

  it('a URL that cannot be parsed', async () => {
    const error = await refusal(new NodeClient({ url: `http://user:${secret}@[not a host]:1`, retries: 0 }).accountInfo(deriveAccount({ seed: '0'.repeat(64), index: 0 }).address));
    expect(error.code).toBe('REQUEST_ERROR');
    expect(error.message).not.toContain(secret);
    expect(error.message).toMatch(/ERR_INVALID_URL$/);
  });
});

/** A self-signed certificate for 127.0.0.1, made here; undefined when openssl is missing. */
function selfSigned(): { key: Buffer; cert: Buffer } | undefined {
  const dir = tempDirSync('nanopay-tls-');
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  return { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) };
}

describe('https', () => {
  const tls = selfSigned();
  // Skipped only where openssl is missing: the certificate is made with it.
  it.skipIf(tls === undefined)('verifies the certificate: refused when untrusted (not retried), answered once trusted', async () => {
    const pair = tls as { key: Buffer; cert: Buffer };
    const server = await serve((_req, res) => json(res, 200, { secure: true }), pair);
    const untrusted = await refusal(get(`${server.url}/x`));
    expect(untrusted.message).toBe(`Could not reach the service for GET ${server.url}/x: DEPTH_ZERO_SELF_SIGNED_CERT`);
    expect(server.seen).toHaveLength(0);

    // Trusted as NODE_EXTRA_CA_CERTS would make it, on the agent the transport uses (this worker's own).
    https.globalAgent.options.ca = pair.cert;
    try {
      const base = server.url.replace('https://', 'https://user:pw@');
      expect(await get(`${base}/prefix/x`)).toEqual({ status: 200, text: '{"secure":true}' });
      expect(server.seen[0]?.path).toBe('/prefix/x');
      expect(server.seen[0]?.headers.authorization).toBe(`Basic ${Buffer.from('user:pw').toString('base64')}`);
    } finally {
      delete https.globalAgent.options.ca;
    }
  });
});
