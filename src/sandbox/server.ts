import type { IncomingHttpHeaders } from 'node:http';
import { join } from 'node:path';
import { NanoPayError } from '../errors.js';
import { SANDBOX_HEADER } from '../api/sandbox-mark.js';
import type { ServerLog } from '../http/log.js';
import { probeRoutes, type Probes } from '../http/probes.js';
import { RESPONDED, startHttpServer, type Route } from '../http/server.js';
import { sandboxCheckout } from './checkout.js';
import { nodeRpc } from './node-rpc.js';
import { nodeWebSocket, type NodeSockets } from './node-ws.js';
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
  log?: ServerLog;
  /** /healthz and /readyz; /metrics only on --metrics-listen. */
  probes?: Probes;
  /** How long close() lets requests in flight finish. Default 5 s. */
  drainMs?: number;
}

export interface RunningSandbox {
  url: string;
  port: number;
  /** The emulated service behind the HTTP API, for tests that must reach past it (e.g. to exhaust credits). */
  service: SandboxService;
  /** The node side's WebSocket (same port, any path): `ws://…` */
  wsUrl: string;
  nodeSockets: NodeSockets;
  close(): Promise<void>;
}

const MAX_BODY = 64 * 1024;
/** The reference node's default max_request_size (V27.1, nano/lib/rpcconfig.hpp). */
const NODE_MAX_REQUEST = 32 * 1024 * 1024;

type Body = Record<string, unknown>;
interface SandboxCall {
  params: Record<string, string>;
  body: Body;
  apiKey: string;
}
interface SandboxRoute {
  method: 'GET' | 'POST';
  path: string;
  /** What the call costs (CREDIT_COSTS); public routes have none and need no key. */
  cost?: Operation;
  handle(service: SandboxService, call: SandboxCall): unknown;
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

const ROUTES: SandboxRoute[] = [
  { method: 'POST', path: '/wallet/create', handle: (s) => s.createWallet() },
  { method: 'GET', path: '/wallet/balance/:address', cost: 'balance', handle: (s, c) => s.balance(c.params.address as string) },
  { method: 'POST', path: '/wallet/pending', cost: 'pending', handle: (s, c) => s.pending(field(c.body, 'address')) },
  { method: 'GET', path: '/wallet/pending/:address', cost: 'pending', handle: (s, c) => s.pending(c.params.address as string) },
  { method: 'POST', path: '/account/info', cost: 'accountInfo', handle: (s, c) => s.accountInfo(field(c.body, 'address')) },
  { method: 'GET', path: '/account/info/:address', cost: 'accountInfo', handle: (s, c) => s.accountInfo(c.params.address as string) },
  { method: 'POST', path: '/block/info', cost: 'blockInfo', handle: (s, c) => s.blockInfo(field(c.body, 'hash')) },
  { method: 'GET', path: '/block/info/:hash', cost: 'blockInfo', handle: (s, c) => s.blockInfo(c.params.hash as string) },
  {
    method: 'POST',
    path: '/block/publish',
    cost: 'publish',
    handle: (s, c) => ({ hash: s.publish(blockOf(c.body), optionalField(c.body, 'subtype')).hash }),
  },
  { method: 'GET', path: '/network/active-difficulty', cost: 'activeDifficulty', handle: (s) => s.activeDifficulty() },
  {
    method: 'POST',
    path: '/payment/request',
    cost: 'paymentRequest',
    handle: (s, c) => s.paymentRequest(field(c.body, 'receive_address'), field(c.body, 'amount'), optionalField(c.body, 'redirect_url') ?? ''),
  },
  { method: 'GET', path: '/payment/status/:request_id', cost: 'paymentStatus', handle: (s, c) => s.paymentStatus(c.params.request_id as string) },
  { method: 'GET', path: '/credits/info', cost: 'creditsInfo', handle: (s, c) => s.credits(c.apiKey, 'string') },
  { method: 'GET', path: '/credits', cost: 'creditsInfo', handle: (s, c) => s.credits(c.apiKey, 'number') },
  { method: 'GET', path: '/credits/topup/:tier', cost: 'topupOffer', handle: (s, c) => s.topupOffer(c.apiKey, c.params.tier as string) },
  {
    method: 'POST',
    path: '/credits/topup',
    cost: 'topupSubmit',
    handle: (s, c) => s.topupSubmit(c.apiKey, field(c.body, 'transaction_id'), blockOf(c.body), optionalField(c.body, 'subtype')),
  },
  { method: 'GET', path: '/donate/address', cost: 'donateAddress', handle: (s) => s.donationAddress() },
  { method: 'POST', path: '/sandbox/fund', handle: (s, c) => s.fund(field(c.body, 'address'), optionalField(c.body, 'amount') ?? '10') },
  { method: 'GET', path: '/sandbox/ledger', handle: (s) => s.dump() },
];

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

function apiKeyOf(headers: IncomingHttpHeaders): string | undefined {
  const auth = headers.authorization;
  if (typeof auth === 'string' && /^Bearer\s+/i.test(auth)) return auth.replace(/^Bearer\s+/i, '').trim();
  const header = headers['x-api-key'];
  return typeof header === 'string' ? header.trim() : undefined;
}

/** Starts the sandbox: an HTTP server speaking the Protected API over a real ledger. */
export async function startSandbox(options: SandboxOptions = {}): Promise<RunningSandbox> {
  const statePath = options.dataDir === undefined ? undefined : join(options.dataDir, 'sandbox-state.json');
  const service = await openService(statePath, options.thresholds);
  const writer = new StateWriter(statePath);
  await writer.save(() => service.snapshot());

  const routes: Route[] = ROUTES.map((route) => ({
    method: route.method,
    path: route.path,
    handle: async ({ params, body, headers }) => {
      let apiKey = '';
      const cost = route.cost === undefined ? 0 : CREDIT_COSTS[route.cost];
      if (route.cost !== undefined) {
        apiKey = service.authenticate(apiKeyOf(headers));
        service.requireCredits(apiKey, cost);
      }
      // Handlers are synchronous: a call sees and leaves the state whole, with no
      // other request in between; the answer goes out once the state is on disk.
      const data = route.handle(service, { params, body, apiKey });
      if (cost > 0) service.charge(apiKey, cost);
      await writer.save(() => service.snapshot());
      return data;
    },
  }));
  const checkout = sandboxCheckout(service, () => writer.save(() => service.snapshot()));
  // The node side: node RPC answers bare JSON (errors too, with HTTP 200), so it writes its own response.
  routes.push({
    method: 'POST',
    path: '/',
    // The node's own bound (rpc max_request_size): a batch action names thousands of accounts.
    maxBodyBytes: NODE_MAX_REQUEST,
    handle: async ({ body, response }) => {
      const answer = nodeRpc(service, body);
      await writer.save(() => service.snapshot());
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify(answer));
      return RESPONDED;
    },
  });
  const sockets = nodeWebSocket(service);
  // The service's clients are programs, not web pages: no guards, and a body is read as JSON whatever type it declares.
  const server = await startHttpServer({
    host: options.host ?? '127.0.0.1',
    port: options.port ?? 0,
    routes: [...routes, ...checkout.routes, ...(options.probes === undefined ? [] : probeRoutes(options.probes, 'none'))],
    upgrade: sockets.upgrade,
    ...(options.probes === undefined ? {} : { metrics: options.probes.metrics }),
    ...(options.drainMs === undefined ? {} : { closeGraceMs: options.drainMs }),
    maxBodyBytes: MAX_BODY,
    requireJsonContentType: false,
    // Says what it is on every answer: nanopay's commands then mark their output as test money.
    headers: { [SANDBOX_HEADER]: '1' },
    ...(options.log === undefined ? {} : { log: options.log }),
  });
  return {
    url: server.url,
    port: server.port,
    service,
    wsUrl: server.url.replace(/^http/, 'ws'),
    nodeSockets: sockets.handles,
    close: async () => {
      checkout.close();
      sockets.close();
      await server.close();
      await writer.save(() => service.snapshot());
    },
  };
}
