import { request } from 'node:http';
import { connect } from 'node:net';
import { expect } from 'vitest';

export interface Envelope {
  success: boolean;
  data: Record<string, any> | null;
  error: { error: string; message: string } | null;
}

export interface RawReply {
  status: number;
  headers: Record<string, string>;
  body: Envelope;
}

function hostPort(base: string): { host: string; port: number; hostHeader: string } {
  const url = new URL(base);
  return { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port), hostHeader: url.host };
}

/** Parses one HTTP/1.1 response; the body must be JSON (the envelope). */
function parseResponse(text: string): RawReply {
  const split = text.indexOf('\r\n\r\n');
  if (split === -1) throw new Error(`no complete response: ${JSON.stringify(text.slice(0, 200))}`);
  const [statusLine, ...lines] = text.slice(0, split).split('\r\n');
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  const raw = text.slice(split + 4);
  let body: Envelope;
  try {
    body = JSON.parse(raw) as Envelope;
  } catch {
    throw new Error(`not JSON (${statusLine}): ${raw.slice(0, 200)}`);
  }
  return { status: Number((statusLine ?? '').split(' ')[1]), headers, body };
}

/**
 * Writes `bytes` on a new connection, exactly as given, and parses what comes
 * back before the server closes it. Requests should ask for `Connection: close`.
 */
export function rawRequest(base: string, bytes: string | Buffer): Promise<RawReply> {
  const { host, port } = hostPort(base);
  return new Promise((resolve, reject) => {
    const socket = connect(port, host);
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    // A server that answers early and closes may reset a connection we are still writing on; what it said still counts.
    socket.on('error', () => undefined);
    socket.on('close', () => {
      try {
        resolve(parseResponse(Buffer.concat(chunks).toString('utf8')));
      } catch (error) {
        reject(error as Error);
      }
    });
    socket.write(bytes);
  });
}

/** A request line and headers (Host and Connection: close added), then `body` as it is. */
export function rawHttp(base: string, method: string, target: string, headers: Record<string, string> = {}, body = ''): Promise<RawReply> {
  const lines = [`${method} ${target} HTTP/1.1`, `Host: ${hostPort(base).hostHeader}`, 'Connection: close', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  return rawRequest(base, `${lines.join('\r\n')}\r\n\r\n${body}`);
}

/**
 * A request with node:http and only the headers given (node:http adds Host and,
 * for a body, Content-Length; never a Content-Type), like a plain program's client.
 */
export function httpCall(base: string, method: string, path: string, options: { headers?: Record<string, string>; body?: string } = {}): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, base), { method, headers: options.headers ?? {}, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        try {
          resolve({ status: res.statusCode ?? 0, headers: res.headers as Record<string, string>, body: JSON.parse(text) as Envelope });
        } catch {
          reject(new Error(`not JSON (HTTP ${res.statusCode}): ${text.slice(0, 200)}`));
        }
      });
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Sends headers announcing a body, part of it, then goes away. */
export function disconnectMidBody(base: string, method: string, target: string): Promise<void> {
  const { host, port, hostHeader } = hostPort(base);
  return new Promise((resolve) => {
    const socket = connect(port, host, () => {
      socket.write(`${method} ${target} HTTP/1.1\r\nHost: ${hostHeader}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"amount": "0.`);
      // Give the server the headers and the first bytes as their own packets before the connection goes.
      setTimeout(() => socket.destroy(), 50);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => resolve());
  });
}

export function expectEnvelopeError(reply: RawReply, status: number, code: string): void {
  expect([reply.status, reply.body.success, reply.body.data, reply.body.error?.error]).toEqual([status, false, null, code]);
  expect(typeof reply.body.error?.message).toBe('string');
}

/** Where the hostile requests go on a given server. */
export interface HostileTargets {
  /** A GET route with one path parameter, as a prefix ending in "/". */
  getWithParam: string;
  /** A GET route without parameters. */
  get: string;
  /** A POST route that reads a JSON body. */
  post: string;
  /** The status and code a POST to `post` with headers only (no body, no Content-Type) gets. */
  headersOnly: [number, string];
}

/**
 * Requests that must neither end a server nor get anything but an envelope:
 * odd targets, bad escapes, absurd methods, oversized and cut bodies, bad headers.
 */
export async function sendHostileRequests(base: string, t: HostileTargets): Promise<void> {
  expectEnvelopeError(await rawHttp(base, 'GET', '//'), 404, 'NOT_FOUND');
  expectEnvelopeError(await rawHttp(base, 'GET', '//evil.example/x'), 404, 'NOT_FOUND');
  expectEnvelopeError(await rawHttp(base, 'POST', '//evil.example/x', { 'Content-Length': '2', 'Content-Type': 'application/json' }, '{}'), 404, 'NOT_FOUND');
  expectEnvelopeError(await rawHttp(base, 'GET', '/%'), 404, 'NOT_FOUND');
  expectEnvelopeError(await rawHttp(base, 'GET', `${t.getWithParam}%E0%A4%A`), 400, 'INVALID_REQUEST');
  expectEnvelopeError(await rawHttp(base, 'GET', `${t.getWithParam}%`), 400, 'INVALID_REQUEST');
  expectEnvelopeError(await rawHttp(base, 'GET', '*'), 400, 'INVALID_REQUEST');
  expectEnvelopeError(await rawHttp(base, 'GET', 'http://evil.example/x'), 400, 'INVALID_REQUEST');
  // Methods: one Node's parser does not know, one it knows that no route has, CONNECT, and bytes that are not HTTP.
  expectEnvelopeError(await rawHttp(base, 'FROBNICATE', t.get), 400, 'INVALID_REQUEST');
  const propfind = await rawHttp(base, 'PROPFIND', t.get);
  expectEnvelopeError(propfind, 405, 'NOT_FOUND');
  expect(propfind.headers.allow).toBe('GET');
  expectEnvelopeError(await rawHttp(base, 'CONNECT', 'evil.example:443'), 405, 'NOT_FOUND');
  expectEnvelopeError(await rawRequest(base, '\x00\x01\x02 not http at all\r\n\r\n'), 400, 'INVALID_REQUEST');
  // Headers: too large, an expectation we do not meet, a header-only POST.
  expectEnvelopeError(await rawHttp(base, 'GET', t.get, { 'X-Filler': 'a'.repeat(20_000) }), 431, 'PAYLOAD_TOO_LARGE');
  expectEnvelopeError(await rawHttp(base, 'POST', t.post, { Expect: 'the-impossible' }), 417, 'INVALID_REQUEST');
  expectEnvelopeError(await rawHttp(base, 'POST', t.post), t.headersOnly[0], t.headersOnly[1]);
  // Bodies: announced too large, sent too large without a length, not JSON, not an object.
  const huge = 'x'.repeat(1024 * 1024);
  const announced = await rawHttp(base, 'POST', t.post, { 'Content-Type': 'application/json', 'Content-Length': String(huge.length) }, huge);
  expectEnvelopeError(announced, 413, 'PAYLOAD_TOO_LARGE');
  expect(announced.headers.connection).toBe('close');
  const chunk = `${huge.length.toString(16)}\r\n${huge}\r\n0\r\n\r\n`;
  expectEnvelopeError(await rawHttp(base, 'POST', t.post, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' }, chunk), 413, 'PAYLOAD_TOO_LARGE');
  expectEnvelopeError(await rawHttp(base, 'POST', t.post, { 'Content-Type': 'application/json', 'Content-Length': '5' }, '{"a":'), 400, 'INVALID_JSON');
  expectEnvelopeError(await rawHttp(base, 'POST', t.post, { 'Content-Type': 'application/json', 'Content-Length': '6' }, '[1, 2]'), 400, 'INVALID_REQUEST');
  // Clients that go away: mid-body, and mid-headers.
  await disconnectMidBody(base, 'POST', t.post);
  await new Promise<void>((resolve) => {
    const { host, port } = hostPort(base);
    const socket = connect(port, host, () => socket.end('GET / HTTP/1.1\r\nHo'));
    // Whatever comes back is read, so the server's end of the connection reaches us.
    socket.resume();
    socket.on('error', () => undefined);
    socket.on('close', () => resolve());
  });
}
