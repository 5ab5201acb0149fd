import { NanoPayError } from '../errors.js';
import { xnoToRaw } from '../nano/index.js';
import { exportQuery } from '../ops/requests/export.js';
import { requestTotals } from '../store/shop-events.js';
import type { ShopFilter, ShopSearchPage, ShopSearchQuery, ShopTotals } from '../store/shop-search.js';
import { SHOP_STATUSES, type ShopRequest } from '../store/shop.js';
import { h, statusBadge, when, xno } from './layout.js';

/** The orders list: its filters from the query string, and its HTML (the live region alone, for updates). */

const PAGE_SIZES = [25, 50, 100] as const;

export interface OrdersQuery {
  filter: ShopFilter;
  search: ShopSearchQuery;
  /** The filters as given, to fill the form again and build links. */
  given: Record<string, string>;
}

const FIELDS = ['status', 'from', 'to', 'order_id', 'min', 'max', 'sort', 'dir', 'limit'] as const;

/** The query string's filters, checked as the API checks them (dates as the export takes them, amounts in XNO). */
export function ordersQuery(query: URLSearchParams): OrdersQuery {
  const given: Record<string, string> = {};
  for (const name of FIELDS) {
    const value = query.get(name)?.trim();
    if (value !== undefined && value !== '') given[name] = value;
  }
  const dates = exportQuery({ from: given.from, to: given.to, status: given.status });
  const amount = (name: 'min' | 'max'): string | undefined => {
    const text = given[name];
    if (text === undefined) return undefined;
    try {
      return xnoToRaw(text).toString();
    } catch {
      throw new NanoPayError('INVALID_REQUEST', `The ${name === 'min' ? 'smallest' : 'largest'} amount must be XNO, such as 0.5`);
    }
  };
  const minRaw = amount('min');
  const maxRaw = amount('max');
  const filter: ShopFilter = {
    ...dates,
    ...(given.order_id === undefined ? {} : { orderId: given.order_id }),
    ...(minRaw === undefined ? {} : { minRaw }),
    ...(maxRaw === undefined ? {} : { maxRaw }),
  };
  const sort = given.sort ?? 'created';
  if (sort !== 'created' && sort !== 'amount') throw new NanoPayError('INVALID_REQUEST', 'Sort by "created" or "amount"');
  const dir = given.dir ?? 'desc';
  if (dir !== 'desc' && dir !== 'asc') throw new NanoPayError('INVALID_REQUEST', 'The order is "desc" or "asc"');
  const limit = Number(given.limit ?? PAGE_SIZES[0]);
  if (!(PAGE_SIZES as readonly number[]).includes(limit)) throw new NanoPayError('INVALID_REQUEST', `A page holds ${PAGE_SIZES.join(', ')} orders`);
  const after = query.get('after') ?? undefined;
  return { filter, given, search: { ...filter, sort, descending: dir === 'desc', limit, ...(after === undefined ? {} : { after }) } };
}

const link = (given: Record<string, string>, extra: Record<string, string> = {}): string => `/dashboard/orders?${new URLSearchParams({ ...given, ...extra }).toString()}`;

function select(name: string, label: string, options: [string, string][], chosen: string | undefined): string {
  return `<div><label for="f-${name}">${label}</label><select id="f-${name}" name="${name}">${options
    .map(([value, text]) => `<option value="${h(value)}"${value === (chosen ?? '') ? ' selected' : ''}>${h(text)}</option>`)
    .join('')}</select></div>`;
}

function input(name: string, label: string, given: Record<string, string>, attributes = ''): string {
  return `<div><label for="f-${name}">${label}</label><input id="f-${name}" name="${name}" value="${h(given[name] ?? '')}"${attributes}></div>`;
}

function filtersForm(given: Record<string, string>): string {
  return `<form class="filters card" method="get" action="/dashboard/orders" role="search" aria-label="Filter orders">
${select('status', 'Status', [['', 'Any status'], ...SHOP_STATUSES.map((s): [string, string] => [s, s.replace('_', ' ')])], given.status)}
${input('from', 'Created from (UTC)', given, ' type="date"')}
${input('to', 'Created to (UTC, included)', given, ' type="date"')}
${input('order_id', 'Order id', given, ' autocomplete="off"')}
${input('min', 'Amount from (XNO)', given, ' inputmode="decimal" autocomplete="off"')}
${input('max', 'Amount to (XNO)', given, ' inputmode="decimal" autocomplete="off"')}
${select('sort', 'Sort by', [['created', 'Created'], ['amount', 'Amount']], given.sort)}
${select('dir', 'Order', [['desc', 'Newest / largest first'], ['asc', 'Oldest / smallest first']], given.dir)}
${select('limit', 'Per page', PAGE_SIZES.map((n): [string, string] => [String(n), String(n)]), given.limit)}
<div><button type="submit">Show orders</button></div>
</form>`;
}

/** A 2-decimal amount of a price currency (as totals give it) in hundredths, and back: no floats. */
const cents = (text: string): bigint => BigInt(text.replace('.', ''));
const centsText = (value: bigint): string => `${value < 0n ? '-' : ''}${(value < 0n ? -value : value) / 100n}.${((value < 0n ? -value : value) % 100n).toString().padStart(2, '0')}`;

function totalsCard(totals: ShopTotals): string {
  const net = BigInt(totals.received_raw) - BigInt(totals.refunded_raw);
  const fiat = totals.fiat
    .map((f) => {
      return `<div><dt>In ${h(f.currency)} (at each order's rate)</dt><dd>${h(f.received)} received · ${h(f.refunded)} refunded · ${h(centsText(cents(f.received) - cents(f.refunded)))} net</dd></div>`;
    })
    .join('');
  return `<section class="card" aria-labelledby="totals-title"><h2 id="totals-title">Totals of this selection</h2><dl class="totals">
<div><dt>Orders</dt><dd>${totals.count.toLocaleString('en-US')}</dd></div>
<div><dt>Received</dt><dd>${xno(totals.received_raw)}</dd></div>
<div><dt>Refunded</dt><dd>${xno(totals.refunded_raw)}</dd></div>
<div><dt>Net</dt><dd>${xno(net)}</dd></div>${fiat}</dl></section>`;
}

function row(request: ShopRequest): string {
  const totals = requestTotals(request);
  const fiat = request.fiat === undefined ? '' : `<br><span class="muted">${h(request.fiat.amount)} ${h(request.fiat.currency)}</span>`;
  return `<tr><td>${when(request.created_at)}</td><td><a href="/dashboard/orders/${encodeURIComponent(request.id)}">${h(request.order_id ?? request.id.slice(0, 8))}</a></td>
<td class="num">${h(request.amount)} XNO${fiat}</td><td>${statusBadge(request.status)}</td>
<td class="num hide-small">${h(totals.received_amount)}</td><td class="num hide-small">${h(totals.refunded_amount)}</td></tr>`;
}

/** The part of the list live updates replace: totals, table, pages. */
export function ordersRegion(query: OrdersQuery, page: ShopSearchPage, totals: ShopTotals): string {
  const rows = page.data.length === 0 ? '<tr><td colspan="6">No orders match these filters.</td></tr>' : page.data.map(row).join('');
  const pager = [
    query.search.after === undefined ? '' : `<a href="${h(link(query.given))}">First page</a>`,
    page.next === undefined ? '' : `<a href="${h(link(query.given, { after: page.next }))}" rel="next">Next page</a>`,
  ].join('');
  return `${totalsCard(totals)}
<div class="card table" tabindex="0" role="region" aria-label="Orders (scrolls sideways)"><table><caption class="muted">Orders, ${query.search.sort === 'amount' ? 'by amount' : 'by creation time'}${query.search.descending ? ', descending' : ', ascending'}</caption>
<thead><tr><th scope="col">Created</th><th scope="col">Order</th><th scope="col" class="num">Amount</th><th scope="col">Status</th><th scope="col" class="num hide-small">Received (XNO)</th><th scope="col" class="num hide-small">Refunded (XNO)</th></tr></thead>
<tbody>${rows}</tbody></table><div class="pager">${pager}</div></div>`;
}

export function ordersContent(query: OrdersQuery, region: string): string {
  const exportLink = `/dashboard/export/download?${new URLSearchParams({ ...(query.given.from === undefined ? {} : { from: query.given.from }), ...(query.given.to === undefined ? {} : { to: query.given.to }), ...(query.given.status === undefined ? {} : { status: query.given.status }), format: 'csv' }).toString()}`;
  return `<h1>Orders</h1>${filtersForm(query.given)}
<p><a href="${h(exportLink)}">Export this date range (CSV)</a> · <a href="${h(link(query.given))}">Reload</a> <span id="live-status" class="muted" role="status" hidden>Live: new orders and payments appear here.</span></p>
<div data-live="/dashboard/live" aria-live="polite">${region}</div>`;
}
