import { NanoPayError } from '../errors.js';

/** A `host:port` (or `[v6]:port`) from a variable such as NANOPAY_HTTP_LISTEN_ADDR; empty when unset. */
export function listenAddress(value: string | undefined, variable: string): { host?: string; port?: number } {
  if (value === undefined || value === '') return {};
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(value);
  if (!match || Number(match[3]) > 65535) throw new NanoPayError('USAGE', `${variable} must be host:port (a port up to 65535), not "${value}"`);
  return { host: match[1] ?? match[2], port: Number(match[3]) };
}
