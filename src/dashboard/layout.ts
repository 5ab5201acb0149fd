import type { ServerResponse } from 'node:http';
import { escapeHtml } from '../checkout/page.js';
import { RESPONDED } from '../http/server.js';
import { rawToXno } from '../nano/index.js';
import type { OperatorSession } from '../shop/operator-sessions.js';
import { CSS_PATH, JS_PATH } from './assets.js';

/**
 * The dashboard's pages around their content: the header with the shop's
 * name, the navigation and sign-out, the test-mode band; and the headers
 * every page is sent with. Nothing from elsewhere is loaded, nothing is
 * framed, nothing is kept in a cache; forms post to this origin only.
 */

const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "style-src 'self'",
  "script-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

export const DASHBOARD_HEADERS: Record<string, string> = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
};

export const h = escapeHtml;

/** Raw as XNO, for people (every digit kept). */
export const xno = (raw: string | bigint): string => `${rawToXno(BigInt(raw))} XNO`;

export function sendPage(res: ServerResponse, status: number, html: string, headers: Record<string, string> = {}): typeof RESPONDED {
  res.writeHead(status, { ...DASHBOARD_HEADERS, ...headers, 'content-length': Buffer.byteLength(html) });
  res.end(html);
  return RESPONDED;
}

/** A 303 to another page of the dashboard (after a form, or to the sign-in). */
export function redirect(res: ServerResponse, location: string, headers: Record<string, string> = {}): typeof RESPONDED {
  res.writeHead(303, { ...headers, location, 'cache-control': 'no-store', 'content-length': 0 });
  res.end();
  return RESPONDED;
}

export interface PageFrame {
  title: string;
  shopName: string;
  testMode: boolean;
  /** Signed in: the navigation and the sign-out form. */
  operator?: OperatorSession;
  /** The navigation entry this page is. */
  current?: 'orders' | 'export' | 'sweeps' | 'health';
}

const NAV: { key: NonNullable<PageFrame['current']>; path: string; label: string }[] = [
  { key: 'orders', path: '/dashboard/orders', label: 'Orders' },
  { key: 'export', path: '/dashboard/export', label: 'Export' },
  { key: 'sweeps', path: '/dashboard/sweeps', label: 'Sweeps' },
  { key: 'health', path: '/dashboard/health', label: 'Health' },
];

export function page(frame: PageFrame, content: string): string {
  const nav =
    frame.operator === undefined
      ? ''
      : `<nav aria-label="Dashboard"><ul>${NAV.map((n) => `<li><a href="${n.path}"${n.key === frame.current ? ' aria-current="page"' : ''}>${n.label}</a></li>`).join('')}</ul></nav>
<form method="post" action="/dashboard/sign-out">${csrfField(frame.operator)}<span class="muted">${h(frame.operator.operator)} (${frame.operator.role})</span> <button type="submit" class="secondary">Sign out</button></form>`;
  const band = frame.testMode ? '<p class="test-mode" role="note">TEST MODE · nanopay sandbox: test money, not real XNO.</p>' : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark"><meta name="robots" content="noindex"><title>${h(frame.title)} · ${h(frame.shopName)}</title>
<link rel="icon" href="data:,"><link rel="stylesheet" href="${CSS_PATH}"><script src="${JS_PATH}" defer></script></head>
<body><header>${band}<div class="bar"><span class="shop">${h(frame.shopName)} · dashboard</span>${nav}</div></header>
<main id="main">${content}</main></body></html>
`;
}

export function csrfField(operator: OperatorSession): string {
  return `<input type="hidden" name="csrf" value="${h(operator.csrf)}">`;
}

export function statusBadge(status: string): string {
  return `<span class="status ${h(status)}">${h(status.replace('_', ' '))}</span>`;
}

/** An ISO time as people read it here: UTC, to the second. */
export function when(iso: string | undefined): string {
  if (iso === undefined) return '';
  return `<time datetime="${h(iso)}">${h(iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z'))}</time>`;
}
