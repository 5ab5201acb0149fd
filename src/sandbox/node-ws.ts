import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { addressToPublicKey, isValidAddress } from '../nano/index.js';
import type { LedgerBlock } from './ledger.js';
import { confirmationMessage } from './node-rpc.js';
import type { SandboxService } from './service.js';

/** Test handles on the node WebSocket: cut every connection, refuse new ones, count subscribers and what they follow. */
export interface NodeSockets {
  /** Closes every connection abruptly, as a node restart or a network cut would. */
  drop(): void;
  /** While true, new connections are refused. */
  refuse(refusing: boolean): void;
  /** Connections with a confirmation subscription. */
  subscribers(): number;
  /** The accounts the subscriptions' filters name (each once). */
  followed(): string[];
}

interface Client {
  /** Public keys followed; undefined for every block. */
  /** Public key → the account as named; undefined for every block. */
  accounts: Map<string, string> | undefined;
  subscribed: boolean;
}

/** The valid accounts in `list`, by public key (a node skips the others, with a warning in its log). */
function keysOf(list: unknown): [string, string][] {
  return Array.isArray(list) ? list.filter((a): a is string => typeof a === 'string' && isValidAddress(a)).map((a) => [addressToPublicKey(a), `nano_${a.slice(a.indexOf('_') + 1)}`]) : [];
}

/** A subscription's filter: without `accounts`, every block; an empty list, none (as a node's). */
function accountsOf(options: unknown): Map<string, string> | undefined {
  const list = (options as { accounts?: unknown } | undefined)?.accounts;
  return list === undefined ? undefined : new Map(keysOf(list));
}

/**
 * `update` of a subscription's filter, as the reference node (V27.1) does it: `accounts_add` then
 * `accounts_del`; a subscription that let every block through then lets through only those added. False
 * (and no ack) without options.
 */
function updated(client: Client, options: unknown): boolean {
  if (typeof options !== 'object' || options === null) return false;
  const { accounts_add: add, accounts_del: del } = options as { accounts_add?: unknown; accounts_del?: unknown };
  if (add === undefined && del === undefined) return true;
  const accounts = client.accounts ?? new Map<string, string>();
  for (const [key, address] of keysOf(add)) accounts.set(key, address);
  for (const [key] of keysOf(del)) accounts.delete(key);
  client.accounts = accounts;
  return true;
}

/**
 * The reference node's limit on a message it reads (Boost.Beast's default, 16 MiB). Beyond it the node
 * drops the connection without a close frame (1006, seen on V27.1); the sandbox closes it with 1009.
 */
const MAX_MESSAGE = 16 * 1024 * 1024;

/**
 * The node's WebSocket on the sandbox's port: the `confirmation` topic, with
 * an account filter that `subscribe` replaces and `update` changes (as a node
 * does), acks, and ping. Every block the ledger applies is sent to the subscribers that follow
 * its account or, for a send, its destination.
 */
export function nodeWebSocket(service: SandboxService): { upgrade(req: IncomingMessage, socket: Socket, head: Buffer): void; handles: NodeSockets; close(): void } {
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE });
  const clients = new Map<WebSocket, Client>();
  let refusing = false;

  const send = (ws: WebSocket, data: unknown): void => {
    if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(data));
  };

  const onBlock = (stored: LedgerBlock): void => {
    const message = confirmationMessage(stored);
    const keys = [addressToPublicKey(stored.account), ...(stored.subtype === 'send' ? [stored.block.link] : [])];
    for (const [ws, client] of clients) {
      if (client.subscribed && (client.accounts === undefined || keys.some((k) => client.accounts?.has(k)))) send(ws, message);
    }
  };
  service.ledger.listeners.add(onBlock);

  wss.on('connection', (ws: WebSocket) => {
    const client: Client = { accounts: undefined, subscribed: false };
    clients.set(ws, client);
    ws.on('close', () => clients.delete(ws));
    ws.on('error', () => ws.terminate());
    ws.on('message', (raw) => {
      let m: { action?: unknown; topic?: unknown; ack?: unknown; id?: unknown; options?: unknown };
      try {
        m = JSON.parse(raw.toString()) as typeof m;
      } catch {
        return;
      }
      const time = String(Date.now());
      if (m.action === 'ping') return send(ws, { ack: 'pong', time, ...(m.id === undefined ? {} : { id: m.id }) });
      if (m.topic !== 'confirmation') return;
      if (m.action === 'subscribe') {
        client.subscribed = true;
        client.accounts = accountsOf(m.options);
      } else if (m.action === 'unsubscribe') {
        client.subscribed = false;
      } else if (m.action !== 'update' || !client.subscribed || !updated(client, m.options)) {
        // An update of a topic not subscribed to, or without options, fails: a node sends no ack for it.
        return;
      }
      if (m.ack === true || m.ack === 'true') send(ws, { ack: m.action, time, ...(m.id === undefined ? {} : { id: m.id }) });
    });
  });

  return {
    upgrade: (req, socket, head) => {
      if (refusing) return void socket.destroy();
      wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
    },
    handles: {
      drop: () => {
        for (const ws of clients.keys()) ws.terminate();
      },
      refuse: (on) => {
        refusing = on;
      },
      subscribers: () => [...clients.values()].filter((c) => c.subscribed).length,
      followed: () => [...new Set([...clients.values()].flatMap((c) => (c.subscribed ? [...(c.accounts?.values() ?? [])] : [])))],
    },
    close: () => {
      service.ledger.listeners.delete(onBlock);
      for (const ws of clients.keys()) ws.terminate();
      wss.close();
    },
  };
}
