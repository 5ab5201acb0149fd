import { BlockList, isIP } from 'node:net';
import { NanoPayError } from '../errors.js';

/**
 * Outgoing connections through a proxy, as curl, npm and gh do: an https://
 * (or wss://) target goes through `https_proxy`/`HTTPS_PROXY`, an http:// (or
 * ws://) one through `http_proxy`/`HTTP_PROXY`, either falling back to
 * `all_proxy`/`ALL_PROXY`; `no_proxy`/`NO_PROXY` names hosts reached directly
 * (`*`, `host`, `.domain` or `domain` for it and its subdomains, `host:port`,
 * an IP or a CIDR range). Loopback targets are always reached directly.
 * Credentials in a proxy URL are sent as Proxy-Authorization and never shown.
 * The tunnel itself is in ./tunnel.js, loaded only when a proxy is used (it
 * needs node:http and node:tls, a tenth of a command's start-up).
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
