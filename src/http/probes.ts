import type { IncomingHttpHeaders } from 'node:http';
import { isLoopback } from './guards.js';
import { notReady, type Readiness } from './health.js';
import type { ServerLog } from './log.js';
import { METRICS_CONTENT_TYPE, type Metrics } from './metrics.js';
import { RESPONDED, startHttpServer, type HttpServer, type Route } from './server.js';

/** What an operator asks of a server: does it answer, can it work, what has it done. */
export interface Probes {
  readiness: Readiness;
  metrics: Metrics;
}

/**
 * Who may read /metrics on a server's own address: nobody (it is served on
 * --metrics-listen only), whoever passes the server's guards (its token and
 * user check), or whoever `authorize` lets in (it throws for the others).
 */
export type MetricsAccess = 'none' | 'guarded' | { authorize(headers: IncomingHttpHeaders): Promise<unknown> };

/**
 * GET /healthz (the process answers) and GET /readyz (its checks pass; 503
 * NOT_READY with the reasons otherwise), both without a token: they tell
 * nothing secret. And GET /metrics in the Prometheus text format, as `access` says.
 */
export function probeRoutes(probes: Probes, access: MetricsAccess): Route[] {
  const routes: Route[] = [
    { method: 'GET', path: '/healthz', public: true, handle: () => ({ status: 'ok' }) },
    {
      method: 'GET',
      path: '/readyz',
      public: true,
      handle: async () => {
        const state = await probes.readiness.state();
        if (!state.ready) throw notReady(state);
        return { status: 'ready', checks: state.checks };
      },
    },
  ];
  if (access === 'none') return routes;
  const authorize = typeof access === 'object' ? access.authorize : undefined;
  routes.push({
    method: 'GET',
    path: '/metrics',
    handle: async ({ headers, response }) => {
      if (authorize !== undefined) await authorize(headers);
      const body = await probes.metrics.render();
      response.writeHead(200, { 'content-type': METRICS_CONTENT_TYPE, 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' });
      response.end(body);
      return RESPONDED;
    },
  });
  return routes;
}

/**
 * The probes on an address of their own (--metrics-listen), for a scraper that
 * has no token: /metrics, /healthz and /readyz, nothing else. Keep it on
 * loopback or a private network; on loopback the Host header must name it.
 */
export function startProbeServer(options: { host: string; port: number; probes: Probes; log?: ServerLog; closeGraceMs?: number }): Promise<HttpServer> {
  return startHttpServer({
    host: options.host,
    port: options.port,
    routes: probeRoutes(options.probes, 'guarded'),
    maxBodyBytes: 0,
    checkHost: isLoopback(options.host),
    refuseWebPages: true,
    ...(options.log === undefined ? {} : { log: options.log }),
    ...(options.closeGraceMs === undefined ? {} : { closeGraceMs: options.closeGraceMs }),
  });
}
