import type { IncomingHttpHeaders } from 'node:http';
import { NanoPayError } from '../errors.js';
import { isLoopback, refuseWebPages } from '../http/guards.js';
import { parseOrigin } from '../http/origin.js';
import { probeRoutes, type Probes } from '../http/probes.js';
import { RESPONDED, startHttpServer, type Call, type HttpServer, type HttpServerOptions, type Route } from '../http/server.js';
import { rawToXno } from '../nano/index.js';
import { TOOL_ROUTES, routesFor, toolCalls } from '../toolset/http.js';
import { chatTurn, type ChatDeps, type ChatTurn } from './chat.js';
import { openEventStream } from './events.js';
import type { WalletHolder } from './wallet-holder.js';

export const DEFAULT_AGENT_PORT = 7860;

export interface AgentOptions extends ChatDeps {
  host: string;
  port: number;
  token?: string;
  /** When set, connections of other users are refused before anything runs (see HttpServerOptions.onlyUser). */
  onlyUser?: HttpServerOptions['onlyUser'];
  /** Origins whose web pages may call the agent (they get CORS headers); every other Origin is refused. */
  allowOrigins?: readonly string[];
  /** /healthz and /readyz, and /metrics behind the same guards as the rest. */
  probes?: Probes;
  /** How long close() lets calls in flight (a chat turn) finish. Default 5 s. */
  drainMs?: number;
}

export interface RunningAgent {
  url: string;
  port: number;
  close(): Promise<void>;
}

const MAX_BODY = 32 * 1024;
const MAX_HISTORY = 50;

/** The SDK's calls, on the toolset's paths, so one client speaks to both `agent` and `serve`. */
const SDK_ROUTES = TOOL_ROUTES.filter((route) => ['wallet.balance', 'wallet.send', 'payment.request', 'payment.status'].includes(route.tool));

function chatInput(body: Record<string, unknown>): ChatTurn {
  for (const key of Object.keys(body)) {
    if (!['message', 'confirm', 'deny', 'approvals', 'history'].includes(key)) throw new NanoPayError('INVALID_REQUEST', `/chat has no field "${key}"`);
  }
  const { message, confirm, deny, approvals, history } = body;
  if ([message, confirm, deny, approvals].filter((v) => v !== undefined).length !== 1) throw new NanoPayError('INVALID_REQUEST', '/chat takes one of "message", "confirm", "deny" or "approvals"');
  if (message !== undefined && (typeof message !== 'string' || message.trim() === '')) throw new NanoPayError('INVALID_REQUEST', '"message" must be a non-empty string');
  for (const [name, token] of [['confirm', confirm], ['deny', deny]] as const) {
    if (token !== undefined && (typeof token !== 'string' || token === '')) throw new NanoPayError('INVALID_REQUEST', `"${name}" must be a token string`);
  }
  if (approvals !== undefined && approvals !== true) throw new NanoPayError('INVALID_REQUEST', '"approvals" must be true');
  const turns = history ?? [];
  const valid = (t: unknown): t is { role: 'user' | 'assistant'; content: string } =>
    typeof t === 'object' && t !== null && ['user', 'assistant'].includes((t as { role?: unknown }).role as string) && typeof (t as { content?: unknown }).content === 'string';
  if (!Array.isArray(turns) || turns.length > MAX_HISTORY || !turns.every(valid)) {
    throw new NanoPayError('INVALID_REQUEST', `"history" must be a list of up to ${MAX_HISTORY} {role: "user" | "assistant", content: string}`);
  }
  return {
    ...(typeof message === 'string' ? { message } : {}),
    ...(typeof confirm === 'string' ? { confirm } : {}),
    ...(typeof deny === 'string' ? { deny } : {}),
    ...(approvals === true ? { approvals: true as const } : {}),
    history: turns.map((t) => ({ role: t.role, content: t.content })),
  };
}

/**
 * The agent over HTTP: the SDK's structured routes (balance, pay, request,
 * payment status) answered in the toolset envelope, GET /status, and POST /chat
 * answered as a stream of events. Guards as `serve`.
 */
export function requireTokenOffLoopback(host: string, token: string | undefined): void {
  if (!isLoopback(host) && token === undefined) {
    throw new NanoPayError('USAGE', `Listening on ${host} (not loopback) requires a token`, { hint: 'Pass --token-file or set NANOPAY_AGENT_TOKEN.' });
  }
}

export async function startAgent(options: AgentOptions): Promise<RunningAgent> {
  requireTokenOffLoopback(options.host, options.token);
  const loopback = isLoopback(options.host);
  const holder: WalletHolder = options.holder;
  const origins = new Set((options.allowOrigins ?? []).map(parseOrigin));

  /** Refuses web pages unless their Origin is allowed; the allowed one gets its CORS headers. */
  const corsHeaders = (headers: IncomingHttpHeaders): Record<string, string> => {
    const origin = headers.origin;
    if (origin !== undefined && origins.has(origin)) return { 'access-control-allow-origin': origin, vary: 'origin' };
    refuseWebPages(headers);
    return {};
  };
  const guarded = (handle: (call: Call) => unknown): Route['handle'] => (call) => {
    for (const [name, value] of Object.entries(corsHeaders(call.headers))) call.response.setHeader(name, value);
    return handle(call);
  };

  const { probes } = options;
  const toolRoutes: Route[] = routesFor(
    SDK_ROUTES,
    async (tool, input, call) => {
      const data = await holder.use((session) => tool.handler(session, input, call.signal));
      if (tool.writes) holder.afterWrite();
      return data;
    },
    probes === undefined ? undefined : toolCalls(probes.metrics),
  ).map((route) => ({ ...route, handle: guarded(route.handle) }));

  const routes: Route[] = [
    ...toolRoutes,
    {
      method: 'GET',
      path: '/status',
      handle: guarded(async () => ({
        address: await holder.address(),
        strict: holder.strict,
        model: options.model?.model ?? null,
        confirm_above: options.confirmAboveRaw === undefined ? null : rawToXno(options.confirmAboveRaw),
        unlocked_sessions: holder.unlockedSessions(),
        token_required: options.token !== undefined,
      })),
    },
    {
      method: 'POST',
      path: '/chat',
      handle: guarded(async (call) => {
        const turn = chatInput(call.body);
        const stream = openEventStream(call);
        await chatTurn(options, turn, stream.send, call.signal);
        stream.end();
        return RESPONDED;
      }),
    },
    // A preflight from an allowed origin (browsers send it without credentials, so only without a token).
    ...['/chat', '/status', ...SDK_ROUTES.map((r) => r.path)]
      .filter((path, i, all) => all.indexOf(path) === i)
      .map((path) => ({
        method: 'OPTIONS',
        path,
        handle: (call: Call) => {
          const origin = call.headers.origin;
          if (origin === undefined || !origins.has(origin)) throw new NanoPayError('FORBIDDEN', 'This origin is not allowed');
          call.response.writeHead(204, {
            'access-control-allow-origin': origin,
            'access-control-allow-methods': 'GET, POST',
            'access-control-allow-headers': 'content-type, authorization, accept',
            'access-control-max-age': '600',
            vary: 'origin',
          });
          call.response.end();
          return RESPONDED;
        },
      })),
    ...(probes === undefined ? [] : probeRoutes(probes, 'guarded').map((route) => ({ ...route, handle: guarded(route.handle) }))),
  ];

  const server: HttpServer = await startHttpServer({
    host: options.host,
    port: options.port,
    routes,
    maxBodyBytes: MAX_BODY,
    requireJsonContentType: true,
    // The Host check defeats DNS rebinding on loopback; off loopback (a container) a token is required,
    // and clients reach the agent by names it cannot know.
    checkHost: loopback,
    refuseWebPages: false,
    ...(options.token === undefined ? {} : { token: options.token }),
    ...(options.onlyUser === undefined ? {} : { onlyUser: options.onlyUser }),
    ...(probes === undefined ? {} : { metrics: probes.metrics }),
    ...(options.drainMs === undefined ? {} : { closeGraceMs: options.drainMs }),
    log: options.log,
  });
  return { url: server.url, port: server.port, close: () => server.close() };
}
