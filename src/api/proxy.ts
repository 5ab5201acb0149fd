import { Agent, type AgentOptions, type ClientRequestArgs } from 'node:http';
import type { Duplex } from 'node:stream';
import { BlockList, connect as netConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { NanoPayError } from '../errors.js';

/**
 * Outgoing connections through a proxy, as curl, npm and gh do: an https://
 * (or wss://) target goes through `https_proxy`/`HTTPS_PROXY`, an http:// (or
 * ws://) one through `http_proxy`/`HTTP_PROXY`, either falling back to
 * `all_proxy`/`ALL_PROXY`; `no_proxy`/`NO_PROXY` names hosts reached directly
 * (`*`, `host`, `.domain` or `domain` for it and its subdomains, `host:port`,
 * an IP or a CIDR range). Loopback targets are always reached directly.
 * Credentials in a proxy URL are sent as Proxy-Authorization and never shown.
 */
export interface Proxy {
  url: URL;
  /** For messages: the proxy's URL with any credentials masked. */
  shown: string;
  /** `Basic …` from the URL's credentials, when it has some. */
  authorization?: string;
}

type Env = Record<string, string | undefined>;

const variable = (env: Env, name: string): string | undefined => {
  const value = env[name.toLowerCase()] ?? env[name.toUpperCase()];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
};

function decoded(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

function parseProxy(text: string, name: string): Proxy {
  let url: URL;
  try {
    // "host:port" without a scheme is an http:// proxy, as curl reads it.
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`);
  } catch {
    // Not the value: it may hold credentials.
    throw new NanoPayError('USAGE', `${name} is not a proxy URL`, { hint: `Set ${name} to http://[user:password@]host:port, or unset it.` });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new NanoPayError('USAGE', `${name} names a ${url.protocol.replace(/:$/, '')} proxy; only http:// and https:// proxies are supported`);
  }
  const credentials = url.username !== '' || url.password !== '' ? `${decoded(url.username)}:${decoded(url.password)}` : undefined;
  return {
    url,
    shown: `${url.protocol}//${credentials === undefined ? '' : '***@'}${url.host}`,
    ...(credentials === undefined ? {} : { authorization: `Basic ${Buffer.from(credentials).toString('base64')}` }),
  };
}

/** A bare host name or IP: brackets off, lower case, no trailing dot. */
export const bareHost = (hostname: string): string => hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '').toLowerCase();

function isLoopback(host: string): boolean {
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  if (isIP(host) === 6) return host === '::1' || /^(?:0*:)*:?0*1$/.test(host) || /^::ffff:127\./.test(host);
  return false;
}

function bypassed(host: string, port: string, noProxy: string | undefined): boolean {
  if (isLoopback(host)) return true;
  if (noProxy === undefined) return false;
  for (const raw of noProxy.split(/[\s,]+/)) {
    const entry = raw.trim().toLowerCase();
    if (entry === '') continue;
    if (entry === '*') return true;
    const cidr = /^([0-9a-f:.]+)\/(\d{1,3})$/.exec(entry);
    if (cidr !== null) {
      const family = isIP(cidr[1] as string);
      if (family !== 0 && isIP(host) === family) {
        const list = new BlockList();
        const type = family === 4 ? 'ipv4' : 'ipv6';
        try {
          list.addSubnet(cidr[1] as string, Number(cidr[2]), type);
          if (list.check(host, type)) return true;
        } catch {
          // A malformed range matches nothing, as curl ignores it.
        }
      }
      continue;
    }
    const withPort = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(entry);
    const name = bareHost(withPort === null ? entry : (withPort[1] as string)).replace(/^\*?\./, '');
    if (withPort !== null && withPort[2] !== port) continue;
    if (host === name || (isIP(host) === 0 && host.endsWith(`.${name}`))) return true;
  }
  return false;
}

/** The proxy to reach `target` through, from `env`; undefined for a direct connection. */
export function proxyFor(target: URL, env: Env = process.env): Proxy | undefined {
  const secure = target.protocol === 'https:' || target.protocol === 'wss:';
  const name = secure ? 'HTTPS_PROXY' : 'HTTP_PROXY';
  const given = variable(env, name);
  const chosen = given ?? variable(env, 'ALL_PROXY');
  if (chosen === undefined) return undefined;
  const port = target.port !== '' ? target.port : secure ? '443' : '80';
  if (bypassed(bareHost(target.hostname), port, variable(env, 'NO_PROXY'))) return undefined;
  return parseProxy(chosen, given === undefined ? 'ALL_PROXY' : name);
}

/**
 * The proxy variables in effect, for `config list`: each proxy URL with its
 * credentials masked (a value that is not a URL is not shown at all), and NO_PROXY.
 */
export function proxySettings(env: Env = process.env): { name: string; value: string | null }[] {
  const shown = (name: string): string | null => {
    const value = variable(env, name);
    if (value === undefined) return null;
    try {
      const proxy = parseProxy(value, name);
      return proxy.shown;
    } catch {
      return '(not a proxy URL)';
    }
  };
  return [
    { name: 'HTTPS_PROXY', value: shown('HTTPS_PROXY') },
    { name: 'HTTP_PROXY', value: shown('HTTP_PROXY') },
    { name: 'ALL_PROXY', value: shown('ALL_PROXY') },
    { name: 'NO_PROXY', value: variable(env, 'NO_PROXY') ?? null },
  ];
}

/** The code of a ProxyRefusal for a 407: the proxy wants credentials (none given, or not the right ones). */
export const PROXY_AUTH = 'EPROXYAUTH';

/** Why the proxy did not give a tunnel: a message that names the proxy without its credentials. */
export class ProxyRefusal extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

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
