import { NanoPayError } from '../errors.js';

const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

function refused(path: string, why: string): NanoPayError {
  return new NanoPayError('INVALID_REQUEST', `The path ${JSON.stringify(path.slice(0, 200))} ${why}: it could reach another resource than the one priced, so it is refused`, {
    hint: 'Send the path as it is meant, without dot segments or encoded separators (clients such as curl and fetch resolve them before sending).',
  });
}

/**
 * The one form of a request path that a paywall prices and forwards, so that
 * what is paid for is exactly what is served: escapes of unreserved
 * characters decoded (`%73ecret` is `/secret`), other escapes upper-cased,
 * runs of `/` made one. Refused (INVALID_REQUEST, 400) where an upstream could
 * read it as another path: a dot segment (`.`, `..`, in any encoding or before
 * a `;`), a `;` path parameter, a backslash, an encoded `/`, `\` or `%`
 * (double encoding), a control character, a `#`.
 */
export function canonicalPath(path: string): string {
  if (!path.startsWith('/')) throw refused(path, 'does not start with "/"');
  if (path.includes('\\')) throw refused(path, 'has a backslash');
  if (path.includes('#')) throw refused(path, 'has a "#"');
  if (path.includes(';')) throw refused(path, 'has a ";" path parameter');
  let decoded = '';
  for (let i = 0; i < path.length; i++) {
    const c = path[i] as string;
    if (c !== '%') {
      decoded += c;
      continue;
    }
    const hex = path.slice(i + 1, i + 3);
    if (!/^[0-9A-Fa-f]{2}$/.test(hex)) throw refused(path, 'has a malformed %-escape');
    const code = Number.parseInt(hex, 16);
    const char = String.fromCharCode(code);
    if (char === '/' || char === '\\' || char === '%' || char === ';' || char === '#' || char === '?' || code < 0x20 || code === 0x7f) {
      throw refused(path, `has an encoded ${JSON.stringify(char)}`);
    }
    decoded += UNRESERVED.test(char) ? char : `%${hex.toUpperCase()}`;
    i += 2;
  }
  const canonical = decoded.replace(/\/{2,}/g, '/');
  if (canonical.split('/').some((segment) => segment === '.' || segment === '..')) throw refused(path, 'has a dot segment');
  return canonical;
}

/**
 * The URL a request for `path` (canonical) and `query` goes to under
 * `upstream` (origin and path prefix). Built from the origin, never resolved
 * against it, and checked: same origin, the prefix kept, the path unchanged by
 * the URL parser; otherwise refused, since it would not be the path priced.
 */
export function upstreamTarget(upstream: URL, path: string, query: string): URL {
  const prefix = upstream.pathname.replace(/\/+$/, '');
  const target = new URL(`${upstream.origin}${prefix}${path}${query}`);
  if (target.origin !== upstream.origin || target.pathname !== `${prefix}${path}`) throw refused(path, 'would be forwarded as another path');
  return target;
}
