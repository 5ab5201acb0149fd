import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { NanoPayError } from '../errors.js';
import { parseFormObject, parseJsonObject, readBody } from './body.js';
import { checkHost, checkToken, listenHosts, refuseWebPages } from './guards.js';
import { requestIdOf, type ServerLog } from './log.js';
import type { Counter, Metrics } from './metrics.js';
import { peerUid } from './peer.js';
import { errorEnvelope, publicFailure, sendJson, sendRawEnvelope, successEnvelope, type Envelope } from './respond.js';
import { compilePath, decodeParams, loggablePath, matchPath, splitTarget, type PathTemplate } from './routing.js';

/** What a route handler sees of a request. */
export interface Call {
  method: string;
  /** The path as sent (still %-encoded), without the query. */
  path: string;
  /** Path parameters, decoded. */
  params: Record<string, string>;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  /** The JSON object sent; `{}` when the request had no body (and for `fallback`, which gets `rawBody`). */
  body: Record<string, unknown>;
  /** The body's bytes as sent, for `fallback` only (a proxy forwards any content type). */
  rawBody?: Buffer;
  /** Aborted when the client goes away or the server closes: long answers (streams) stop on it. */
  signal: AbortSignal;
  request: IncomingMessage;
  response: ServerResponse;
}

/** Returned by a handler that wrote the response itself (HTML, Server-Sent Events, a stream). */
export const RESPONDED: unique symbol = Symbol('responded');

export interface Route {
  method: string;
  /** Literal segments and `:name` parameters, e.g. `/payment/status/:transaction_id`. */
  path: string;
  /** Parameters the log must not show (e.g. a key in the path), whatever the method asked. */
  secretParams?: readonly string[];
  /**
   * Answered without the server's token: health and readiness, which tell nothing secret. The
   * user check and the Host check still apply.
   */
  public?: boolean;
  /**
   * An answer that lasts until the client leaves (a page's Server-Sent Events). When the server
   * closes it gets a `retry:` hint and is ended at once, where other answers are let finish.
   */
  endless?: boolean;
  /** Its own bound on the body, over the server's maxBodyBytes. */
  maxBodyBytes?: number;
  /**
   * Takes an HTML form's body (application/x-www-form-urlencoded, each field's first value) instead of JSON:
   * a page's form that works without script. Such a route checks where it came from itself (a CSRF token).
   */
  form?: boolean;
  /**
   * Returns the `data` of a 200 envelope, or throws (a NanoPayError becomes its
   * envelope, anything else a 500), or writes `call.response` itself and returns RESPONDED.
   */
  handle(call: Call): unknown;
}

export interface HttpServerOptions {
  host: string;
  port: number;
  routes: readonly Route[];
  /**
   * Answers every request no route matches (any method, any path), with the
   * body unparsed in `rawBody`: a reverse proxy. Without it such requests get 404/405.
   */
  fallback?: Route['handle'];
  /** Largest request body: beyond it 413, and the connection is closed unread. Default 64 KiB. */
  maxBodyBytes?: number;
  /** A body must come as application/json (415 otherwise); a request without a body needs no type. Default true. */
  requireJsonContentType?: boolean;
  /** Answer only requests whose Host header names the listen address (defeats DNS rebinding). */
  checkHost?: boolean;
  /** Refuse what web pages send: any Origin header, or a cross-site Sec-Fetch-Site. */
  refuseWebPages?: boolean;
  /** When set, every request needs `Authorization: Bearer <token>`. */
  token?: string;
  /**
   * Answer only the processes of user `uid`: each connection's peer is looked
   * up once, in the kernel's socket tables in `socketTables` (peer.ts), before
   * any route or upgrade runs. A connection of another user, or one whose user
   * cannot be found, gets 403 FORBIDDEN on every request.
   */
  onlyUser?: { uid: number; socketTables: string };
  /**
   * One line per request (method, path, status, ms; and for a structured log the request's id,
   * from a well-formed X-Request-Id or made, which every answer carries), and internal errors. Never a secret.
   */
  log?: ServerLog;
  /** Counts the requests (by method, route and status), those in flight and the endless streams open into it. */
  metrics?: Metrics;
  /** Set on every answer of the server (e.g. the sandbox's `Nanopay-Sandbox: 1`). */
  headers?: Readonly<Record<string, string>>;
  /** Applied to every envelope before it is sent, success or error (the toolset's `"sandbox": true`). */
  envelope?: (envelope: Envelope) => unknown;
  /** Time allowed to receive the headers, and the whole request. Defaults 10 s and 30 s. */
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  /** How long close() lets answers in flight finish before cutting them (the drain's bound). Default 5 s. */
  closeGraceMs?: number;
  /**
   * Takes over requests that ask to upgrade the connection (a WebSocket). It
   * owns the socket from then on; if it throws, the socket is destroyed. The
   * guards apply first.
   */
  upgrade?: (req: IncomingMessage, socket: Socket, head: Buffer) => void;
}

export interface HttpServer {
  url: string;
  host: string;
  port: number;
  /**
   * Drains: stops listening, ends idle keep-alive connections, ends endless streams (with a retry
   * hint), lets the other answers in flight finish within the grace, then cuts the rest.
   */
  close(): Promise<void>;
}

interface CompiledRoute {
  route: Route;
  template: PathTemplate;
}

/** One request being answered: its handler's signal, and what its log line and count say. */
interface Exchange {
  controller: AbortController;
  requestId: string;
  /** The path as the log shows it: no query, secret parameters masked. */
  shownPath: string;
  /** The route's template, for the count (a bounded set): "(fallback)" or "(none)" otherwise. */
  routeLabel: string;
  endless: boolean;
}

/** When a drained stream's client should come back (to this server restarted, or to another). */
const RETRY_AFTER_DRAIN_MS = 3_000;

/** The methods counted by name; any other is "other", so a client cannot make new series. */
const COUNTED_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** The failure for a request Node could not parse; there is no route or response for it. */
function transportFailure(error: NodeJS.ErrnoException): NanoPayError {
  if (error.code === 'HPE_HEADER_OVERFLOW') return new NanoPayError('PAYLOAD_TOO_LARGE', 'The request headers are too large', { status: 431 });
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') return new NanoPayError('TIMEOUT', 'The request took too long to arrive', { status: 408 });
  return new NanoPayError('INVALID_REQUEST', 'The request is not valid HTTP');
}

function listenFailure(error: NodeJS.ErrnoException, host: string, port: number): Error {
  if (error.code === 'EADDRINUSE') return new NanoPayError('CONFLICT', `${host}:${port} is already in use`, { hint: 'Pick another port.' });
  if (error.code === 'EACCES' || error.code === 'EADDRNOTAVAIL') return new NanoPayError('USAGE', `Cannot listen on ${host}:${port} (${error.code})`);
  return error;
}

/**
 * A JSON-over-HTTP server: routes with path parameters, the guards, bounded
 * JSON bodies, the `{success, data, error}` envelope for every answer it
 * writes, one log line per request. No request can end it.
 */
export async function startHttpServer(options: HttpServerOptions): Promise<HttpServer> {
  const routes: CompiledRoute[] = options.routes.map((route) => ({ route, template: compilePath(route.path) }));
  const maxBody = options.maxBodyBytes ?? 64 * 1024;
  const requireJsonType = options.requireJsonContentType ?? true;
  const log: ServerLog = options.log ?? ((): void => undefined);
  const mark = options.envelope ?? ((envelope: Envelope): unknown => envelope);
  let hosts = new Set<string>();
  let closing = false;
  /** Every open connection, with how many of its requests are being answered. */
  const sockets = new Map<Socket, number>();
  /** Answers under way. */
  const inFlight = new Map<ServerResponse, Exchange>();
  let requests: Counter | undefined;
  if (options.metrics !== undefined) {
    requests = options.metrics.counter('nanopay_http_requests_total', 'HTTP requests answered, by method, route and status (499: the client left before any answer)', []);
    options.metrics.gauge('nanopay_http_requests_in_flight', 'HTTP requests being answered', () => inFlight.size);
    options.metrics.gauge('nanopay_sse_viewers', 'Server-Sent Event streams open (live checkout pages)', () => [...inFlight.values()].filter((e) => e.endless).length);
  }

  /** The routes whose template fits `path`, whatever their method. */
  const matching = (path: string): (CompiledRoute & { params: Record<string, string> })[] =>
    routes.flatMap((r) => {
      const params = matchPath(r.template, path);
      return params === undefined ? [] : [{ ...r, params }];
    });
  /** A request target as the log shows it: without its query, with the secret parameters of the route it names masked. */
  const shownPath = (target: string | undefined): string => {
    const path = String(target ?? '').split('?')[0] as string;
    const named = matching(path)[0];
    return named === undefined ? loggablePath(path) : loggablePath(path, named.template, named.route.secretParams);
  };
  /** Per connection (onlyUser): why it is refused, or undefined when it is the user's own. Never rejects. */
  const peers = new WeakMap<Socket, Promise<NanoPayError | undefined>>();
  const onlyUser = options.onlyUser;

  const identify = async (socket: Socket): Promise<NanoPayError | undefined> => {
    if (onlyUser === undefined) return undefined;
    const client = { address: socket.remoteAddress ?? '', port: socket.remotePort ?? 0 };
    const uid = await peerUid(onlyUser.socketTables, client, { address: socket.localAddress ?? '', port: socket.localPort ?? 0 }).catch(() => undefined);
    if (uid === onlyUser.uid) return undefined;
    const who = uid === undefined ? 'a process whose user cannot be found' : `another user (uid ${uid})`;
    log(`refused the connection from ${client.address}:${client.port}: ${who}`, { event: 'connection_refused', level: 'warn', fields: { client: client.address, uid } });
    return new NanoPayError('FORBIDDEN', `This server answers only the processes of its own user (uid ${onlyUser.uid}); this connection comes from ${who}`);
  };
  /** Throws the refusal of the request's connection, looked up once per connection. */
  const admit = async (socket: Socket): Promise<void> => {
    if (onlyUser === undefined) return;
    let verdict = peers.get(socket);
    if (verdict === undefined) {
      verdict = identify(socket);
      peers.set(socket, verdict);
    }
    const refused = await verdict;
    if (refused !== undefined) throw refused;
  };

  const guard = (headers: IncomingHttpHeaders, publicRoute = false): void => {
    if (options.checkHost === true) checkHost(headers, hosts);
    if (options.refuseWebPages === true) refuseWebPages(headers);
    if (options.token !== undefined && !publicRoute) checkToken(headers, options.token);
  };

  const answer = async (req: IncomingMessage, res: ServerResponse, exchange: Exchange): Promise<void> => {
    const method = req.method ?? 'GET';
    const { signal } = exchange.controller;
    const { path, query } = splitTarget(req.url ?? '/');
    await admit(req.socket);
    const matches = matching(path);
    const found = matches.find((m) => m.route.method === method);
    const fallback = options.fallback;
    exchange.routeLabel = found?.route.path ?? (fallback === undefined ? '(none)' : '(fallback)');
    guard(req.headers, found?.route.public === true);
    if (found === undefined && fallback !== undefined) {
      const rawBody = await readBody(req, maxBody);
      const data: unknown = await fallback({ method, path, params: {}, query, headers: req.headers, body: {}, rawBody, signal, request: req, response: res });
      if (data === RESPONDED) return;
      if (res.headersSent) throw new Error(`${method} (fallback) wrote its response but did not return RESPONDED`);
      return sendJson(res, 200, mark(successEnvelope(data ?? null)));
    }
    if (found === undefined) {
      if (matches.length === 0) throw new NanoPayError('NOT_FOUND', `No route ${method} ${exchange.shownPath}`);
      res.setHeader('allow', [...new Set(matches.map((m) => m.route.method))].join(', '));
      throw new NanoPayError('NOT_FOUND', `${method} is not allowed on ${exchange.shownPath}`, { status: 405 });
    }
    exchange.endless = found.route.endless === true;
    // Drained before it began: a stream that would be cut at once is not started.
    if (exchange.endless && closing) throw new NanoPayError('NOT_READY', 'The server is closing', { status: 503 });
    const params = decodeParams(found.params);
    const bytes = await readBody(req, found.route.maxBodyBytes ?? maxBody);
    const body = found.route.form === true ? parseFormObject(bytes, req.headers['content-type']) : parseJsonObject(bytes, req.headers['content-type'], requireJsonType);
    const data: unknown = await found.route.handle({ method, path, params, query, headers: req.headers, body, signal, request: req, response: res });
    if (data === RESPONDED) return;
    if (res.headersSent) throw new Error(`${method} ${found.route.path} wrote its response but did not return RESPONDED`);
    sendJson(res, 200, mark(successEnvelope(data ?? null)));
  };

  const fail = (req: IncomingMessage, res: ServerResponse, error: unknown, exchange: Exchange): void => {
    const failure = publicFailure(error);
    if (failure.code === 'INTERNAL_ERROR') {
      log(`internal error on ${req.method} ${exchange.shownPath}: ${error instanceof Error ? error.message : String(error)}`, {
        event: 'internal_error',
        level: 'error',
        fields: { request_id: exchange.requestId },
      });
    }
    // Too late for an envelope (a stream had started): cut it, so the client sees it is incomplete.
    if (res.headersSent) return void res.destroy();
    // Leave an unread body unread: answer, then close the connection.
    if (!req.complete) res.setHeader('connection', 'close');
    const shown = failure.code === 'INTERNAL_ERROR' ? new NanoPayError('INTERNAL_ERROR', 'Internal error') : failure;
    // Our 503s mean busy (AGENT_BUSY): a second later is a fair retry.
    if (shown.status === 503) res.setHeader('retry-after', '1');
    sendJson(res, shown.status, mark(errorEnvelope(shown)));
  };

  const server = createServer(
    { requestTimeout: options.requestTimeoutMs ?? 30_000, headersTimeout: options.headersTimeoutMs ?? 10_000, connectionsCheckingInterval: 1_000 },
    (req, res) => {
      const started = performance.now();
      const socket = req.socket;
      sockets.set(socket, (sockets.get(socket) ?? 0) + 1);
      const exchange: Exchange = { controller: new AbortController(), requestId: requestIdOf(req.headers), shownPath: shownPath(req.url), routeLabel: '(none)', endless: false };
      inFlight.set(res, exchange);
      res.on('close', () => {
        inFlight.delete(res);
        const finished = res.writableFinished;
        if (!finished) exchange.controller.abort();
        const left = (sockets.get(socket) ?? 1) - 1;
        if (sockets.has(socket)) sockets.set(socket, left);
        if (closing && left === 0) socket.end();
        // 499: the client went away before any answer.
        const status = res.headersSent ? res.statusCode : 499;
        const ms = Math.round(performance.now() - started);
        const cut = res.headersSent && !finished;
        const method = req.method ?? '-';
        log(`${method} ${exchange.shownPath} ${status} ${ms}ms${cut ? ' (cut short)' : ''}`, {
          event: 'request',
          level: status >= 500 ? 'error' : 'info',
          fields: { request_id: exchange.requestId, method, path: exchange.shownPath, status, duration_ms: ms, ...(cut ? { cut_short: true } : {}) },
        });
        requests?.inc({ method: COUNTED_METHODS.has(method) ? method : 'other', route: exchange.routeLabel, status: String(status) });
      });
      if (closing) res.setHeader('connection', 'close');
      res.setHeader('x-request-id', exchange.requestId);
      for (const [name, value] of Object.entries(options.headers ?? {})) res.setHeader(name, value);
      answer(req, res, exchange)
        .catch((error: unknown) => fail(req, res, error, exchange))
        // Last resort (the answer itself failed): drop this connection, never the process.
        .catch(() => res.destroy());
    },
  );

  server.on('connection', (socket: Socket) => {
    sockets.set(socket, 0);
    socket.on('close', () => sockets.delete(socket));
    // While the socket surely exists on both ends: the client's row may go once it closes.
    if (onlyUser !== undefined) peers.set(socket, identify(socket));
  });
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    if (!socket.writable || (sockets.get(socket) ?? 0) > 0 || error.code === 'ECONNRESET') return void socket.destroy();
    const failure = transportFailure(error);
    log(`- (unparsed request: ${error.code ?? 'error'}) ${failure.status}`, { event: 'unparsed_request', level: 'warn', fields: { status: failure.status, reason: error.code } });
    sendRawEnvelope(socket, failure);
  });
  const upgrade = options.upgrade;
  // Only with a handler: without one, Node answers an Upgrade header as a plain request.
  if (upgrade !== undefined) {
    server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
      // Node took its own error listener off the socket: a reset while the checks run must not be unhandled.
      socket.on('error', () => socket.destroy());
      const refusal = async (): Promise<NanoPayError | undefined> => {
        try {
          if (closing) throw new NanoPayError('NOT_FOUND', 'The server is closing');
          await admit(socket);
          guard(req.headers);
          return undefined;
        } catch (error) {
          return publicFailure(error);
        }
      };
      const path = shownPath(req.url);
      void refusal().then((refused) => {
        if (refused !== undefined) {
          log(`${req.method} ${path} upgrade ${refused.status}`, { event: 'upgrade', level: 'warn', fields: { method: req.method, path, status: refused.status } });
          return void sendRawEnvelope(socket, refused);
        }
        log(`${req.method} ${path} upgrade`, { event: 'upgrade', fields: { method: req.method, path } });
        try {
          upgrade(req, socket, head);
        } catch (error) {
          if (!(error instanceof NanoPayError)) log(`upgrade failed: ${error instanceof Error ? error.message : String(error)}`, { event: 'internal_error', level: 'error' });
          socket.destroy();
        }
      });
    });
  }
  // Node would answer these by itself, outside the envelope (CONNECT by dropping the connection).
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    log(`${req.method} - 405`, { event: 'request', level: 'warn', fields: { method: req.method, status: 405 } });
    sendRawEnvelope(socket, new NanoPayError('NOT_FOUND', 'CONNECT is not allowed', { status: 405 }));
  });
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    log(`${req.method} ${shownPath(req.url)} 417`, { event: 'request', level: 'warn', fields: { method: req.method, path: shownPath(req.url), status: 417 } });
    res.setHeader('connection', 'close');
    sendJson(res, 417, errorEnvelope(new NanoPayError('INVALID_REQUEST', 'Only "Expect: 100-continue" is understood', { status: 417 })));
  });

  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException): void => reject(listenFailure(error, options.host, options.port));
    server.once('error', onError);
    server.listen(options.port, options.host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  server.on('error', (error: Error) => log(`server error: ${error.message}`, { event: 'server_error', level: 'error' }));

  const { port } = server.address() as AddressInfo;
  hosts = listenHosts(options.host, port);
  const shownHost = options.host.includes(':') ? `[${options.host}]` : options.host;
  let closed: Promise<void> | undefined;
  return {
    url: `http://${shownHost}:${port}`,
    host: options.host,
    port,
    close: () => {
      closed ??= new Promise<void>((resolve) => {
        closing = true;
        server.close(() => resolve());
        for (const [socket, active] of sockets) if (active === 0) socket.destroy();
        for (const [res, exchange] of inFlight) {
          if (!res.headersSent) res.setHeader('connection', 'close');
          if (!exchange.endless) continue;
          // An EventSource reconnects after this long: to this server restarted, or to another behind the proxy.
          if (res.headersSent && !res.writableEnded && String(res.getHeader('content-type')).startsWith('text/event-stream')) res.write(`retry: ${RETRY_AFTER_DRAIN_MS}\n\n`);
          exchange.controller.abort();
        }
        const cut = setTimeout(() => {
          for (const exchange of inFlight.values()) exchange.controller.abort();
          for (const socket of sockets.keys()) socket.destroy();
        }, options.closeGraceMs ?? 5_000);
        cut.unref();
        server.once('close', () => clearTimeout(cut));
      });
      return closed;
    },
  };
}
