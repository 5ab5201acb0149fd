import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { NanoPayError } from '../errors.js';
import { readJsonBody, sendJson } from '../net/json-http.js';
import type { Session } from '../ops/session.js';
import { findTool, runTool, type Tool, type ToolInput } from './tools.js';

export interface ToolsetOptions {
  host: string;
  port: number;
  /** When set, every request needs `Authorization: Bearer <token>`. */
  token?: string;
  log?: (line: string) => void;
  /** Called after a tool that changed the account, e.g. to make the next block's work ahead. */
  afterWrite?: () => void;
}

export interface RunningToolset {
  url: string;
  port: number;
  close(): Promise<void>;
}

const MAX_BODY = 16 * 1024;

interface Route {
  method: 'GET' | 'POST';
  pattern: RegExp;
  tool: string;
  /** Builds the tool input from path parameters, query and body. */
  input(params: string[], query: URLSearchParams, body: ToolInput): ToolInput;
}

/** The spec's routes (section B), each a thin mapping onto one tool. */
const ROUTES: Route[] = [
  {
    method: 'GET',
    pattern: /^\/wallet\/balance$/,
    tool: 'wallet.balance',
    input: (_p, q) => (q.has('auto_receive_pending_blocks') ? { auto_receive_pending_blocks: q.get('auto_receive_pending_blocks') === 'true' } : {}),
  },
  { method: 'POST', pattern: /^\/wallet\/send$/, tool: 'wallet.send', input: (_p, _q, b) => b },
  { method: 'POST', pattern: /^\/payment\/request$/, tool: 'payment.request', input: (_p, _q, b) => b },
  { method: 'GET', pattern: /^\/payment\/status\/([^/]+)$/, tool: 'payment.status', input: (p) => ({ transaction_id: p[0] }) },
  { method: 'GET', pattern: /^\/credits$/, tool: 'credits.get', input: () => ({}) },
  { method: 'POST', pattern: /^\/credits\/topup\/([^/]+)$/, tool: 'credits.topup', input: (p) => ({ credits_amount: p[0] }) },
  { method: 'POST', pattern: /^\/donate\/([^/]+)$/, tool: 'donate.send', input: (p) => ({ amount: p[0] }) },
];

function isLoopback(host: string): boolean {
  return host === '127.0.0.1' || host === '::1' || host === 'localhost' || /^127\./.test(host);
}

/** Host header values that may reach us: anything else is DNS rebinding. */
function allowedHosts(host: string, port: number): Set<string> {
  const names = new Set([host.includes(':') ? `[${host}]` : host]);
  if (isLoopback(host)) ['localhost', '127.0.0.1', '[::1]'].forEach((n) => names.add(n));
  return new Set([...names].map((n) => `${n}:${port}`.toLowerCase()));
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function refuse(code: string, message: string, status: number): NanoPayError {
  return new NanoPayError(code, message, { status });
}

/** The always-on guards: Host, Origin and Sec-Fetch-Site, token, content type. */
function guard(req: IncomingMessage, hosts: Set<string>, token: string | undefined): void {
  if (!hosts.has(String(req.headers.host ?? '').toLowerCase())) {
    throw refuse('FORBIDDEN', 'Host not allowed: the toolset only answers requests addressed to its listen address', 403);
  }
  if (req.headers.origin !== undefined) throw refuse('FORBIDDEN', 'Requests from web pages (with an Origin header) are refused', 403);
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'none' && site !== 'same-origin') throw refuse('FORBIDDEN', 'Cross-site requests are refused', 403);
  if (token !== undefined) {
    const auth = String(req.headers.authorization ?? '');
    if (!auth.startsWith('Bearer ') || !sameSecret(auth.slice(7).trim(), token)) {
      throw refuse('UNAUTHORIZED', 'A valid "Authorization: Bearer <token>" header is required', 401);
    }
  }
  if (req.method === 'POST' && !/^application\/json\s*(;|$)/i.test(String(req.headers['content-type'] ?? ''))) {
    throw refuse('UNSUPPORTED_MEDIA_TYPE', 'POST requests must have Content-Type: application/json', 415);
  }
}

/** The local HTTP toolset: the seven tools over the spec's routes, behind the guards. */
export async function startToolset(session: Session, options: ToolsetOptions): Promise<RunningToolset> {
  if (!isLoopback(options.host) && options.token === undefined) {
    throw new NanoPayError('USAGE', `Listening on ${options.host} (not loopback) requires a token`, { hint: 'Pass --token-file or set NANOPAY_TOOLSET_TOKEN.' });
  }
  let hosts = new Set<string>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const started = Date.now();
    const url = new URL(req.url ?? '/', 'http://toolset');
    let status: number;
    try {
      guard(req, hosts, options.token);
      const route = ROUTES.find((r) => r.method === req.method && r.pattern.test(url.pathname));
      if (route === undefined) {
        const known = ROUTES.some((r) => r.pattern.test(url.pathname));
        throw refuse('NOT_FOUND', known ? `${req.method} is not allowed on ${url.pathname}` : `No route ${req.method} ${url.pathname}`, known ? 405 : 404);
      }
      const body = req.method === 'POST' ? ((await readJsonBody(req, MAX_BODY)) as ToolInput) : {};
      const params = (route.pattern.exec(url.pathname) as RegExpExecArray).slice(1).map(decodeURIComponent);
      const tool: Tool = findTool(route.tool);
      const result = await runTool(session, tool, route.input(params, url.searchParams, body));
      status = result.status;
      sendJson(res, status, result.envelope);
      if (tool.writes && result.envelope.success) options.afterWrite?.();
    } catch (error) {
      const failure = error instanceof NanoPayError ? error : new NanoPayError('INTERNAL_ERROR', 'Internal error');
      status = failure.status;
      if (failure.code === 'PAYLOAD_TOO_LARGE') res.setHeader('connection', 'close');
      sendJson(res, status, { success: false, data: null, error: { error: failure.code, message: failure.message } });
    }
    // One line per request; paths carry no secrets (amounts and ids only).
    options.log?.(`${req.method} ${url.pathname} ${status} ${Date.now() - started}ms`);
  };

  const sockets = new Set<Socket>();
  const server = createServer((req, res) => void handle(req, res));
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(error.code === 'EADDRINUSE' ? new NanoPayError('CONFLICT', `${options.host}:${options.port} is already in use`, { hint: 'Pick another --port.' }) : error),
    );
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  hosts = allowedHosts(options.host, port);
  const shown = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${shown}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}
