/** A host name, IPv4 address or bracketed IPv6 address, and an optional port: nothing else may be taken from Host. */
const PLAIN_HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

/**
 * The origin a client used, for the resource URLs a server advertises (a
 * reverse proxy passes the public name): its Host header when that is a plain
 * host[:port], else `fallback` (the address listened on), so that no Host
 * header (user@ forms, paths, queries) can name another server.
 */
export function requestOrigin(host: string | undefined, fallback: string): string {
  return host !== undefined && PLAIN_HOST.test(host) ? `http://${host}` : fallback;
}
