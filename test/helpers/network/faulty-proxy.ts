import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * What the proxy does with a request: pass it on, fail in one of the ways a
 * real upstream fails, or lie: `{rewrite}` passes the request on and changes
 * the `data` of the answer (a service that answers inconsistently); `{answer}`
 * answers by itself when it returns data for the request's body (else passes it on).
 * 'forward-then-drop' delivers the request and loses the answer. `{node}` lies as a
 * node would: it changes the bare JSON answer of an RPC call (the action is in the body).
 */
export type Fault = 'pass' | '500' | 'hang' | 'drop' | 'bad-json' | 'wrong-shape' | 'forward-then-drop' | 'hold' | { rewrite: (data: Record<string, any>, body: Record<string, any>) => Record<string, any> }
  | { answer: (body: Record<string, any>) => Record<string, any> | undefined }
  | { node: (answer: Record<string, any>, body: Record<string, any>) => Record<string, any> };

export interface FaultyProxy {
  url: string;
  /** Requests seen, as "METHOD /path". */
  seen: string[];
  close(): Promise<void>;
}

function parseBody(body: Buffer): Record<string, any> {
  try {
    return body.length === 0 ? {} : (JSON.parse(body.toString()) as Record<string, any>);
  } catch {
    return {};
  }
}

/** `choose` also gets the JSON body sent: node RPC calls all go to POST /, with their action in the body. */
export async function startFaultyProxy(target: string, choose: (method: string, path: string, body: Record<string, any>) => Fault): Promise<FaultyProxy> {
  const seen: string[] = [];
  const sockets = new Set<Socket>();
  const forward = (req: IncomingMessage, body: Buffer, onAnswer: (status: number, headers: IncomingMessage['headers'], data: Buffer) => void): void => {
    const upstream = request(new URL(req.url ?? '/', target), { method: req.method, headers: { ...req.headers, host: new URL(target).host } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => onAnswer(res.statusCode ?? 502, res.headers, Buffer.concat(chunks)));
    });
    upstream.end(body);
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      seen.push(`${req.method} ${path}`);
      const sent = parseBody(body);
      const fault = choose(req.method ?? 'GET', path, sent);
      const invented = typeof fault === 'object' && 'answer' in fault ? fault.answer(sent) : undefined;
      if (invented !== undefined) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ success: true, data: invented, error: null }));
        return;
      }
      if (typeof fault === 'object' && 'node' in fault) {
        forward(req, body, (status, _headers, data) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(fault.node(JSON.parse(data.toString()) as Record<string, any>, sent)));
        });
        return;
      }
      if (typeof fault === 'object' && 'rewrite' in fault) {
        forward(req, body, (status, _headers, data) => {
          const answer = JSON.parse(data.toString()) as { success: boolean; data: Record<string, any> | null };
          if (answer.success && answer.data !== null) answer.data = fault.rewrite(answer.data, sent);
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(answer));
        });
        return;
      }
      switch (typeof fault === 'object' ? 'pass' : fault) {
        case 'pass':
          forward(req, body, (status, headers, data) => {
            res.writeHead(status, { 'content-type': headers['content-type'] ?? 'application/json' });
            res.end(data);
          });
          return;
        case '500':
          res.writeHead(500, { 'content-type': 'text/html' });
          res.end('<html>Internal Server Error</html>');
          return;
        case 'hang':
        case 'hold':
          return;
        case 'drop':
          req.socket.destroy();
          return;
        case 'bad-json':
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"success": true, "data": {');
          return;
        case 'wrong-shape':
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ success: true, data: { unexpected: [1, 2, 3] }, error: null }));
          return;
        case 'forward-then-drop':
          forward(req, body, () => req.socket.destroy());
          return;
      }
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
