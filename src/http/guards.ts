import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { NanoPayError } from '../errors.js';

export function isLoopback(host: string): boolean {
  return host === '127.0.0.1' || host === '::1' || host === 'localhost' || /^127\./.test(host);
}

/** Host header values that may reach a server listening on host:port; anything else is DNS rebinding. */
export function listenHosts(host: string, port: number): Set<string> {
  const names = new Set([host.includes(':') ? `[${host}]` : host]);
  if (isLoopback(host)) ['localhost', '127.0.0.1', '[::1]'].forEach((n) => names.add(n));
  return new Set([...names].map((n) => `${n}:${port}`.toLowerCase()));
}

export function checkHost(headers: IncomingHttpHeaders, allowed: Set<string>): void {
  if (!allowed.has(String(headers.host ?? '').toLowerCase())) {
    throw new NanoPayError('FORBIDDEN', 'Host not allowed: this server only answers requests addressed to its listen address');
  }
}

/** Browsers mark what a web page sends (Origin, Sec-Fetch-Site); programs do not. */
export function refuseWebPages(headers: IncomingHttpHeaders): void {
  if (headers.origin !== undefined) throw new NanoPayError('FORBIDDEN', 'Requests from web pages (with an Origin header) are refused');
  const site = headers['sec-fetch-site'];
  if (site !== undefined && site !== 'none' && site !== 'same-origin') throw new NanoPayError('FORBIDDEN', 'Cross-site requests are refused');
}

/** Compares digests, so neither the content nor the length of the token leaks through timing. */
function sameSecret(given: string, expected: string): boolean {
  const digest = (s: string): Buffer => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

export function checkToken(headers: IncomingHttpHeaders, token: string): void {
  const match = /^Bearer\s+(.+)$/i.exec(String(headers.authorization ?? ''));
  if (match === null || !sameSecret((match[1] as string).trim(), token)) {
    throw new NanoPayError('UNAUTHORIZED', 'A valid "Authorization: Bearer <token>" header is required');
  }
}
