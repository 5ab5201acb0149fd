import { withSandboxMark } from '../ops/observe.js';
import { NanoPayError } from '../errors.js';
import { isLoopback } from '../http/guards.js';
import type { ServerLog } from '../http/log.js';
import type { Counter, Metrics } from '../http/metrics.js';
import { probeRoutes, type Probes } from '../http/probes.js';
import { startHttpServer, type Call, type HttpServerOptions, type Route } from '../http/server.js';
import type { ToolsetHolder } from './session.js';
import { checkInput, findTool, type Tool, type ToolInput } from './tools.js';

export interface ToolsetOptions {
  host: string;
  port: number;
  /** When set, every request needs `Authorization: Bearer <token>`. */
  token?: string;
  /** When set, connections of other users are refused (see HttpServerOptions.onlyUser). */
  onlyUser?: HttpServerOptions['onlyUser'];
  log?: ServerLog;
  /** Called after a tool that changed the account, e.g. to make the next block's work ahead. */
  afterWrite?: () => void;
  /** /healthz and /readyz, and /metrics behind the same guards as the tools. */
  probes?: Probes;
  /** How long close() lets calls in flight finish. Default 5 s. */
  drainMs?: number;
}

export interface RunningToolset {
  url: string;
  port: number;
  close(): Promise<void>;
}

const MAX_BODY = 16 * 1024;

export interface ToolRoute {
  method: 'GET' | 'POST';
  path: string;
  tool: string;
  /** Builds the tool input from path parameters, query and body. */
  input(call: Call): unknown;
}

/** A route whose input is in its path takes an approval id and an idempotency key in its body (`{"approval_id": …, "id": …}`). */
const approvalIn = (body: Record<string, unknown>): Record<string, unknown> => ({
  ...(body.approval_id === undefined ? {} : { approval_id: body.approval_id }),
  ...(body.id === undefined ? {} : { id: body.id }),
});

/**
 * The idempotency key of a spending route: `id` in the input, or the
 * `Idempotency-Key` header (as payment APIs take it); both, they must agree.
 */
function withKey(tool: Tool, input: unknown, call: Call): unknown {
  const header = call.headers['idempotency-key'];
  if (header === undefined || !Object.hasOwn(tool.inputSchema.properties, 'id')) return input;
  const key = Array.isArray(header) ? header.join(',') : header;
  const given = input as Record<string, unknown>;
  if (given.id !== undefined && given.id !== null && given.id !== key) throw new NanoPayError('INVALID_REQUEST', 'The Idempotency-Key header and "id" in the body differ: give one key');
  return { ...given, id: key };
}

/** The spec's routes (section B), each a thin mapping onto one tool. */
export const TOOL_ROUTES: readonly ToolRoute[] = [
  {
    method: 'GET',
    path: '/wallet/balance',
    tool: 'wallet.balance',
    input: ({ query }) => {
      const flag = query.get('auto_receive_pending_blocks');
      return flag === null ? {} : { auto_receive_pending_blocks: /^(true|1)$/i.test(flag) };
    },
  },
  { method: 'POST', path: '/wallet/send', tool: 'wallet.send', input: ({ body }) => body },
  { method: 'POST', path: '/payment/request', tool: 'payment.request', input: ({ body }) => body },
  { method: 'GET', path: '/payment/status/:transaction_id', tool: 'payment.status', input: ({ params }) => ({ transaction_id: params.transaction_id }) },
  { method: 'GET', path: '/credits', tool: 'credits.get', input: () => ({}) },
  { method: 'POST', path: '/credits/topup/:credits_amount', tool: 'credits.topup', input: ({ params, body }) => ({ ...approvalIn(body), credits_amount: params.credits_amount }) },
  { method: 'POST', path: '/donate/:amount', tool: 'donate.send', input: ({ params, body }) => ({ ...approvalIn(body), amount: params.amount }) },
  // Not in the spec: fetch a URL paying its x402 challenge (nanopay fetch); what may still be spent; the history.
  { method: 'POST', path: '/http/fetch-paid', tool: 'http_fetch_paid', input: ({ body }) => body },
  { method: 'GET', path: '/spending/status', tool: 'spending.status', input: () => ({}) },
  { method: 'GET', path: '/wallet/history', tool: 'wallet.history', input: ({ query }) => (query.get('limit') === null ? {} : { limit: query.get('limit') }) },
];

/** The count of tool calls by tool and result (ok, error): payments are the calls of wallet.send, donate.send, credits.topup. */
export function toolCalls(metrics: Metrics): Counter {
  return metrics.counter('nanopay_tool_calls_total', 'Tool calls over HTTP, by tool and result (ok, error)', []);
}

/** HTTP routes for tool routes: each checks its input against the tool's schema, then `run`s the tool (counted into `calls`). */
export function routesFor(tools: readonly ToolRoute[], run: (tool: Tool, input: ToolInput, call: Call) => Promise<unknown>, calls?: Counter): Route[] {
  return tools.map((route) => ({
    method: route.method,
    path: route.path,
    handle: async (call) => {
      const tool = findTool(route.tool);
      try {
        const data = await run(tool, checkInput(tool, withKey(tool, route.input(call), call)), call);
        calls?.inc({ tool: tool.name, result: 'ok' });
        return data;
      } catch (error) {
        calls?.inc({ tool: tool.name, result: 'error' });
        throw error;
      }
    },
  }));
}

/**
 * The local HTTP toolset: the tools over the spec's routes (and /http/fetch-paid), behind the
 * guards that keep web pages out (Host, Origin, Sec-Fetch-Site, JSON bodies)
 * and, when set, the user check and the token. It serves from the start:
 * while its session cannot be opened, each call answers why.
 */
export async function startToolset(holder: ToolsetHolder, options: ToolsetOptions): Promise<RunningToolset> {
  if (!isLoopback(options.host) && options.token === undefined) {
    throw new NanoPayError('USAGE', `Listening on ${options.host} (not loopback) requires a token`, { hint: 'Pass --token-file or set NANOPAY_TOOLSET_TOKEN.' });
  }
  const { probes } = options;
  const routes = routesFor(
    TOOL_ROUTES,
    async (tool, input, call) => {
      // While the session cannot be opened (no wallet, no password), each call answers why, and what to run.
      const data = await tool.handler(await holder.session(), input, call.signal);
      if (tool.writes) options.afterWrite?.();
      return data;
    },
    probes === undefined ? undefined : toolCalls(probes.metrics),
  );
  const server = await startHttpServer({
    host: options.host,
    port: options.port,
    routes: [...routes, ...(probes === undefined ? [] : probeRoutes(probes, 'guarded'))],
    ...(probes === undefined ? {} : { metrics: probes.metrics }),
    ...(options.drainMs === undefined ? {} : { closeGraceMs: options.drainMs }),
    // As the CLI's --json: answers that used the sandbox's say so.
    envelope: withSandboxMark,
    maxBodyBytes: MAX_BODY,
    requireJsonContentType: true,
    checkHost: true,
    refuseWebPages: true,
    ...(options.token === undefined ? {} : { token: options.token }),
    ...(options.onlyUser === undefined ? {} : { onlyUser: options.onlyUser }),
    ...(options.log === undefined ? {} : { log: options.log }),
  });
  return { url: server.url, port: server.port, close: () => server.close() };
}
