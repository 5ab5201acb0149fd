import { createServer, request, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface Gate {
  /** Resolves when a held request has reached the proxy (it is not forwarded yet). */
  reached: Promise<void>;
  release(): void;
}

export interface GateProxy {
  url: string;
  /** Holds the next request to `path` until released. */
  hold(path: string): Gate;
  close(): Promise<void>;
}

/** A pass-through proxy that can hold a request to the upstream, to catch a tool while it provably still runs. */
export async function startGateProxy(target: string): Promise<GateProxy> {
  const gates = new Map<string, { arrived: () => void; opened: Promise<void> }>();
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      const gate = gates.get(path);
      gates.delete(path);
      gate?.arrived();
      void (gate?.opened ?? Promise.resolve()).then(() => {
        const upstream = request(new URL(req.url ?? '/', target), { method: req.method, headers: { ...req.headers, host: new URL(target).host } }, (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        });
        upstream.on('error', () => res.destroy());
        upstream.end(Buffer.concat(chunks));
      });
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hold: (path) => {
      let arrived!: () => void;
      let release!: () => void;
      const reached = new Promise<void>((r) => (arrived = r));
      const opened = new Promise<void>((r) => (release = r));
      gates.set(path, { arrived, opened });
      return { reached, release };
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
