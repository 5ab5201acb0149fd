import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NanoPayError } from '../../../src/errors.js';
import type { LogEntry } from '../../../src/http/log.js';
import { RESPONDED, startHttpServer, type HttpServer, type HttpServerOptions, type Route } from '../../../src/http/server.js';
import { disconnectMidBody, expectEnvelopeError, httpCall, rawHttp, sendHostileRequests } from '../../helpers/network/raw-http.js';

/** Settles when the test says so: lets a test hold a handler in flight. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

const streamStopped = gate();
const slowStarted = gate();
const slowGate = gate();

const ROUTES: Route[] = [
  { method: 'GET', path: '/things/:id', handle: ({ params, query }) => ({ id: params.id, sort: query.get('sort') }) },
  { method: 'POST', path: '/things/:id', handle: ({ params, body }) => ({ id: params.id, body }) },
  { method: 'POST', path: '/echo', handle: ({ body }) => ({ body }) },
  { method: 'POST', path: '/form', form: true, handle: ({ body }) => ({ body }) },
  {
    method: 'POST',
    path: '/named',
    handle: ({ body }) => {
      if (typeof body.name !== 'string') throw new NanoPayError('INVALID_REQUEST', '"name" must be a string');
      return { name: body.name };
    },
  },
  { method: 'GET', path: '/keys/:key/page', secretParams: ['key'], handle: () => ({ ok: true }) },
  { method: 'GET', path: '/refused', handle: () => { throw new NanoPayError('INSUFFICIENT_FUNDS', 'Not enough'); } },
  { method: 'GET', path: '/bug', handle: () => { throw new TypeError('cannot read /home/alice/.secret of undefined'); } },
  { method: 'GET', path: '/bug-async', handle: async () => Promise.reject(new Error('db password=hunter2 rejected')) },
  {
    method: 'GET',
    path: '/page',
    handle: ({ response }) => {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end('<h1>Pay</h1>');
      return RESPONDED;
    },
  },
  {
    method: 'GET',
    path: '/events',
    endless: true,
    handle: ({ response, signal }) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write('data: first\n\n');
      signal.addEventListener('abort', () => {
        streamStopped.open();
        response.end();
      });
      return RESPONDED;
    },
  },
  {
    method: 'GET',
    path: '/slow',
    handle: async () => {
      slowStarted.open();
      await slowGate.promise;
      return { finished: true };
    },
  },
];

const lines: string[] = [];
let server: HttpServer;

async function start(options: Partial<HttpServerOptions> = {}): Promise<HttpServer> {
  return startHttpServer({ host: '127.0.0.1', port: 0, routes: ROUTES, maxBodyBytes: 1024, log: (l) => lines.push(l), ...options });
}

beforeAll(async () => {
  server = await start();
});

afterAll(async () => {
  await server.close();
});

describe('routes and the envelope', () => {
  it('decodes path parameters, reads the query, answers data in a 200 envelope', async () => {
    const reply = await httpCall(server.url, 'GET', '/things/a%20b%2Fc?sort=desc');
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(reply.body).toEqual({ success: true, data: { id: 'a b/c', sort: 'desc' }, error: null });
  });

  it('404 for an unknown path, 405 with Allow for a known one, 400 for a malformed escape', async () => {
    expectEnvelopeError(await httpCall(server.url, 'GET', '/nothing/here'), 404, 'NOT_FOUND');
    expectEnvelopeError(await httpCall(server.url, 'GET', '/things/'), 404, 'NOT_FOUND');
    const wrongMethod = await httpCall(server.url, 'DELETE', '/things/1');
    expectEnvelopeError(wrongMethod, 405, 'NOT_FOUND');
    expect(wrongMethod.headers.allow).toBe('GET, POST');
    expectEnvelopeError(await httpCall(server.url, 'GET', '/things/%E0%A4%A'), 400, 'INVALID_REQUEST');
  });

  it('a NanoPayError is its own envelope; anything else a 500 that tells nothing, logged', async () => {
    const refused = await httpCall(server.url, 'GET', '/refused');
    expectEnvelopeError(refused, 402, 'INSUFFICIENT_FUNDS');
    expect(refused.body.error?.message).toBe('Not enough');
    for (const path of ['/bug', '/bug-async']) {
      const bug = await httpCall(server.url, 'GET', path);
      expectEnvelopeError(bug, 500, 'INTERNAL_ERROR');
      expect(bug.body.error?.message).toBe('Internal error');
    }
    expect(lines).toContainEqual(expect.stringMatching(/^internal error on GET \/bug: cannot read/));
    expect((await httpCall(server.url, 'GET', '/things/1')).status).toBe(200);
  });

  it('a handler may write its own response: an HTML page, a stream stopped when the client goes away', async () => {
    const page = await new Promise<{ type: string | undefined; text: string }>((resolve, reject) => {
      request(`${server.url}/page`, (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ type: res.headers['content-type'], text }));
      })
        .on('error', reject)
        .end();
    });
    expect(page).toEqual({ type: 'text/html; charset=utf-8', text: '<h1>Pay</h1>' });

    const first = await new Promise<string>((resolve, reject) => {
      const req = request(`${server.url}/events`, (res) => {
        res.once('data', (d: Buffer) => {
          resolve(d.toString());
          req.destroy();
        });
      });
      req.on('error', () => undefined);
      req.on('close', () => reject(new Error('closed before any event')));
      req.end();
    });
    expect(first).toBe('data: first\n\n');
    await streamStopped.promise;
  });
});

describe('bodies', () => {
  it('no body needs no Content-Type and reads as {}', async () => {
    expect((await httpCall(server.url, 'POST', '/echo')).body).toEqual({ success: true, data: { body: {} }, error: null });
    expect((await httpCall(server.url, 'POST', '/echo', { body: '' })).body.data).toEqual({ body: {} });
    expect((await rawHttp(server.url, 'POST', '/echo', { 'Transfer-Encoding': 'chunked' }, '0\r\n\r\n')).body.data).toEqual({ body: {} });
    expect((await rawHttp(server.url, 'POST', '/echo', { 'Content-Length': '3' }, ' \r\n')).body.data).toEqual({ body: {} });
  });

  it('a body must be a JSON object sent as application/json', async () => {
    const json = { 'content-type': 'application/json; charset=utf-8' };
    expect((await httpCall(server.url, 'POST', '/things/7', { headers: json, body: '{"a":null}' })).body.data).toEqual({ id: '7', body: { a: null } });
    expectEnvelopeError(await httpCall(server.url, 'POST', '/echo', { body: '{"a":1}' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    expectEnvelopeError(await httpCall(server.url, 'POST', '/echo', { headers: { 'content-type': 'text/plain' }, body: '{"a":1}' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    expectEnvelopeError(await httpCall(server.url, 'POST', '/echo', { headers: json, body: '{"a":' }), 400, 'INVALID_JSON');
    expectEnvelopeError(await httpCall(server.url, 'POST', '/echo', { headers: json, body: '"text"' }), 400, 'INVALID_REQUEST');
    expectEnvelopeError(await httpCall(server.url, 'POST', '/echo', { headers: json, body: 'null' }), 400, 'INVALID_REQUEST');
  });

  it("a form route takes an HTML form's fields (the first of each name) and nothing else", async () => {
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    expect((await httpCall(server.url, 'POST', '/form', { headers: form, body: 'a=1&b=x%20y&a=2&__proto__=z' })).body.data).toEqual({ body: { a: '1', b: 'x y', ['__proto__']: 'z' } });
    expect((await httpCall(server.url, 'POST', '/form')).body.data).toEqual({ body: {} });
    expectEnvelopeError(await httpCall(server.url, 'POST', '/form', { headers: { 'content-type': 'application/json' }, body: '{"a":1}' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    expectEnvelopeError(await httpCall(server.url, 'POST', '/echo', { headers: form, body: 'a=1' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it('without requireJsonContentType any declared type is read as JSON', async () => {
    const lenient = await start({ requireJsonContentType: false });
    try {
      expect((await httpCall(lenient.url, 'POST', '/echo', { headers: { 'content-type': 'text/plain' }, body: '{"a":1}' })).body.data).toEqual({ body: { a: 1 } });
    } finally {
      await lenient.close();
    }
  });

  it('a body over the limit is 413 and the connection closes, announced or not', async () => {
    const big = JSON.stringify({ a: 'x'.repeat(2000) });
    const announced = await httpCall(server.url, 'POST', '/echo', { headers: { 'content-type': 'application/json' }, body: big });
    expectEnvelopeError(announced, 413, 'PAYLOAD_TOO_LARGE');
    expect(announced.headers.connection).toBe('close');
    const chunked = `${big.length.toString(16)}\r\n${big}\r\n0\r\n\r\n`;
    expectEnvelopeError(await rawHttp(server.url, 'POST', '/echo', { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' }, chunked), 413, 'PAYLOAD_TOO_LARGE');
  });
});

describe('guards', () => {
  let guarded: HttpServer;
  const token = 'a-token-long-enough-to-count';
  beforeAll(async () => {
    guarded = await start({ checkHost: true, refuseWebPages: true, token });
  });
  afterAll(async () => {
    await guarded.close();
  });
  const auth = { authorization: `Bearer ${token}` };

  it('the Host must name the listen address', async () => {
    expect((await httpCall(guarded.url, 'GET', '/things/1', { headers: auth })).status).toBe(200);
    expect((await httpCall(guarded.url, 'GET', '/things/1', { headers: { ...auth, host: `localhost:${guarded.port}` } })).status).toBe(200);
    expectEnvelopeError(await httpCall(guarded.url, 'GET', '/things/1', { headers: { ...auth, host: `evil.example:${guarded.port}` } }), 403, 'FORBIDDEN');
    expectEnvelopeError(await httpCall(guarded.url, 'GET', '/things/1', { headers: { ...auth, host: 'localhost:1' } }), 403, 'FORBIDDEN');
  });

  it('web pages are refused: any Origin, a cross-site fetch', async () => {
    expectEnvelopeError(await httpCall(guarded.url, 'GET', '/things/1', { headers: { ...auth, origin: 'null' } }), 403, 'FORBIDDEN');
    expectEnvelopeError(await httpCall(guarded.url, 'GET', '/things/1', { headers: { ...auth, 'sec-fetch-site': 'cross-site' } }), 403, 'FORBIDDEN');
    expectEnvelopeError(await httpCall(guarded.url, 'GET', '/things/1', { headers: { ...auth, 'sec-fetch-site': 'same-site' } }), 403, 'FORBIDDEN');
    expect((await httpCall(guarded.url, 'GET', '/things/1', { headers: { ...auth, 'sec-fetch-site': 'none' } })).status).toBe(200);
  });

  it('the token is required on every route, known or not', async () => {
    expectEnvelopeError(await httpCall(guarded.url, 'GET', '/things/1'), 401, 'UNAUTHORIZED');
    expectEnvelopeError(await httpCall(guarded.url, 'GET', '/nothing'), 401, 'UNAUTHORIZED');
    expectEnvelopeError(await httpCall(guarded.url, 'GET', '/things/1', { headers: { authorization: `Bearer ${token}x` } }), 401, 'UNAUTHORIZED');
    expectEnvelopeError(await httpCall(guarded.url, 'GET', '/things/1', { headers: { authorization: token } }), 401, 'UNAUTHORIZED');
    expect((await httpCall(guarded.url, 'GET', '/things/1', { headers: { authorization: `bearer ${token}` } })).status).toBe(200);
  });
});

describe('hostile requests', () => {
  it('are all answered with an envelope, and the server keeps answering', async () => {
    await sendHostileRequests(server.url, { getWithParam: '/things/', get: '/page', post: '/named', headersOnly: [400, 'INVALID_REQUEST'] });
    expect((await httpCall(server.url, 'GET', '/things/1')).body.data).toEqual({ id: '1', sort: null });
  });

  it('headers that never end get a 408 envelope', async () => {
    const impatient = await start({ headersTimeoutMs: 200, requestTimeoutMs: 300 });
    try {
      const { connect } = await import('node:net');
      const reply = await new Promise<string>((resolve) => {
        const socket = connect(impatient.port, '127.0.0.1', () => socket.write(`GET /things/1 HTTP/1.1\r\nHost: 127.0.0.1:${impatient.port}\r\n`));
        let text = '';
        socket.on('data', (d: Buffer) => (text += d.toString()));
        socket.on('error', () => undefined);
        socket.on('close', () => resolve(text));
      });
      expect(reply).toMatch(/^HTTP\/1\.1 408 /);
      expect(JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4))).toMatchObject({ success: false, data: null, error: { error: 'TIMEOUT' } });
    } finally {
      await impatient.close();
    }
  });
});

describe('the log', () => {
  it('has one line per request: method, path, status, ms; never a query or a secret parameter', async () => {
    const before = lines.length;
    await httpCall(server.url, 'GET', '/things/9?token=sekrit');
    await httpCall(server.url, 'GET', '/keys/sk_live_abc/page');
    await httpCall(server.url, 'GET', '/nothing');
    await disconnectMidBody(server.url, 'POST', '/echo');
    // The line is written when the connection's answer closes, which may follow the reply by a tick.
    for (let i = 0; i < 100 && lines.length < before + 4; i++) await new Promise((r) => setTimeout(r, 10));
    expect(lines.slice(before)).toEqual([
      expect.stringMatching(/^GET \/things\/9 200 \d+ms$/),
      expect.stringMatching(/^GET \/keys\/\*\*\*\/page 200 \d+ms$/),
      expect.stringMatching(/^GET \/nothing 404 \d+ms$/),
      expect.stringMatching(/^POST \/echo 499 \d+ms$/),
    ]);
    expect(lines.join('\n')).not.toMatch(/sekrit|sk_live_abc/);
  });

  it('masks a secret parameter whatever the method asked, in the log and in the answer', async () => {
    const before = lines.length;
    const wrongMethod = await httpCall(server.url, 'POST', '/keys/sk_live_xyz/page');
    expectEnvelopeError(wrongMethod, 405, 'NOT_FOUND');
    for (let i = 0; i < 100 && lines.length < before + 1; i++) await new Promise((r) => setTimeout(r, 10));
    expect(lines.slice(before)).toEqual([expect.stringMatching(/^POST \/keys\/\*\*\*\/page 405 \d+ms$/)]);
    expect(JSON.stringify(wrongMethod.body)).not.toContain('sk_live_xyz');
  });

  it("gives every request an id, the client's X-Request-Id when well-formed and short, in the answer and the structured line", async () => {
    const entries: { line: string; entry?: LogEntry }[] = [];
    const logged = await start({ log: (line, entry) => entries.push({ line, ...(entry === undefined ? {} : { entry }) }) });
    try {
      const chosen = await httpCall(logged.url, 'GET', '/things/1', { headers: { 'x-request-id': 'shop-7f3a.42' } });
      expect(chosen.headers['x-request-id']).toBe('shop-7f3a.42');
      for (const hostile of ['a'.repeat(65), 'x"},{"level":"error', 'has space']) {
        const made = await httpCall(logged.url, 'GET', '/things/2', { headers: { 'x-request-id': hostile } });
        expect(made.headers['x-request-id']).toMatch(/^[0-9a-f]{16}$/);
      }
      const plain = await httpCall(logged.url, 'GET', '/nothing');
      expect(plain.headers['x-request-id']).toMatch(/^[0-9a-f]{16}$/);
      for (let i = 0; i < 100 && entries.length < 5; i++) await new Promise((r) => setTimeout(r, 10));
      const requests = entries.filter((e) => e.entry?.event === 'request').map((e) => e.entry?.fields);
      expect(requests[0]).toMatchObject({ request_id: 'shop-7f3a.42', method: 'GET', path: '/things/1', status: 200 });
      expect(requests.at(-1)).toMatchObject({ request_id: plain.headers['x-request-id'], path: '/nothing', status: 404 });
      expect(new Set(requests.map((f) => f?.request_id)).size).toBe(5);
    } finally {
      await logged.close();
    }
  });
});

describe('public routes', () => {
  it('are answered without the token; every other route still needs it', async () => {
    const guarded = await start({ token: 'the-token-of-this-server', routes: [...ROUTES, { method: 'GET', path: '/healthz', public: true, handle: () => ({ status: 'ok' }) }] });
    try {
      expect((await httpCall(guarded.url, 'GET', '/healthz')).body).toEqual({ success: true, data: { status: 'ok' }, error: null });
      expectEnvelopeError(await httpCall(guarded.url, 'POST', '/healthz'), 401, 'UNAUTHORIZED');
      expectEnvelopeError(await httpCall(guarded.url, 'GET', '/things/1'), 401, 'UNAUTHORIZED');
      expectEnvelopeError(await httpCall(guarded.url, 'GET', '/nothing'), 401, 'UNAUTHORIZED');
      expect((await httpCall(guarded.url, 'GET', '/things/1', { headers: { authorization: 'Bearer the-token-of-this-server' } })).status).toBe(200);
    } finally {
      await guarded.close();
    }
  });
});

describe('listening and closing', () => {
  it('a port in use is a CONFLICT', async () => {
    const failure = await start({ port: server.port }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(NanoPayError);
    expect(failure).toMatchObject({ code: 'CONFLICT' });
  });

  it('close() ends idle keep-alive connections, lets an answer in flight finish and stops endless streams with a retry hint', async () => {
    const closing = await start();
    const { Agent } = await import('node:http');
    const agent = new Agent({ keepAlive: true });
    const get = (path: string, onFirstData?: () => void, via: InstanceType<typeof Agent> | false = agent): Promise<{ status: number; connection: string | undefined; text: string }> =>
      new Promise((resolve, reject) => {
        request(`${closing.url}${path}`, { agent: via }, (res) => {
          let text = '';
          res.on('data', (d: Buffer) => {
            text += d.toString();
            onFirstData?.();
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, text }));
        })
          .on('error', reject)
          .end();
      });
    // An idle keep-alive connection, an answer held in flight, a stream open.
    expect((await get('/things/1')).connection).toBe('keep-alive');
    const slow = get('/slow');
    await slowStarted.promise;
    const streaming = gate();
    const stream = get('/events', streaming.open);
    await streaming.promise;

    const closed = closing.close();
    expect((await stream).text).toBe('data: first\n\nretry: 3000\n\n');
    slowGate.open();
    expect(await slow).toEqual({ status: 200, connection: 'close', text: JSON.stringify({ success: true, data: { finished: true }, error: null }) });
    await closed;
    agent.destroy();
    // A new connection: a pooled one may still be seen as open by the client for a moment (ECONNRESET), which says nothing of listening.
    await expect(get('/things/1', undefined, false)).rejects.toThrow(/ECONNREFUSED/);
  });

  it("close() does not cut an answer in flight until the grace runs out, then aborts its handler's signal", async () => {
    const started = gate();
    let seen: AbortSignal | undefined;
    const held: Route = {
      method: 'GET',
      path: '/held',
      handle: ({ signal }) => {
        seen = signal;
        started.open();
        return new Promise((resolve) => signal.addEventListener('abort', () => resolve({ cut: true })));
      },
    };
    const closing = await start({ routes: [held], closeGraceMs: 200 });
    const answer = httpCall(closing.url, 'GET', '/held').catch((error: Error) => error);
    await started.promise;
    const closed = closing.close();
    expect(seen?.aborted).toBe(false);
    await closed;
    expect(seen?.aborted).toBe(true);
    expect(await answer).toBeInstanceOf(Error);
  });
});
