import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { NanoPayError } from '../errors.js';
import { RESPONDED, startHttpServer, type Call, type HttpServer } from '../http/server.js';
import { sendJson } from '../http/respond.js';
import { HEADERS } from './protocol.js';
import { priceOf, settlementHeader, type Paywall, type PricedRoute } from './paywall.js';

export interface PaywallServerOptions {
  host: string;
  port: number;
  /** Where paid (and free) requests go: its origin and path prefix. */
  upstream: string;
  paywall: Paywall;
  routes: readonly PricedRoute[];
  /** The price of a request no route names (0: free). */
  defaultRaw: bigint;
  log?: (line: string) => void;
  /** Largest request body forwarded. Default 1 MiB. */
  maxBodyBytes?: number;
}

/** Headers that belong to one connection, and ours: never forwarded either way. */
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'host', 'content-length', HEADERS.signature, HEADERS.legacyPayment]);
/** fetch hands over a decoded body: its coding and length no longer apply. */
const DECODED = new Set(['content-encoding', 'content-length', 'transfer-encoding', 'connection', 'keep-alive']);

interface Upstream {
  status: number;
  headers: [string, string][];
  body: Buffer;
}

function forwardHeaders(headers: IncomingHttpHeaders): Headers {
  const out = new Headers();
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP.has(name)) continue;
    for (const v of Array.isArray(value) ? value : [value]) out.append(name, v);
  }
  return out;
}

async function forward(upstream: URL, call: Call): Promise<Upstream> {
  const target = new URL(`${upstream.pathname.replace(/\/$/, '')}${call.request.url ?? '/'}`, upstream.origin);
  const hasBody = call.method !== 'GET' && call.method !== 'HEAD' && (call.rawBody?.length ?? 0) > 0;
  let response: Response;
  try {
    response = await fetch(target, { method: call.method, headers: forwardHeaders(call.headers), redirect: 'manual', signal: call.signal, ...(hasBody ? { body: call.rawBody } : {}) });
  } catch (error) {
    throw new NanoPayError('REQUEST_ERROR', `The upstream did not answer (${error instanceof Error ? error.message : String(error)})`, { status: 502 });
  }
  const headers = [...response.headers.entries()].filter(([name]) => !DECODED.has(name));
  return { status: response.status, headers, body: Buffer.from(await response.arrayBuffer()) };
}

function reply(res: ServerResponse, answer: Upstream, extra: Record<string, string> = {}): typeof RESPONDED {
  for (const [name, value] of answer.headers) res.appendHeader(name, value);
  for (const [name, value] of Object.entries(extra)) res.setHeader(name, value);
  res.setHeader('content-length', answer.body.length);
  res.writeHead(answer.status);
  res.end(answer.body);
  return RESPONDED;
}

function challenge(res: ServerResponse, headers: Record<string, string>, status = 402): typeof RESPONDED {
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  sendJson(res, status, {});
  return RESPONDED;
}

/**
 * `nanopay paywall`: a reverse proxy on the one HTTP server module that
 * charges per request in Nano (x402 v2, Nano exact). Unpaid priced requests
 * get 402 with PAYMENT-REQUIRED; a valid payment is forwarded, and settled
 * only once the upstream answered below 400 (then PAYMENT-RESPONSE rides on
 * the upstream's answer); a failed upstream answer passes through and the
 * block is never published.
 */
export function startPaywallServer(options: PaywallServerOptions): Promise<HttpServer> {
  const upstream = new URL(options.upstream);
  const { paywall } = options;
  const log = options.log ?? ((): void => undefined);
  return startHttpServer({
    host: options.host,
    port: options.port,
    routes: [],
    maxBodyBytes: options.maxBodyBytes ?? 1024 * 1024,
    log,
    fallback: async (call) => {
      const price = priceOf(options.routes, options.defaultRaw, call.method, call.path);
      if (price === 0n) return reply(call.response, await forward(upstream, call));
      const resource = `http://${call.headers.host ?? `${options.host}:${options.port}`}${call.path}`;
      const admission = await paywall.admit(call.headers, resource, price);
      if (!admission.paid) return challenge(call.response, admission.headers);
      let answer: Upstream;
      try {
        answer = await forward(upstream, call);
      } catch (error) {
        paywall.release(admission.verified);
        throw error;
      }
      if (answer.status >= 400) {
        paywall.release(admission.verified);
        return reply(call.response, answer);
      }
      const settlement = await paywall.settle(admission.verified);
      if (!settlement.success) {
        log(`settlement failed for ${admission.verified.cheque.hash}: ${settlement.errorReason ?? 'unknown'}`);
        return challenge(call.response, settlementHeader(settlement));
      }
      log(`settled ${settlement.transaction} (${settlement.amount ?? '?'} raw from ${settlement.payer ?? '?'})`);
      return reply(call.response, answer, { ...settlementHeader(settlement), 'access-control-expose-headers': 'PAYMENT-RESPONSE' });
    },
  });
}
