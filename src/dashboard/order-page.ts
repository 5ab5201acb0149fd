import { rawToXno } from '../nano/index.js';
import type { OperatorSession } from '../shop/operator-sessions.js';
import { can } from '../shop/roles.js';
import type { ClaimShown } from '../ops/requests/refund-claims.js';
import type { RefundRecord } from '../store/refunds.js';
import { requestTotals } from '../store/shop-events.js';
import type { ShopRequest, WebhookEvent } from '../store/shop.js';
import { csrfField, h, statusBadge, when, xno } from './layout.js';

/** One order: where it stands and why, what paid it, its refunds and webhook events, and what the operator may do. */

export interface OrderView {
  request: ShopRequest;
  refunds: Omit<RefundRecord, 'fingerprint'>[];
  events: WebhookEvent[];
  claims: ClaimShown[];
  checkoutUrl: string;
  operator: OperatorSession;
  /** A line above everything: what the last action did. */
  notice?: string;
  error?: string;
}

/** Why the status is what it is, in a sentence. */
function statusReason(request: ShopRequest): string {
  const totals = requestTotals(request);
  const received = xno(totals.received_amount_raw);
  switch (request.status) {
    case 'waiting':
      return request.expires_at === undefined ? 'Waiting for the payment.' : `Waiting for the payment, until ${request.expires_at}.`;
    case 'paid':
      return `Paid ${xno(request.amount_raw)}${request.paid_at === undefined ? '' : ` at ${request.paid_at}`}.`;
    case 'paid_late':
      return `Paid after the request expired${request.expires_at === undefined ? '' : ` (at ${request.expires_at})`}: decide whether to honour it or refund it.`;
    case 'underpaid':
      return `Underpaid: ${received} of ${xno(request.amount_raw)} arrived${request.rest_raw === undefined ? '' : `; ${xno(request.rest_raw)} to pay to complete it`}.`;
    case 'overpaid':
      return `Overpaid: ${received} arrived for ${xno(request.amount_raw)}; ${xno(BigInt(totals.received_amount_raw) - BigInt(request.amount_raw))} more than the price.`;
    case 'expired':
      return `Expired${request.expires_at === undefined ? '' : ` at ${request.expires_at}`} with nothing paid in full.`;
    case 'refunded':
      return `Paid, then refunded in full (${xno(totals.refunded_amount_raw)}).`;
    case 'partially_refunded':
      return `Paid, then ${xno(totals.refunded_amount_raw)} of ${received} refunded.`;
  }
}

function payments(request: ShopRequest): string {
  const lines = request.payments ?? [];
  if (lines.length === 0) return '<p class="muted">No payment has arrived.</p>';
  return `<div class="table" tabindex="0" role="region" aria-label="Payments (scrolls sideways)"><table><thead><tr><th scope="col">Block</th><th scope="col">From</th><th scope="col" class="num">Amount</th></tr></thead><tbody>${lines
    .map((p) => `<tr><td class="mono">${h(p.block)}</td><td class="mono">${h(p.from)}</td><td class="num">${h(p.amount)} XNO</td></tr>`)
    .join('')}</tbody></table></div>`;
}

function refunds(list: OrderView['refunds']): string {
  if (list.length === 0) return '<p class="muted">No refund.</p>';
  return `<div class="table" tabindex="0" role="region" aria-label="Refunds (scrolls sideways)"><table><thead><tr><th scope="col">Refund</th><th scope="col">Status</th><th scope="col" class="num">Amount</th><th scope="col">To</th><th scope="col">Block or why not</th></tr></thead><tbody>${list
    .map((r) => {
      const detail =
        r.block !== undefined
          ? `<span class="mono">${h(r.block)}</span>`
          : `${r.error === undefined ? 'Waiting for the signer' : `${h(r.error.code)}: ${h(r.error.message)}`}${r.attempts === undefined ? '' : ` · ${r.attempts} attempt(s)`}${r.next_attempt_at === undefined ? '' : ` · next ${h(r.next_attempt_at)}`}${r.approval_id === undefined ? '' : ` · waits for approval ${h(r.approval_id)}`}`;
      return `<tr><td class="mono">${h(r.id)}</td><td>${h(r.status)}</td><td class="num">${h(r.amount)} XNO</td><td class="mono">${h(r.to)}</td><td>${detail}</td></tr>`;
    })
    .join('')}</tbody></table></div>`;
}

function claims(list: ClaimShown[]): string {
  if (list.length === 0) return '<p class="muted">No refund claim.</p>';
  return `<div class="table" tabindex="0" role="region" aria-label="Refund claims (scrolls sideways)"><table><thead><tr><th scope="col">Claim</th><th scope="col">Status</th><th scope="col" class="num">Amount</th><th scope="col">Expires</th><th scope="col">Claimed to</th></tr></thead><tbody>${list
    .map((c) => `<tr><td class="mono">${h(c.id)}</td><td>${h(c.status)}</td><td class="num">${h(c.amount)} XNO</td><td>${when(c.expires_at)}</td><td class="mono">${h(c.to ?? '')}${c.refund_id === undefined ? '' : ` (refund ${h(c.refund_id)})`}</td></tr>`)
    .join('')}</tbody></table></div>`;
}

function events(view: OrderView): string {
  if (view.events.length === 0) return '<p class="muted">No webhook event yet.</p>';
  const admin = can(view.operator.role, 'admin');
  return `<div class="table" tabindex="0" role="region" aria-label="Webhook events (scrolls sideways)"><table><thead><tr><th scope="col">Event</th><th scope="col">Type</th><th scope="col">Created</th><th scope="col">Delivery</th>${admin ? '<th scope="col">Action</th>' : ''}</tr></thead><tbody>${view.events
    .map((e) => {
      const d = e.delivery;
      const state = d.delivered_at !== undefined ? `delivered ${h(d.delivered_at)}` : d.failed === true ? 'given up' : d.attempts === 0 ? 'waiting' : 'retrying';
      const result = d.last_result === undefined ? '' : ` · last answer: ${h(d.last_result)}`;
      const resend = admin
        ? `<td><form method="post" action="/dashboard/orders/${encodeURIComponent(view.request.id)}/events/${encodeURIComponent(e.id)}/resend">${csrfField(view.operator)}<button type="submit" class="secondary" aria-label="Resend ${h(e.type)} (${h(e.id)})">Resend</button></form></td>`
        : '';
      return `<tr><td class="mono">${h(e.id)}</td><td>${h(e.type)}</td><td>${when(new Date(e.created * 1000).toISOString())}</td><td>${state} · ${d.attempts} attempt(s)${result}</td>${resend}</tr>`;
    })
    .join('')}</tbody></table></div>`;
}

/** What is left to refund, and to whom by default (the one payer), as the refund form shows it. */
export function refundable(request: ShopRequest): { leftRaw: bigint; payers: string[] } {
  const totals = requestTotals(request);
  const payers = [...new Set((request.payments ?? []).map((p) => p.from).concat(request.payers ?? []))];
  return { leftRaw: BigInt(totals.received_amount_raw) - BigInt(totals.refunded_amount_raw), payers };
}

function actions(view: OrderView): string {
  if (!can(view.operator.role, 'refund')) return '<p class="muted">Your role reads orders; refunds need the refund or admin role.</p>';
  const { leftRaw, payers } = refundable(view.request);
  if (leftRaw <= 0n) return '<p class="muted">Nothing is left to refund.</p>';
  const id = encodeURIComponent(view.request.id);
  const to =
    payers.length <= 1
      ? `<p>To the account that paid: <span class="mono">${h(payers[0] ?? 'unknown')}</span></p>`
      : `<div><label for="refund-to">To the account that paid</label><select id="refund-to" name="to">${payers.map((p) => `<option value="${h(p)}">${h(p)}</option>`).join('')}</select></div>`;
  return `<div class="actions">
<form class="card" method="post" action="/dashboard/orders/${id}/refund" aria-labelledby="refund-title">${csrfField(view.operator)}
<h3 id="refund-title">Refund</h3><p>Up to ${xno(leftRaw)} is left to refund.</p>
<div><label for="refund-amount">Refund amount in XNO (empty: all that is left)</label><input id="refund-amount" name="amount" inputmode="decimal" autocomplete="off" placeholder="${h(rawToXno(leftRaw))}"></div>
${to}<p><button type="submit">Review the refund</button></p></form>
<form class="card" method="post" action="/dashboard/orders/${id}/claim" aria-labelledby="claim-title">${csrfField(view.operator)}
<h3 id="claim-title">Refund claim link</h3><p>The customer names the address the refund goes to (they may have paid from an exchange).</p>
<div><label for="claim-amount">Claim amount in XNO (empty: all that is left)</label><input id="claim-amount" name="amount" inputmode="decimal" autocomplete="off" placeholder="${h(rawToXno(leftRaw))}"></div>
<div><label for="claim-expires">The link works for</label><select id="claim-expires" name="expires_in"><option value="1d">1 day</option><option value="7d" selected>7 days</option><option value="30d">30 days</option></select></div>
<p><button type="submit">Make the link</button></p></form>
</div>`;
}

export function orderContent(view: OrderView): string {
  const r = view.request;
  const totals = requestTotals(r);
  const fiat = r.fiat === undefined ? '' : ` (${h(r.fiat.amount)} ${h(r.fiat.currency)} at ${h(r.fiat.rate)} ${h(r.fiat.currency)}/XNO)`;
  const metadata = r.metadata === undefined || Object.keys(r.metadata).length === 0 ? '<span class="muted">none</span>' : `<pre class="mono">${h(JSON.stringify(r.metadata, null, 2))}</pre>`;
  return `${view.notice === undefined ? '' : `<p class="notice" role="status">${h(view.notice)}</p>`}${view.error === undefined ? '' : `<p class="error" role="alert">${h(view.error)}</p>`}
<h1>Order ${h(r.order_id ?? r.id)} ${statusBadge(r.status)}</h1>
<section class="card" aria-labelledby="why-title"><h2 id="why-title">Where it stands</h2><p>${h(statusReason(r))}</p>
<dl class="facts"><dt>Request</dt><dd class="mono">${h(r.id)}</dd><dt>Order id</dt><dd>${h(r.order_id ?? '—')}</dd>
<dt>Amount</dt><dd>${h(r.amount)} XNO${fiat}</dd><dt>Received</dt><dd>${h(totals.received_amount)} XNO</dd><dt>Refunded</dt><dd>${h(totals.refunded_amount)} XNO</dd>
<dt>Pay to</dt><dd class="mono">${h(r.receive_address)}</dd><dt>Created</dt><dd>${when(r.created_at)}</dd><dt>Expires</dt><dd>${r.expires_at === undefined ? 'never' : when(r.expires_at)}</dd>
<dt>Checkout page</dt><dd><a href="${h(view.checkoutUrl)}">${h(view.checkoutUrl)}</a></dd><dt>Metadata</dt><dd>${metadata}</dd></dl></section>
<section class="card" aria-labelledby="payments-title"><h2 id="payments-title">Payments</h2>${payments(r)}</section>
<section class="card" aria-labelledby="refunds-title"><h2 id="refunds-title">Refunds</h2>${refunds(view.refunds)}</section>
<section class="card" aria-labelledby="claims-title"><h2 id="claims-title">Refund claims</h2>${claims(view.claims)}</section>
<section class="card" aria-labelledby="events-title"><h2 id="events-title">Webhook events</h2>${events(view)}</section>
<section aria-labelledby="actions-title"><h2 id="actions-title">Actions</h2>${actions(view)}</section>`;
}

/** The refund's last step: the amount and the destination shown in full before anything is recorded. */
export function refundConfirmContent(view: { request: ShopRequest; operator: OperatorSession; amountRaw: bigint; amountGiven: string; to: string; key: string }): string {
  const id = encodeURIComponent(view.request.id);
  return `<h1>Confirm the refund</h1><div class="card narrow"><p>Refund <strong>${xno(view.amountRaw)}</strong> of order ${h(view.request.order_id ?? view.request.id)} to</p>
<p class="mono">${h(view.to)}</p><p class="muted">The refund is recorded now and sent by the shop's signer.</p>
<form method="post" action="/dashboard/orders/${id}/refund">${csrfField(view.operator)}<input type="hidden" name="amount" value="${h(view.amountGiven)}"><input type="hidden" name="to" value="${h(view.to)}"><input type="hidden" name="key" value="${h(view.key)}"><input type="hidden" name="confirm" value="yes">
<p><button type="submit">Refund ${xno(view.amountRaw)}</button> <a href="/dashboard/orders/${id}">Cancel</a></p></form></div>`;
}
