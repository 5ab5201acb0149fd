import { Agent, request as httpRequest, type ClientRequest, type IncomingHttpHeaders, type IncomingMessage, type RequestOptions } from 'node:http';
import { NanoPayError } from '../errors.js';
import type { Call } from '../http/server.js';
import { HEADERS } from './protocol.js';

/** Headers that belong to one connection, and ours: never forwarded either way. */
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'host', 'content-length', HEADERS.signature, HEADERS.legacyPayment]);
/**
 * Headers some servers and frameworks (IIS, Symfony, Express's method-override, Envoy) take as the request's
 * real path or method: forwarded, they would serve another route than the one priced here.
 */
const REROUTE = new Set([
  'x-original-url',
  'x-rewrite-url',
  'x-original-uri',
  'x-forwarded-uri',
  'x-forwarded-prefix',
  'x-forwarded-path',
  'x-envoy-original-path',
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
  'x-original-method',
]);
/** The answer goes out whole, with its length, as the paywall frames it; the request's id is the paywall's. */
const FRAMING = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'proxy-connection', 'upgrade', 'trailer', 'x-request-id']);

/** The upstream's whole answer: forwarded as it came (its body still in its content coding). */
export interface Upstream {
  status: number;
  headers: [string, string][];
  body: Buffer;
}

/** What of a request is forwarded; its answer names the id the paywall gave it. */
type Forwarded = Pick<Call, 'method' | 'headers' | 'rawBody' | 'signal' | 'response'>;

/** Connections to the upstream kept open between requests: a paid request's hop opens none. */
const agents: { http?: Agent; https?: Agent } = {};

async function sender(target: URL): Promise<(options: RequestOptions, answered: (res: IncomingMessage) => void) => ClientRequest> {
  if (target.protocol === 'https:') {
    // Loaded only for an https upstream: it brings TLS.
    const https = await import('node:https');
    const agent = (agents.https ??= new https.Agent({ keepAlive: true }));
    return (options, answered) => https.request(target, { ...options, agent }, answered);
  }
  const agent = (agents.http ??= new Agent({ keepAlive: true }));
  return (options, answered) => httpRequest(target, { ...options, agent }, answered);
}

/** The client's headers, and the id the paywall gave the request (its log's), so the upstream's log can name it too. */
function forwardHeaders(headers: IncomingHttpHeaders, requestId: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP.has(name) || REROUTE.has(name) || name === 'x-request-id') continue;
    out[name] = value;
  }
  out['x-request-id'] = requestId;
  return out;
}

/** The answer's headers as the upstream sent them (repeated ones kept), but those of its framing. */
function answerHeaders(raw: string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    if (!FRAMING.has(name)) out.push([name, raw[i + 1] as string]);
  }
  return out;
}

/** Methods that change nothing upstream: sent again when a kept-alive connection was found closed. */
const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Sends the request on to the upstream (node:http on a kept-alive
 * connection: a reverse proxy's hop, lighter than fetch, and its answer's
 * bytes untouched) and reads its whole answer. No redirect is followed.
 */
export async function forward(target: URL, call: Forwarded): Promise<Upstream> {
  const requestId = String(call.response.getHeader('x-request-id'));
  const hasBody = call.method !== 'GET' && call.method !== 'HEAD' && (call.rawBody?.length ?? 0) > 0;
  const send = await sender(target);
  const attempt = (retried: boolean): Promise<Upstream> =>
    new Promise<Upstream>((resolve, reject) => {
      let answered = false;
      const failed = (error: NodeJS.ErrnoException): void => {
        // A kept-alive connection the upstream closed as this request went out: a request that changes nothing is sent once more, on a new one.
        if (!answered && !retried && req.reusedSocket && error.code === 'ECONNRESET' && SAFE.has(call.method)) resolve(attempt(true));
        else reject(new NanoPayError('REQUEST_ERROR', `The upstream did not answer (${error.message})`, { status: 502 }));
      };
      const req = send({ method: call.method, headers: forwardHeaders(call.headers, requestId), signal: call.signal }, (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', failed);
        res.on('end', () => resolve({ status: res.statusCode ?? 502, headers: answerHeaders(res.rawHeaders), body: Buffer.concat(chunks) }));
      });
      req.on('error', failed);
      req.end(hasBody ? call.rawBody : undefined);
    });
  return attempt(false);
}
