import { Agent, type AgentOptions, type ClientRequestArgs } from 'node:http';
import { connect as netConnect, isIP, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import { PROXY_AUTH, ProxyRefusal, bareHost, type Proxy } from './proxy.js';

/**
 * A tunnel to host:port through the proxy (HTTP CONNECT), wrapped in TLS for
 * an https/wss target: a connected socket to talk to the target over.
 */
function tunnel(proxy: Proxy, host: string, port: number, secure: boolean, servername: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const proxyPort = Number(proxy.url.port || (proxy.url.protocol === 'https:' ? 443 : 80));
    const proxyHost = bareHost(proxy.url.hostname);
    const socket: Socket =
      proxy.url.protocol === 'https:' ? tlsConnect({ host: proxyHost, port: proxyPort, servername: isIP(proxyHost) === 0 ? proxyHost : '' }) : netConnect({ host: proxyHost, port: proxyPort });
    const authority = isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
    let head = '';
    const fail = (error: Error): void => {
      socket.destroy();
      reject(error);
    };
    const onData = (chunk: Buffer): void => {
      head += chunk.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end === -1) {
        if (head.length > 16 * 1024) fail(new ProxyRefusal('EPROXY', `the proxy ${proxy.shown} sent an answer too long to be one`));
        return;
      }
      socket.off('data', onData);
      socket.off('error', fail);
      const status = /^HTTP\/1\.[01] (\d{3})([^\r\n]*)/.exec(head);
      if (status?.[1] !== '200') {
        const code = status?.[1] === '407' ? PROXY_AUTH : 'EPROXY';
        return fail(new ProxyRefusal(code, `the proxy ${proxy.shown} refused to connect to ${authority}: ${status === null ? 'not an HTTP answer' : `${status[1]}${status[2] ?? ''}`}`));
      }
      // Bytes after the proxy's answer already belong to the target.
      const rest = Buffer.from(head.slice(end + 4), 'latin1');
      if (rest.length > 0) socket.unshift(rest);
      if (!secure) return resolve(socket);
      const secured = tlsConnect({ socket, servername: isIP(servername) === 0 ? servername : '' });
      secured.once('secureConnect', () => resolve(secured));
      secured.once('error', (error) => {
        secured.destroy();
        reject(error);
      });
    };
    socket.on('data', onData);
    socket.once('error', fail);
    const lines = [`CONNECT ${authority} HTTP/1.1`, `Host: ${authority}`, ...(proxy.authorization === undefined ? [] : [`Proxy-Authorization: ${proxy.authorization}`]), '', ''];
    socket.write(lines.join('\r\n'));
  });
}

/**
 * An agent whose every connection is a CONNECT tunnel through the proxy
 * (TLS inside for a secure target): for https requests and WebSockets. One
 * per exchange; it keeps no connection alive.
 */
export class TunnelAgent extends Agent {
  constructor(
    private readonly proxy: Proxy,
    private readonly secure: boolean,
    options: AgentOptions = {},
  ) {
    super({ ...options, keepAlive: false });
    // http.request checks that the agent speaks the target's protocol.
    (this as unknown as { protocol: string }).protocol = secure ? 'https:' : 'http:';
  }

  override createConnection(options: ClientRequestArgs & { servername?: string }, done?: (error: Error | null, socket: Duplex) => void): undefined {
    const host = bareHost(String(options.hostname ?? options.host ?? 'localhost'));
    const port = Number(options.port ?? (this.secure ? 443 : 80));
    tunnel(this.proxy, host, port, this.secure, options.servername ?? host).then(
      (socket) => done?.(null, socket),
      (error: Error) => done?.(error, undefined as unknown as Duplex),
    );
    return undefined;
  }
}
