import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { NanoPayError, toNanoPayError } from '../errors.js';
import { readJsonBody, sendJson } from '../net/json-http.js';
import { CREDIT_COSTS, type Operation } from './pricing.js';
import { SandboxService } from './service.js';
import { StateWriter, corruptState, loadState, type SandboxState } from './state.js';

export interface SandboxOptions {
  port?: number;
  host?: string;
  /** Where the state is kept across restarts (sandbox-state.json); in memory when absent. */
  dataDir?: string;
  /** PoW thresholds to advertise and enforce; when absent, the stored choice, else 'dev'. */
  thresholds?: 'dev' | 'live';
  /** Receives one line per request, and internal errors. */
  log?: (line: string) => void;
}

export interface RunningSandbox {
  url: string;
  port: number;
  /** The emulated service behind the HTTP API, for tests that must reach past it (e.g. to exhaust credits). */
  service: SandboxService;
  close(): Promise<void>;
}

const MAX_BODY = 64 * 1024;

type Body = Record<string, unknown>;
interface Call {
  params: string[];
  body: Body;
  apiKey: string;
}
interface Route {
  method: 'GET' | 'POST';
  pattern: RegExp;
  /** What the call costs (CREDIT_COSTS); public routes have none and need no key. */
  cost?: Operation;
  handle(service: SandboxService, call: Call): unknown;
}

function field(body: Body, name: string): string {
  const value = body[name];
  if (typeof value !== 'string') throw new NanoPayError('INVALID_REQUEST', `"${name}" must be a string`);
  return value;
}

function optionalField(body: Body, name: string): string | undefined {
  return body[name] === undefined || body[name] === null ? undefined : field(body, name);
}

function blockOf(body: Body): unknown {
  const block = body.block;
  if (typeof block === 'string') {
    try {
      return JSON.parse(block) as unknown;
    } catch {
      throw new NanoPayError('INVALID_JSON', '"block" is a string but not JSON');
    }
  }
  if (typeof block !== 'object' || block === null) throw new NanoPayError('INVALID_REQUEST', '"block" must be an object');
  return block;
}

const ROUTES: Route[] = [
  { method: 'POST', pattern: /^\/wallet\/create$/, handle: (s) => s.createWallet() },
  { method: 'GET', pattern: /^\/wallet\/balance\/([^/]+)$/, cost: 'balance', handle: (s, c) => s.balance(c.params[0] as string) },
  { method: 'POST', pattern: /^\/wallet\/pending$/, cost: 'pending', handle: (s, c) => s.pending(field(c.body, 'address')) },
  { method: 'GET', pattern: /^\/wallet\/pending\/([^/]+)$/, cost: 'pending', handle: (s, c) => s.pending(c.params[0] as string) },
  { method: 'POST', pattern: /^\/account\/info$/, cost: 'accountInfo', handle: (s, c) => s.accountInfo(field(c.body, 'address')) },
  { method: 'GET', pattern: /^\/account\/info\/([^/]+)$/, cost: 'accountInfo', handle: (s, c) => s.accountInfo(c.params[0] as string) },
  { method: 'POST', pattern: /^\/block\/info$/, cost: 'blockInfo', handle: (s, c) => s.blockInfo(field(c.body, 'hash')) },
  { method: 'GET', pattern: /^\/block\/info\/([^/]+)$/, cost: 'blockInfo', handle: (s, c) => s.blockInfo(c.params[0] as string) },
  {
    method: 'POST',
    pattern: /^\/block\/publish$/,
    cost: 'publish',
    handle: (s, c) => ({ hash: s.publish(blockOf(c.body), optionalField(c.body, 'subtype')).hash }),
  },
  { method: 'GET', pattern: /^\/network\/active-difficulty$/, cost: 'activeDifficulty', handle: (s) => s.activeDifficulty() },
  {
    method: 'POST',
    pattern: /^\/payment\/request$/,
    cost: 'paymentRequest',
    handle: (s, c) => s.paymentRequest(field(c.body, 'receive_address'), field(c.body, 'amount'), optionalField(c.body, 'redirect_url') ?? ''),
  },
  { method: 'GET', pattern: /^\/payment\/status\/([^/]+)$/, cost: 'paymentStatus', handle: (s, c) => s.paymentStatus(c.params[0] as string) },
  { method: 'GET', pattern: /^\/credits\/info$/, cost: 'creditsInfo', handle: (s, c) => s.credits(c.apiKey, 'string') },
  { method: 'GET', pattern: /^\/credits$/, cost: 'creditsInfo', handle: (s, c) => s.credits(c.apiKey, 'number') },
  { method: 'GET', pattern: /^\/credits\/topup\/([^/]+)$/, cost: 'topupOffer', handle: (s, c) => s.topupOffer(c.apiKey, c.params[0] as string) },
  {
    method: 'POST',
    pattern: /^\/credits\/topup$/,
    cost: 'topupSubmit',
    handle: (s, c) => s.topupSubmit(c.apiKey, field(c.body, 'transaction_id'), blockOf(c.body), optionalField(c.body, 'subtype')),
  },
  { method: 'GET', pattern: /^\/donate\/address$/, cost: 'donateAddress', handle: (s) => s.donationAddress() },
  { method: 'POST', pattern: /^\/sandbox\/fund$/, handle: (s, c) => s.fund(field(c.body, 'address'), optionalField(c.body, 'amount') ?? '10') },
  { method: 'GET', pattern: /^\/sandbox\/ledger$/, handle: (s) => s.dump() },
];

function pathParameter(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new NanoPayError('INVALID_REQUEST', 'The path has a malformed %-escape');
  }
}

/**
 * The state kept in `statePath`, or a fresh one. An explicit `thresholds`
 * option wins over the stored one (blocks already in the ledger stay valid).
 */
async function openService(statePath: string | undefined, thresholds: 'dev' | 'live' | undefined): Promise<SandboxService> {
  const loaded = statePath === undefined ? undefined : await loadState(statePath);
  if (loaded === undefined) return new SandboxService(SandboxService.fresh(thresholds ?? 'dev'));
  const state: SandboxState = { ...loaded, thresholds: thresholds ?? loaded.thresholds };
  try {
    return new SandboxService(state);
  } catch (error) {
    throw corruptState(statePath as string, (error as Error).message);
  }
}

function apiKeyOf(req: IncomingMessage): string | undefined {
  const auth = req.headers.authorization;
  if (typeof auth === 'string' && /^Bearer\s+/i.test(auth)) return auth.replace(/^Bearer\s+/i, '').trim();
  const header = req.headers['x-api-key'];
  return typeof header === 'string' ? header.trim() : undefined;
}

/** Starts the sandbox: an HTTP server speaking the Protected API over a real ledger. */
export async function startSandbox(options: SandboxOptions = {}): Promise<RunningSandbox> {
  const statePath = options.dataDir === undefined ? undefined : join(options.dataDir, 'sandbox-state.json');
  const service = await openService(statePath, options.thresholds);
  const writer = new StateWriter(statePath);
  await writer.save(() => service.snapshot());

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const started = Date.now();
    let path = req.url ?? '/';
    let status = 200;
    try {
      path = new URL(path, 'http://sandbox').pathname;
      const route = ROUTES.find((r) => r.method === req.method && r.pattern.test(path));
      if (route === undefined) {
        const known = ROUTES.some((r) => r.pattern.test(path));
        throw new NanoPayError('NOT_FOUND', known ? `${req.method} is not allowed on ${path}` : `No route ${req.method} ${path}`, { status: known ? 405 : 404 });
      }
      const body = req.method === 'POST' ? await readJsonBody(req, MAX_BODY) : {};
      const params = (route.pattern.exec(path) as RegExpExecArray).slice(1).map(pathParameter);
      let apiKey = '';
      const cost = route.cost === undefined ? 0 : CREDIT_COSTS[route.cost];
      if (route.cost !== undefined) {
        apiKey = service.authenticate(apiKeyOf(req));
        service.requireCredits(apiKey, cost);
      }
      // Handlers are synchronous: a call sees and leaves the state whole, with no
      // other request in between; the answer goes out once the state is on disk.
      const data = route.handle(service, { params, body, apiKey });
      if (cost > 0) service.charge(apiKey, cost);
      await writer.save(() => service.snapshot());
      sendJson(res, 200, { success: true, data, error: null });
    } catch (error) {
      const failure = toNanoPayError(error);
      status = failure.status;
      // Stop reading an oversized body: answer and close instead of draining it.
      if (failure.code === 'PAYLOAD_TOO_LARGE') res.setHeader('connection', 'close');
      const internal = failure.code === 'INTERNAL_ERROR';
      sendJson(res, status, { success: false, data: null, error: { error: failure.code, message: internal ? 'Internal error of the sandbox' : failure.message } });
      if (internal) options.log?.(`sandbox internal error: ${failure.message}`);
    }
    options.log?.(`${req.method} ${path} ${status} ${Date.now() - started}ms`);
  };

  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    // Last resort (the answer itself failed, e.g. the client went away): drop the connection, never the process.
    handle(req, res).catch(() => res.destroy());
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const { port, address } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  return {
    url: `http://${host}:${port}`,
    port,
    service,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
      await writer.save(() => service.snapshot());
    },
  };
}
