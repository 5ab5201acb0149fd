import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';

/**
 * A WebSocket proxy in front of a node's WebSocket: each client gets its own connection to the node, and
 * every message passes both ways as it is. It records what clients sent (parsed), and can cut every
 * connection and refuse new ones, as a network cut or a node restart would, without touching the node.
 */
export interface WsProxy {
  url: string;
  /** Every message clients sent, in order. */
  sent: Record<string, unknown>[];
  /** Connections open now. */
  connections(): number;
  /** Cuts every connection at once (no close frame). */
  drop(): void;
  /** While true, new connections are refused. */
  refuse(refusing: boolean): void;
  close(): Promise<void>;
}

export async function startWsProxy(target: string): Promise<WsProxy> {
  const sent: Record<string, unknown>[] = [];
  const pairs = new Set<{ client: WebSocket; upstream: WebSocket }>();
  const sockets = new Set<Socket>();
  let refusing = false;
  const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 * 1024 });
  const server: Server = createServer((_req, res) => res.writeHead(426).end());
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('upgrade', (req, socket, head) => {
    if (refusing) return void socket.destroy();
    wss.handleUpgrade(req, socket as Socket, head, (client) => {
      const upstream = new WebSocket(target, { maxPayload: 64 * 1024 * 1024 });
      const pair = { client, upstream };
      pairs.add(pair);
      const waiting: string[] = [];
      const end = (): void => {
        pairs.delete(pair);
        client.terminate();
        upstream.terminate();
      };
      upstream.on('open', () => {
        for (const m of waiting.splice(0)) upstream.send(m);
      });
      upstream.on('message', (data, binary) => client.send(data, { binary }));
      client.on('message', (data) => {
        try {
          sent.push(JSON.parse(data.toString()) as Record<string, unknown>);
        } catch {
          sent.push({ unparsed: data.toString() });
        }
        if (upstream.readyState === WebSocket.OPEN) upstream.send(data.toString());
        else waiting.push(data.toString());
      });
      for (const socket of [client, upstream]) {
        socket.on('close', end);
        socket.on('error', end);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sent,
    connections: () => pairs.size,
    drop: () => {
      for (const { client, upstream } of [...pairs]) (client.terminate(), upstream.terminate());
      pairs.clear();
    },
    refuse: (on) => {
      refusing = on;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const { client, upstream } of pairs) (client.terminate(), upstream.terminate());
        for (const s of sockets) s.destroy();
        wss.close();
        server.close(() => resolve());
      }),
  };
}
