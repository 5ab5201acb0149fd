import type { ReadinessState } from '../http/health.js';
import { SHOP_STATUSES } from '../store/shop.js';
import type { SweepRun } from '../store/refunds.js';
import { h, when, xno } from './layout.js';

/** The dashboard's smaller pages: sign-in, export, sweeps, health, and what an error shows. */

export function signInContent(options: { error?: string; name?: string; noOperators: boolean }): string {
  const none = options.noOperators
    ? '<p class="error" role="alert">No operator exists yet. Add one on the shop\'s machine: <code>nanopay checkout operators add NAME --role admin</code></p>'
    : '';
  return `<div class="card narrow"><h1>Sign in</h1>${none}${options.error === undefined ? '' : `<p class="error" role="alert">${h(options.error)}</p>`}
<form method="post" action="/dashboard/sign-in">
<div><label for="name">Operator name</label><input id="name" name="name" autocomplete="username" required value="${h(options.name ?? '')}"></div>
<div><label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required></div>
<p><button type="submit">Sign in</button></p></form></div>`;
}

export function exportContent(): string {
  return `<h1>Export</h1><form class="filters card" method="get" action="/dashboard/export/download" aria-label="Export orders">
<div><label for="e-from">From (UTC, included)</label><input id="e-from" name="from" type="date" required></div>
<div><label for="e-to">To (UTC, included)</label><input id="e-to" name="to" type="date" required></div>
<div><label for="e-status">Status</label><select id="e-status" name="status"><option value="">Any status</option>${SHOP_STATUSES.map((s) => `<option value="${s}">${s.replace('_', ' ')}</option>`).join('')}</select></div>
<div><label for="e-format">Format</label><select id="e-format" name="format"><option value="csv">CSV (spreadsheets)</option><option value="json">JSON</option><option value="ndjson">NDJSON</option></select></div>
<div><button type="submit">Download</button></div></form>
<p class="muted">The same export as <code>nanopay requests export</code> and the API's <code>/api/v1/requests/export</code>.</p>`;
}

export function sweepsContent(runs: SweepRun[]): string {
  if (runs.length === 0) return '<h1>Sweeps</h1><p class="muted">No sweep has run. <code>nanopay sweep --to ADDRESS</code> moves what the fresh accounts received.</p>';
  const run = (r: SweepRun): string => {
    const moved = r.accounts.filter((a) => a.status === 'swept').reduce((n, a) => n + BigInt(a.amount_raw ?? '0'), 0n);
    const lines = r.accounts
      .map(
        (a) =>
          `<tr><td class="mono">${h(a.address)}</td><td>${h(a.status)}</td><td class="num">${a.amount_raw === undefined ? '' : xno(a.amount_raw)}</td><td>${h(a.reason ?? a.error?.message ?? (a.approval_id === undefined ? '' : `waits for approval ${a.approval_id}`))}</td></tr>`,
      )
      .join('');
    return `<section class="card" aria-label="Sweep ${h(r.id)}"><h2>Sweep ${when(r.started_at)} ${r.finished_at === undefined ? '(not finished)' : ''}</h2>
<p>To <span class="mono">${h(r.to)}</span>: ${xno(moved)} moved from ${r.accounts.length} account(s).</p>
<div class="table" tabindex="0" role="region" aria-label="Sweep accounts (scrolls sideways)"><table><thead><tr><th scope="col">Account</th><th scope="col">Status</th><th scope="col" class="num">Amount</th><th scope="col">Note</th></tr></thead><tbody>${lines}</tbody></table></div></section>`;
  };
  return `<h1>Sweeps</h1>${runs.map(run).join('')}`;
}

export function healthContent(state: ReadinessState | undefined): string {
  if (state === undefined) return '<h1>Health</h1><p>The server answers. It was started without readiness checks.</p>';
  const checks = Object.entries(state.checks)
    .map(([name, result]) => `<tr><th scope="row">${h(name)}</th><td>${h(result)}</td></tr>`)
    .join('');
  return `<h1>Health</h1><p class="${state.ready ? 'notice' : 'error'}" role="status">${state.ready ? 'Ready: every check passes.' : 'Not ready: see below.'}</p>
<div class="card table" tabindex="0" role="region" aria-label="Readiness checks (scrolls sideways)"><table><thead><tr><th scope="col">Check</th><th scope="col">Result</th></tr></thead><tbody>${checks}</tbody></table></div>
<p class="muted">The same checks as <a href="/readyz">/readyz</a>; <a href="/healthz">/healthz</a> answers while the process runs.</p>`;
}

export function errorContent(title: string, message: string): string {
  return `<div class="card narrow"><h1>${h(title)}</h1><p class="error" role="alert">${h(message)}</p><p><a href="/dashboard/orders">Back to the orders</a></p></div>`;
}
