import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { NanoPayError } from '../errors.js';

/**
 * Addresses of this machine and of private networks. A model (the agent, an MCP
 * client) that may fetch any URL must not reach them: the toolset on
 * 127.0.0.1:3123 answers this user's processes without a token, so one fetch
 * there would spend around every confirmation the agent asks for.
 */
const LOCAL = new BlockList();
for (const [net, bits] of [['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.168.0.0', 16]] as const) LOCAL.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10]] as const) LOCAL.addSubnet(net, bits, 'ipv6');

function isLocal(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped !== undefined) return LOCAL.check(mapped, 'ipv4');
  return LOCAL.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
}

/** `host:port` as the allow list names it (the port the URL implies when it names none). */
function hostPort(url: URL): string {
  const port = url.port !== '' ? url.port : url.protocol === 'https:' ? '443' : '80';
  return `${url.hostname.replace(/^\[|\]$/g, '').toLowerCase()}:${port}`;
}

type Lookup = typeof dnsLookup;

/** How a paid fetch reaches its URL: fetch's shape, so any fetch serves. */
export type Transport = (url: string, init: RequestInit) => Promise<Response>;

function localRefusal(url: URL, target: string): NanoPayError {
  return new NanoPayError('INVALID_REQUEST', `${url.origin} is on this machine or a private network: a paid fetch asked by a model goes only to public hosts`, {
    hint: `Allow it with NANOPAY_FETCH_ALLOW_HOSTS=${target} in the environment of serve, mcp or agent.`,
  });
}

/** What the connection's lookup found: a local address; the transport says which URL and how to allow it. */
class LocalAddress extends Error {}

/**
 * A name's addresses, refused when any is local: the lookup of the very
 * connection, so the address checked is the address connected to (a name
 * that answers a public address to a check and a loopback one to the
 * connection reaches nothing).
 */
function publicLookup(lookup: Lookup): LookupFunction {
  return (hostname, options, callback) => {
    lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error !== null) return callback(error, '', 0);
      const first = addresses[0];
      if (first === undefined || addresses.some((a) => isLocal(a.address))) return callback(new LocalAddress(hostname), '', 0);
      if (options.all === true) (callback as unknown as (e: null, all: LookupAddress[]) => void)(null, addresses);
      else callback(null, first.address, first.family);
    });
  };
}

/**
 * How the toolset's paid fetch reaches a URL a model asked for: refused when
 * its host is, or resolves to, an address of this machine or a private
 * network, unless `allowed` (NANOPAY_FETCH_ALLOW_HOSTS: `host:port`,
 * comma-separated) names it. IP literals are judged here, names by each
 * connection's own lookup. Redirects are not followed by the tool, so each
 * hop comes back here.
 */
export function publicOnly(allowed: string | undefined, lookup: Lookup = dnsLookup): Transport {
  const allow = new Set((allowed ?? '').split(',').map((h) => h.trim().toLowerCase()).filter((h) => h !== ''));
  // undici's own fetch and Agent, loaded on first use: the connection's lookup is ours, whatever undici this Node.js carries.
  let pinned: Promise<Transport> | undefined;
  const pin = async (): Promise<Transport> => {
    const { Agent, fetch: undiciFetch } = await import('undici');
    const dispatcher = new Agent({ connect: { lookup: publicLookup(lookup) } });
    return async (href, init) => (await undiciFetch(href, { ...(init as object), dispatcher })) as unknown as Response;
  };
  return async (href, init) => {
    const url = new URL(href);
    const target = hostPort(url);
    if (allow.has(target)) return fetch(href, init);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (host.toLowerCase() === 'localhost' || (isIP(host) !== 0 && isLocal(host))) throw localRefusal(url, target);
    try {
      return await (await (pinned ??= pin()))(href, init);
    } catch (error) {
      // undici wraps what the lookup refused in "fetch failed".
      if (error instanceof Error && error.cause instanceof LocalAddress) throw localRefusal(url, target);
      throw error;
    }
  };
}
