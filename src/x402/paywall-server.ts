import type { ServerResponse } from 'node:http';
import type { ServerLog } from '../http/log.js';
import { probeRoutes, type Probes } from '../http/probes.js';
import { RESPONDED, startHttpServer, type Call, type HttpServer } from '../http/server.js';
import { sendJson } from '../http/respond.js';
import { timed, type PhaseClock } from './phases.js';
import { routeFor, settleOrder, settlementHeader, type Paywall, type PricedRoute } from './paywall.js';
import { canonicalPath, upstreamTarget } from './request-path.js';
import { discoveryManifest } from './discovery.js';
import { requestOrigin } from './origin.js';
import { forward, type Upstream } from './upstream.js';
import type { SessionSeller } from './sessions/seller.js';
import { presentedPayment, sessionPayment, sessionRoutes } from './sessions/paywall-sessions.js';
import { paymentIdOf, paymentProof, type AnswerStore } from './answers.js';
import { isObject, type SettleResponse } from './protocol.js';
import { SESSIONS_PATH, requestDigest } from './sessions/wire.js';
import { X402Refusal } from './nano-exact.js';

export interface PaywallServerOptions {
  host: string;
  port: number;
  /** Where paid (and free) requests go: its origin and path prefix. */
  upstream: string;
  paywall: Paywall;
  routes: readonly PricedRoute[];
  /** The price of a request no route names (0: free). */
  defaultRaw: bigint;
  log?: ServerLog;
  /** Largest request body forwarded. Default 1 MiB. */
  maxBodyBytes?: number;
  /** /healthz and /readyz (not forwarded), and the payments counted; /metrics is on --metrics-listen only. */
  probes?: Probes;
  /** How long close() lets requests in flight finish. Default 5 s. */
  drainMs?: number;
  /** Sessions (nano-session) offered beside exact: one deposit, a voucher a call. */
  sessions?: SessionSeller;
  /** Paid answers kept by the buyer's payment id (x402's payment-identifier): a retry gets the first answer. */
  answers?: AnswerStore;
}

/** Who paid and under which payment id, when the payment names one: a block's account, or a session. */
function namedPayment(presented: Record<string, unknown> | undefined): { payer: string; id: string; proof: string } | undefined {
  if (presented === undefined || !isObject(presented.payload)) return undefined;
  const id = paymentIdOf(presented);
  const payload = presented.payload;
  const payer = typeof payload.session === 'string' ? `session:${payload.session.toUpperCase()}` : isObject(payload.block) && typeof payload.block.account === 'string' ? payload.block.account : undefined;
  return id === undefined || payer === undefined ? undefined : { payer, id, proof: paymentProof(payload) };
}

/** The upstream's answer header that says how many units a metered route's call used. */
const UNITS_HEADER = 'nanopay-units';

/** What a metered call costs: its units (the upstream's Nanopay-Units, a whole number) times the unit price; absent or not a number, the ceiling. */
function meteredCharge(answer: Upstream, route: PricedRoute, ceilingRaw: bigint): bigint {
  const units = answer.headers.find(([name]) => name.toLowerCase() === UNITS_HEADER)?.[1];
  return route.unitRaw === undefined || units === undefined || !/^\d{1,20}$/.test(units.trim()) ? ceilingRaw : BigInt(units.trim()) * route.unitRaw;
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

/** The query of a request target as sent ("" or "?…"). */
function queryOf(target: string | undefined): string {
  const mark = (target ?? '').indexOf('?');
  return mark === -1 ? '' : (target as string).slice(mark);
}

/**
 * `nanopay paywall`: a reverse proxy on the one HTTP server module that
 * charges per request in Nano (x402 v2, Nano exact). The request's path is
 * made canonical once (or refused, see canonicalPath): that path is priced and
 * that path is forwarded, under the upstream's prefix. Unpaid priced requests
 * get 402 with PAYMENT-REQUIRED. A valid payment on a safe method (GET, HEAD)
 * is forwarded and settled only once the upstream answered below 400 (a
 * failed upstream answer passes through and the block is never published);
 * on any other method it is settled first, so an upstream's side effect is
 * never had unpaid. A route may name its order (settle=before|after).
 */
export async function startPaywallServer(options: PaywallServerOptions): Promise<HttpServer> {
  const upstream = new URL(options.upstream);
  const { paywall } = options;
  const log: ServerLog = options.log ?? ((): void => undefined);
  const payments = options.probes?.metrics.counter('nanopay_payments_total', 'x402 payments this paywall settled, by result (settled, or failed: not published)', [
    { result: 'settled' },
    { result: 'failed' },
  ]);
  const phases = options.probes?.metrics.histogram('nanopay_x402_phase_seconds', 'Time in each step of a paid request: signature, head (the payer\'s head read and checked), checks, record, upstream, claim, publish, confirm, settled');
  const clock: PhaseClock | undefined = phases === undefined ? undefined : (phase, seconds) => phases.observe(seconds, { phase });
  const paidHeaders = (settlement: SettleResponse): Record<string, string> => ({ ...settlementHeader(settlement), 'access-control-expose-headers': 'PAYMENT-RESPONSE' });
  const started = Math.floor(Date.now() / 1000);
  let listening = `http://${options.host}:${options.port}`;
  const originOf = (call: Call): string => requestOrigin(call.headers.host, listening);
  // What it sells, unpaid, before any route or the upstream: the x402 discovery manifest.
  const discovery = async (call: Call): Promise<typeof RESPONDED> => {
    sendJson(call.response, 200, await discoveryManifest(originOf(call), paywall, options.routes, options.defaultRaw, started));
    return RESPONDED;
  };
  const server = await startHttpServer({
    host: options.host,
    port: options.port,
    routes: [
      { method: 'GET', path: '/.well-known/x402', handle: discovery },
      { method: 'GET', path: '/.well-known/x402.json', handle: discovery },
      ...(options.probes === undefined ? [] : probeRoutes(options.probes, 'none')),
      ...(options.sessions === undefined ? [] : sessionRoutes(options.sessions)),
    ],
    maxBodyBytes: options.maxBodyBytes ?? 1024 * 1024,
    log,
    ...(options.probes === undefined ? {} : { metrics: options.probes.metrics }),
    ...(options.drainMs === undefined ? {} : { closeGraceMs: options.drainMs }),
    fallback: async (call) => {
      const path = canonicalPath(call.path);
      const target = upstreamTarget(upstream, path, queryOf(call.request.url));
      const route = routeFor(options.routes, call.method, path);
      const price = route?.priceRaw ?? options.defaultRaw;
      if (price === 0n) return reply(call.response, await forward(target, call));
      const resource = `${originOf(call)}${path}`;
      const sessions = options.sessions;
      const offered = async () => (sessions === undefined ? [] : [await sessions.requirement(price, `${originOf(call)}${SESSIONS_PATH}`, route?.unitRaw)]);
      const presented = presentedPayment(call.headers);
      const digest = requestDigest(call.method, call.request.url ?? '/', call.rawBody);
      const named = options.answers === undefined ? undefined : namedPayment(presented);
      if (named !== undefined) {
        const first = await options.answers?.get(named.payer, named.id);
        if (first !== undefined && (first.request !== digest || first.proof !== named.proof)) {
          sendJson(call.response, 409, { error: 'payment_identifier_conflict', message: 'This payment id was used for another request or another payment' });
          return RESPONDED;
        }
        // A retry of a request paid under this id: its first answer, paid once.
        if (first !== undefined) return reply(call.response, { status: first.status, headers: first.headers, body: Buffer.from(first.body, 'base64') }, paidHeaders(first.settlement));
      }
      /** A paid answer, kept under the buyer's payment id (when it named one) before it leaves. */
      const paid = async (answer: Upstream, settlement: SettleResponse): Promise<typeof RESPONDED> => {
        if (named !== undefined) await options.answers?.put(named.payer, named.id, { request: digest, proof: named.proof, status: answer.status, headers: answer.headers, body: answer.body.toString('base64'), settlement });
        return reply(call.response, answer, paidHeaders(settlement));
      };
      /**
       * An admitted paid request in its order: charged, then forwarded (the answer, an error envelope too, says it was
       * paid); or forwarded, let go when it failed, and charged once it succeeded. `charge` gives undefined when it
       * answered a failed charge itself.
       */
      const serveAdmitted = async (before: boolean, charge: (answer?: Upstream) => Promise<SettleResponse | undefined>, release: () => unknown): Promise<typeof RESPONDED> => {
        if (before) {
          const settlement = await charge();
          if (settlement === undefined) return RESPONDED;
          for (const [name, value] of Object.entries(paidHeaders(settlement))) call.response.setHeader(name, value);
          return paid(await timed(clock, 'upstream', () => forward(target, call)), settlement);
        }
        let answer: Upstream;
        try {
          answer = await timed(clock, 'upstream', () => forward(target, call));
        } catch (error) {
          await release();
          throw error;
        }
        if (answer.status >= 400) {
          await release();
          return reply(call.response, answer);
        }
        const settlement = await charge(answer);
        return settlement === undefined ? RESPONDED : paid(answer, settlement);
      };
      const inSession = sessions === undefined ? undefined : sessionPayment(presented);
      if (sessions !== undefined && inSession !== undefined) {
        let admitted;
        try {
          admitted = sessions.admit(inSession.payload, digest, price);
        } catch (error) {
          if (!(error instanceof X402Refusal)) throw error;
          return challenge(call.response, paywall.challenge(resource, await paywall.requirementFor(price), error.reason, await offered()).headers);
        }
        // A metered call learns its cost from the answer: it is served first, as a safe method is.
        return serveAdmitted(
          route?.unitRaw === undefined && settleOrder(call.method, route?.settle) === 'before',
          (answer) => sessions.charge(admitted, answer === undefined || route?.unitRaw === undefined ? price : meteredCharge(answer, route, admitted.ceilingRaw)),
          () => sessions.release(admitted),
        );
      }
      const admission = await paywall.admit(call.headers, resource, price, clock, await offered());
      if (!admission.paid) return challenge(call.response, admission.headers);
      const settle = async (): Promise<SettleResponse | undefined> => {
        const settlement = await paywall.settle(admission.verified, clock);
        payments?.inc({ result: settlement.success ? 'settled' : 'failed' });
        if (settlement.success) {
          log(`settled ${settlement.transaction} (${settlement.amount ?? '?'} raw from ${settlement.payer ?? '?'})`, {
            event: 'payment_settled',
            fields: { block: settlement.transaction, amount_raw: settlement.amount, payer: settlement.payer },
          });
          return settlement;
        }
        log(`settlement failed for ${admission.verified.cheque.hash}: ${settlement.errorReason ?? 'unknown'}`, {
          event: 'payment_failed',
          level: 'warn',
          fields: { block: admission.verified.cheque.hash, reason: settlement.errorReason },
        });
        challenge(call.response, settlementHeader(settlement));
        return undefined;
      };
      return serveAdmitted(settleOrder(call.method, route?.settle) === 'before', settle, () => paywall.release(admission.verified));
    },
  });
  listening = server.url;
  return server;
}
