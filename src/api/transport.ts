import type { ClientRequest, IncomingHttpHeaders, IncomingMessage, request as httpRequest } from 'node:http';
import { createRequire } from 'node:module';
import { NanoPayError, redactUrl } from '../errors.js';
import { PROXY_AUTH, ProxyRefusal, bareHost, proxyFor, type Proxy } from './proxy.js';
import { SANDBOX_HEADER, noteSandboxAnswer } from './sandbox-mark.js';
import { waitFor } from './waits.js';

/**
 * One JSON exchange over node:http / node:https: what the service's and the node's clients need
 * from an HTTP client (a timeout per attempt, retries of safe calls as got made them, an abort
 * signal, credentials in the URL, redirects, a bound on the answer's size), without loading one:
 * got cost every command that made a request about a quarter of its CPU.
 */
export interface Exchange {
  /** May carry credentials (user:pass@host): sent as basic auth, never shown. */
  url: string;
  method: 'GET' | 'POST';
  /** Besides accept, content-type, content-length and user-agent, which are set here. */
  headers: Record<string, string>;
  /** Sent as JSON. */
  body?: unknown;
  /** For the whole of each attempt: connecting, the server's answer and its body. */
  timeoutMs: number;
  /** For the whole call, every attempt and the waits between them (NANOPAY_TIMEOUT, --timeout). */
  deadlineMs?: number;
  /** 0 for a call that must not be repeated (a write). */
  retries: number;
  /** Stops the attempt in flight and any wait for a retry. */
  signal?: AbortSignal;
  /** For messages: who is asked ("the service did not answer …"), the call already redacted, what to check. */
  party: 'service' | 'node' | 'work server' | 'rate source';
  where: string;
  hint: string;
  /** The largest answer read (default MAX_ANSWER_BYTES): a server sending more is refused. */
  maxAnswerBytes?: number;
}

export interface Answer {
  status: number;
  text: string;
  /** Present when the answer was marked as the sandbox's (Nanopay-Sandbox: 1). */
  sandbox?: true;
}

/** More than any answer of the service or a node; a server sending more is refused, not buffered. */
const MAX_ANSWER_BYTES = 16 * 1024 * 1024;
const MAX_REDIRECTS = 10;
const sizeText = (bytes: number): string => (bytes >= 1024 * 1024 ? `${bytes / 1024 / 1024} MiB` : `${bytes / 1024} KiB`);
/** Backoff 1 s, 2 s, 2 s…; a Retry-After longer than this is not waited for (the answer is returned). */
const BACKOFF_LIMIT_MS = 2_000;
/** The failures got retried by default: transient on the network or at the server. */
const RETRY_CODES = new Set(['ETIMEDOUT', 'ECONNRESET', 'EADDRINUSE', 'ECONNREFUSED', 'EPIPE', 'ENOTFOUND', 'ENETUNREACH', 'EAI_AGAIN']);
const RETRY_STATUSES = new Set([408, 413, 429, 500, 502, 503, 504, 521, 522, 524]);
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/** An attempt that got no answer: `code` (Node's, or what went wrong) for the message, and whether it ran out of time. */
class NoAnswer extends Error {
  constructor(
    readonly code: string,
    readonly timedOut = false,
    /** The proxy the attempt went through, as shown (no credentials). */
    readonly via?: string,
  ) {
    super(code);
  }
}

interface Reply {
  status: number;
  text: string;
  headers: IncomingHttpHeaders;
}

interface Hop {
  url: URL;
  method: string;
  headers: Record<string, string>;
  payload: Buffer | undefined;
}

function abortFailure(signal: AbortSignal): NoAnswer {
  // A deadline given as AbortSignal.timeout reads as "did not answer in time", as with got.
  const reason: unknown = signal.reason;
  return reason instanceof Error && reason.name === 'TimeoutError' ? new NoAnswer('ETIMEDOUT', true) : new NoAnswer('ERR_ABORTED');
}

function failure(error: Error, proxy?: Proxy): NoAnswer | ProxyRefusal {
  // A proxy that wants credentials is not a failure to retry: it goes up as it is.
  if (error instanceof ProxyRefusal && error.code === PROXY_AUTH) return error;
  // The proxy's own refusal already names it (without credentials).
  if (error instanceof ProxyRefusal) return new NoAnswer(error.message);
  const code = (error as { code?: unknown }).code;
  return new NoAnswer(typeof code === 'string' ? code : redactUrl(error.message), false, proxy?.shown);
}

function parseUrl(text: string, base?: URL): URL {
  try {
    return new URL(text, base);
  } catch {
    // Not the text: it may hold credentials.
    throw new NoAnswer('ERR_INVALID_URL');
  }
}

function decoded(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

const require = createRequire(import.meta.url);

/**
 * node:https's or node:http's request, the module loaded at the first call: commands that make none do not pay for
 * them (https also loads tls). Required, not imported: importing node:http builds its ES module facade, which reads
 * every export, http.WebSocket among them, and so loads undici (~10 ms of every command that makes a request).
 */
function requestFor(protocol: string): typeof httpRequest {
  return (require(protocol === 'https:' ? 'node:https' : 'node:http') as { request: typeof httpRequest }).request;
}

/**
 * How a request goes through a proxy: an https target through a CONNECT
 * tunnel (TLS end to end), an http one in absolute form to the proxy, as curl does.
 */
async function viaProxy(proxy: Proxy, target: URL, headers: Record<string, string>): Promise<(method: string) => ClientRequest> {
  if (target.protocol === 'https:') {
    const { TunnelAgent } = await import('./tunnel.js');
    const request = requestFor('https:');
    return (method) => request(target, { method, headers, agent: new TunnelAgent(proxy, true) });
  }
  const request = requestFor(proxy.url.protocol);
  const port = proxy.url.port === '' ? (proxy.url.protocol === 'https:' ? 443 : 80) : Number(proxy.url.port);
  const sent = { ...headers, host: target.host, ...(proxy.authorization === undefined ? {} : { 'proxy-authorization': proxy.authorization }) };
  return (method) => request({ host: bareHost(proxy.url.hostname), port, path: target.href, method, headers: sent, agent: false });
}

/** One request and its whole answer, within the timeout. */
async function hop(h: Hop, timeoutMs: number, signal: AbortSignal | undefined, where: string, party: string, maxBytes: number): Promise<Reply> {
  if (h.url.protocol !== 'http:' && h.url.protocol !== 'https:') throw new NoAnswer('ERR_UNSUPPORTED_PROTOCOL');
  const request = requestFor(h.url.protocol);
  if (signal?.aborted) throw abortFailure(signal);
  const headers = { ...h.headers };
  const target = new URL(h.url);
  if (target.username !== '' || target.password !== '') {
    // As got did: credentials in the URL are the authorization.
    headers.authorization = `Basic ${Buffer.from(`${decoded(target.username)}:${decoded(target.password)}`).toString('base64')}`;
    target.username = '';
    target.password = '';
  }
  const proxy = proxyFor(target);
  const proxied = proxy === undefined ? undefined : await viaProxy(proxy, target, headers);
  return new Promise<Reply>((resolve, reject) => {
    let req: ClientRequest | undefined;
    let settled = false;
    const finish = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      outcome();
    };
    const fail = (error: Error): void => finish(() => {
      req?.destroy();
      reject(error);
    });
    const onAbort = (): void => fail(abortFailure(signal as AbortSignal));
    const timer = setTimeout(() => fail(new NoAnswer('ETIMEDOUT', true, proxy?.shown)), timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      // The global agent, as got used: its idle keep-alive sockets are unref'd, so they never hold a command open.
      req = proxied === undefined ? request(target, { method: h.method, headers }) : proxied(h.method);
    } catch (error) {
      // A header Node refuses (e.g. a key with a line break).
      fail(failure(error as Error, proxy));
      return;
    }
    req.on('error', (error) => fail(failure(error, proxy)));
    req.on('response', (res: IncomingMessage) => {
      if (proxy !== undefined && res.statusCode === 407 && target.protocol === 'http:') {
        return fail(new ProxyRefusal(PROXY_AUTH, `the proxy ${proxy.shown} refused the request: 407 Proxy Authentication Required`));
      }
      const tooBig = (): void => fail(new NanoPayError('REQUEST_ERROR', `The ${party} answered ${where} with more than ${sizeText(maxBytes)}`));
      if (Number(res.headers['content-length']) > maxBytes) return tooBig();
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) tooBig();
        else chunks.push(chunk);
      });
      res.on('error', (error) => fail(failure(error, proxy)));
      // A connection lost mid-body closes without an end.
      res.on('close', () => {
        // Also after every whole answer: the error (and its stack) is made only when it is one.
        if (!settled) fail(new NoAnswer('ECONNRESET'));
      });
      res.on('end', () => finish(() => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') })));
    });
    req.end(h.payload);
  });
}

/** The next request of a redirect, as got made it; undefined when the answer is not one. */
function redirected(h: Hop, reply: Reply): Hop | undefined {
  const location = reply.headers.location;
  if (!REDIRECT_STATUSES.has(reply.status) || location === undefined) return undefined;
  const url = parseUrl(Buffer.from(location, 'binary').toString(), h.url);
  const headers = { ...h.headers };
  if (url.origin === h.url.origin) {
    url.username = h.url.username;
    url.password = h.url.password;
  } else {
    // Keys are for the server they were configured for.
    delete headers.authorization;
    delete headers['x-api-key'];
  }
  if (reply.status === 303 && h.method !== 'GET') {
    delete headers['content-type'];
    delete headers['content-length'];
    return { url, method: 'GET', headers, payload: undefined };
  }
  return { ...h, url, headers };
}

/** An attempt: the request, and the redirects it leads to. */
async function attempt(first: Hop, call: Exchange): Promise<Reply> {
  let h = first;
  for (let hops = 0; ; hops++) {
    const reply = await hop(h, call.timeoutMs, call.signal, call.where, call.party, call.maxAnswerBytes ?? MAX_ANSWER_BYTES);
    const next = redirected(h, reply);
    if (next === undefined) return reply;
    if (hops === MAX_REDIRECTS) throw new NoAnswer('ERR_TOO_MANY_REDIRECTS');
    h = next;
  }
}

/** Milliseconds a Retry-After header asks for (seconds or a date), if it says. */
function retryAfterMs(value: string | undefined): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** How long to wait before retrying after this answer, or undefined for no retry. */
function delayAfter(reply: Reply, backoff: number): number | undefined {
  if (!RETRY_STATUSES.has(reply.status)) return undefined;
  const asked = retryAfterMs(reply.headers['retry-after']);
  // Never sooner than the server asks, never longer than the backoff limit: else its answer stands.
  if (asked !== undefined) return asked <= BACKOFF_LIMIT_MS ? asked : undefined;
  // A body too large stays too large, unless the server says when to come back.
  return reply.status === 413 ? undefined : backoff;
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortFailure(signal));
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortFailure(signal as AbortSignal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * The answer's status and body as text (the caller reads the status: HTTP errors are answers).
 * REQUEST_ERROR when no answer came, after the retries `call.retries` allows.
 */
export async function exchange(call: Exchange): Promise<Answer> {
  const attempts = call.retries + 1;
  const wait = waitFor({ party: `the ${call.party}`, where: call.where, attempts });
  const bound = call.deadlineMs === undefined ? undefined : AbortSignal.timeout(call.deadlineMs);
  const signal = bound === undefined ? call.signal : call.signal === undefined ? bound : AbortSignal.any([call.signal, bound]);
  const deadline = call.deadlineMs === undefined ? Infinity : Date.now() + call.deadlineMs;
  let tried = 0;
  try {
    const url = parseUrl(call.url);
    const payload = call.body === undefined ? undefined : Buffer.from(JSON.stringify(call.body));
    const headers: Record<string, string> = {
      ...call.headers,
      accept: 'application/json',
      'user-agent': 'nanopay',
      ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(payload.length) }),
    };
    const first: Hop = { url, method: call.method, headers, payload };
    for (; ; tried++) {
      const backoff = Math.min(2 ** tried * 1000, BACKOFF_LIMIT_MS);
      let delay: number | undefined;
      let reason: string;
      wait.attempt(tried + 1);
      try {
        // No attempt runs past the call's deadline.
        const reply = await attempt(first, { ...call, signal, timeoutMs: Math.max(1, Math.min(call.timeoutMs, deadline - Date.now())) });
        noteSandboxAnswer(reply.headers[SANDBOX_HEADER]);
        delay = tried < call.retries ? delayAfter(reply, backoff) : undefined;
        if (delay === undefined) return { status: reply.status, text: reply.text, ...(reply.headers[SANDBOX_HEADER] === '1' ? { sandbox: true as const } : {}) };
        reason = `HTTP ${reply.status}`;
      } catch (error) {
        const retry = error instanceof NoAnswer && RETRY_CODES.has(error.code) && tried < call.retries && signal?.aborted !== true;
        if (!retry) throw error;
        delay = backoff;
        reason = error.code;
      }
      wait.retrying(tried + 1, reason, delay);
      await pause(delay, signal);
    }
  } catch (error) {
    if (error instanceof ProxyRefusal && error.code === PROXY_AUTH) {
      throw new NanoPayError('PROXY_AUTH_REQUIRED', `Could not reach the ${call.party} for ${call.where}: ${error.message}`, {
        hint: 'The proxy (HTTPS_PROXY, HTTP_PROXY or ALL_PROXY) wants a user and password it accepts: give them in its URL, http://user:password@host:port.',
      });
    }
    if (error instanceof NoAnswer) {
      const overall = bound?.aborted === true && call.signal?.aborted !== true;
      const through = error.via === undefined ? '' : ` (through the proxy ${error.via})`;
      const shown = overall
        ? `The ${call.party} did not answer ${call.where} within ${Math.round((call.deadlineMs as number) / 1000)} s (${tried + 1} of ${attempts} attempts)${through}`
        : (error.timedOut ? `The ${call.party} did not answer ${call.where} in time` : `Could not reach the ${call.party} for ${call.where}: ${error.code}`) + through;
      throw new NanoPayError('REQUEST_ERROR', shown, { hint: overall ? `${call.hint} The bound is --timeout or NANOPAY_TIMEOUT.` : call.hint });
    }
    throw error;
  } finally {
    wait.end();
  }
}
