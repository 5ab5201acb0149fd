import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';

/**
 * A forward proxy on loopback, as tinyproxy or squid are: CONNECT tunnels (for https and WebSockets) and
 * absolute-form requests (for http). It can require `Proxy-Authorization: Basic` for `credentials`, and
 * resolves the names in `hosts` itself (so a client reaches "sandbox.test" only through it). It records
 * every tunnel and request it saw, and every Proxy-Authorization it was sent.
 */
export interface TestProxy {
  url: string;
  port: number;
  /** "host:port" of each CONNECT it accepted. */
  connects: string[];
  /** "METHOD absolute-URL" of each request it forwarded. */
  forwards: string[];
  /** How many requests and tunnels it refused with 407. */
  refused: number;
  close(): Promise<void>;
}

export async function startConnectProxy(options: { credentials?: string; hosts?: Record<string, string> } = {}): Promise<TestProxy> {
  const expected = options.credentials === undefined ? undefined : `Basic ${Buffer.from(options.credentials).toString('base64')}`;
  const resolve = (host: string): string => options.hosts?.[host] ?? host;
  const allowed = (req: IncomingMessage): boolean => expected === undefined || req.headers['proxy-authorization'] === expected;
  const sockets = new Set<Socket>();
  const state = { connects: [] as string[], forwards: [] as string[], refused: 0 };

  const server: Server = createServer((req, res) => {
    if (!allowed(req)) {
      state.refused++;
      res.writeHead(407, { 'proxy-authenticate': 'Basic realm="test"', 'content-type': 'text/plain' });
      return void res.end('proxy authentication required');
    }
    let target: URL;
    try {
      target = new URL(req.url ?? '');
    } catch {
      res.writeHead(400);
      return void res.end();
    }
    state.forwards.push(`${req.method} ${target.href}`);
    const headers = { ...req.headers };
    delete headers['proxy-authorization'];
    const upstream = request({ host: resolve(target.hostname), port: target.port || 80, path: `${target.pathname}${target.search}`, method: req.method, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => {
      res.writeHead(502);
      res.end();
    });
    req.pipe(upstream);
  });
  server.on('connect', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    if (!allowed(req)) {
      state.refused++;
      return void socket.end('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="test"\r\nContent-Length: 0\r\n\r\n');
    }
    const authority = req.url ?? '';
    const split = authority.lastIndexOf(':');
    const host = authority.slice(0, split).replace(/^\[|\]$/g, '');
    state.connects.push(authority);
    const upstream = connect(Number(authority.slice(split + 1)), resolve(host), () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    upstream.on('error', () => socket.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n'));
    socket.on('error', () => upstream.destroy());
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    get connects() {
      return state.connects;
    },
    get forwards() {
      return state.forwards;
    },
    get refused() {
      return state.refused;
    },
    close: () =>
      new Promise<void>((done) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => done());
      }),
  };
}
