import type { ServerLog } from '../http/log.js';
import { probeRoutes, type Probes } from '../http/probes.js';
import { NanoPayError } from '../errors.js';
import { RESPONDED, startHttpServer, type Call, type HttpServer, type Route } from '../http/server.js';
import { sendJson } from '../http/respond.js';
import { X402Refusal } from './nano-exact.js';
import { facilitatorRequest, type NanoSettler } from './facilitator.js';

export interface FacilitatorServerOptions {
  host: string;
  port: number;
  settler: NanoSettler;
  log?: ServerLog;
  /** /healthz and /readyz, and the payments counted; /metrics is on --metrics-listen only (this server has no token). */
  probes?: Probes;
  /** How long close() lets requests in flight (a settlement awaiting its confirmation) finish. Default 5 s. */
  drainMs?: number;
}

/** Answers as the reference shapes are, bare JSON (no envelope): HTTPFacilitatorClient reads them as they are. */
function bare(handle: (call: Call) => Promise<unknown>): Route['handle'] {
  return async (call) => {
    sendJson(call.response, 200, await handle(call));
    return RESPONDED;
  };
}

/**
 * `nanopay facilitator`: POST /verify, POST /settle and GET /supported of the
 * x402 facilitator API for the Nano exact scheme, and GET /settlements/:hash
 * (where a settlement stands), on the one HTTP server module. A payment that fails a check is answered 200 with isValid:false or
 * success:false and its reason, as the reference facilitators do.
 */
export function startFacilitatorServer(options: FacilitatorServerOptions): Promise<HttpServer> {
  const { settler, probes } = options;
  const verdicts = probes?.metrics.counter('nanopay_x402_verifications_total', 'Payments checked on /verify, by result (valid, invalid)', [{ result: 'valid' }, { result: 'invalid' }]);
  const payments = probes?.metrics.counter('nanopay_payments_total', 'Payments settled on /settle, by result (settled, failed)', [{ result: 'settled' }, { result: 'failed' }]);
  const routes: Route[] = [
    { method: 'GET', path: '/supported', handle: bare(() => settler.supported()) },
    {
      // For a caller that lost a settlement's answer: asks, never settles, so it cannot make this server publish anything.
      method: 'GET',
      path: '/settlements/:hash',
      handle: bare(async (call) => {
        const hash = call.params.hash ?? '';
        if (!/^[0-9A-Fa-f]{64}$/.test(hash)) throw new NanoPayError('INVALID_HEX', 'A settlement is asked for by its block hash: 64 hex digits');
        return settler.status(hash.toUpperCase());
      }),
    },
    {
      method: 'POST',
      path: '/verify',
      handle: bare(async (call) => {
        try {
          const { payment, requirements } = facilitatorRequest(call.body);
          const verdict = await settler.verify(payment, requirements);
          verdicts?.inc({ result: verdict.isValid ? 'valid' : 'invalid' });
          return verdict;
        } catch (error) {
          if (!(error instanceof X402Refusal)) throw error;
          verdicts?.inc({ result: 'invalid' });
          return { isValid: false, invalidReason: error.reason, invalidMessage: error.message };
        }
      }),
    },
    {
      method: 'POST',
      path: '/settle',
      handle: bare(async (call) => {
        try {
          const { payment, requirements } = facilitatorRequest(call.body);
          const settlement = await settler.settle(payment, requirements);
          payments?.inc({ result: settlement.success ? 'settled' : 'failed' });
          return settlement;
        } catch (error) {
          if (!(error instanceof X402Refusal)) throw error;
          payments?.inc({ result: 'failed' });
          return { success: false, errorReason: error.reason, errorMessage: error.message, transaction: '', network: await settler.network() };
        }
      }),
    },
  ];
  return startHttpServer({
    host: options.host,
    port: options.port,
    routes: [...routes, ...(probes === undefined ? [] : probeRoutes(probes, 'none'))],
    ...(probes === undefined ? {} : { metrics: probes.metrics }),
    ...(options.drainMs === undefined ? {} : { closeGraceMs: options.drainMs }),
    ...(options.log === undefined ? {} : { log: options.log }),
  });
}
