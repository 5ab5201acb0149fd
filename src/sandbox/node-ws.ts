import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { addressToPublicKey, isValidAddress } from '../nano/index.js';
import type { LedgerBlock } from './ledger.js';
import { confirmationMessage } from './node-rpc.js';
import type { SandboxService } from './service.js';

/** Test handles on the node WebSocket: cut every connection, refuse new ones, count subscribers. */
export interface NodeSockets {
  /** Closes every connection abruptly, as a node restart or a network cut would. */
  drop(): void;
  /** While true, new connections are refused. */
  refuse(refusing: boolean): void;
  /** Connections with a confirmation subscription. */
  subscribers(): number;
}

interface Client {
  /** Public keys followed; undefined for every block. */
  accounts: Set<string> | undefined;
  subscribed: boolean;
}

function accountsOf(options: unknown): Set<string> | undefined {
  const list = (options as { accounts?: unknown } | undefined)?.accounts;
  if (!Array.isArray(list)) return undefined;
  return new Set(list.filter((a): a is string => typeof a === 'string' && isValidAddress(a)).map((a) => addressToPublicKey(a)));
}

/**
 * The node's WebSocket on the sandbox's port: the `confirmation` topic, with
 * an account filter that `subscribe` replaces (as a node does), acks, and
 * ping. Every block the ledger applies is sent to the subscribers that follow
 * its account or, for a send, its destination.
 */
export function nodeWebSocket(service: SandboxService): { upgrade(req: IncomingMessage, socket: Socket, head: Buffer): void; handles: NodeSockets; close(): void } {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
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
      } else {
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
    },
    close: () => {
      service.ledger.listeners.delete(onBlock);
      for (const ws of clients.keys()) ws.terminate();
      wss.close();
    },
  };
}
