import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
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

/**
 * Refuses a URL a model asked for when its host is, or resolves to, an address
 * of this machine or a private network, unless `allowed` (NANOPAY_FETCH_ALLOW_HOSTS:
 * `host:port`, comma-separated) names it. Redirects are not followed by the
 * tool, so each hop comes back here.
 */
export async function refuseLocalUrl(url: URL, allowed: string | undefined): Promise<void> {
  const target = hostPort(url);
  const allow = new Set((allowed ?? '').split(',').map((h) => h.trim().toLowerCase()).filter((h) => h !== ''));
  if (allow.has(target)) return;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host) !== 0 ? [host] : (await lookup(host, { all: true }).catch(() => [])).map((a) => a.address);
  if (host.toLowerCase() === 'localhost' || addresses.some(isLocal)) {
    throw new NanoPayError('INVALID_REQUEST', `${url.origin} is on this machine or a private network: a paid fetch asked by a model goes only to public hosts`, {
      hint: `Allow it with NANOPAY_FETCH_ALLOW_HOSTS=${target} in the environment of serve, mcp or agent.`,
    });
  }
}
