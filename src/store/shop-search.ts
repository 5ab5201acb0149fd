import { NanoPayError } from '../errors.js';
import { PAID_STATUSES, type ShopRequest, type ShopStatus } from './shop.js';

/**
 * The shop's requests as people look for them (the dashboard): filtered by
 * status, creation time, order id and amount, sorted by time or amount, paged
 * by keyset (a deep page costs what the first does), with the selection's
 * totals. The columns they need are kept beside each request's document.
 */

export type ShopSort = 'created' | 'amount';

/** Which requests: every field narrows the selection. Times are ISO (from included, to excluded), amounts raw. */
export interface ShopFilter {
  status?: ShopStatus;
  from?: string;
  to?: string;
  orderId?: string;
  minRaw?: string;
  maxRaw?: string;
}

export interface ShopSearchQuery extends ShopFilter {
  sort: ShopSort;
  descending: boolean;
  limit: number;
  /** An earlier page's `next`: this page starts after it. */
  after?: string;
}

export interface ShopSearchPage {
  data: ShopRequest[];
  /** Where the following page starts; absent on the last. */
  next?: string;
}

/** The selection's totals: how many, what was received and refunded (raw), and in each price currency (2 decimals). */
export interface ShopTotals {
  count: number;
  received_raw: string;
  refunded_raw: string;
  fiat: { currency: string; received: string; refunded: string }[];
}

/** Digits of the largest raw amount (2^128): amounts are kept zero-padded to this width, so text order is number order. */
const AMOUNT_WIDTH = 40;

const amountKey = (raw: string): string => raw.padStart(AMOUNT_WIDTH, '0');

/** What arrived for a request: what the reading found (under- or overpaid), else its amount when it was paid (in time or late). */
export function receivedRaw(request: ShopRequest): string {
  return request.received_raw ?? (PAID_STATUSES.includes(request.status) || request.status === 'paid_late' ? request.amount_raw : '0');
}

/** The searchable columns of a request, written with its document, in this order. */
export const SEARCH_COLUMNS = ['created_at', 'amount_key', 'received_raw', 'refunded_raw', 'fiat_currency', 'fiat_rate'] as const;

export function searchValues(request: ShopRequest): (string | null)[] {
  return [request.created_at, amountKey(request.amount_raw), receivedRaw(request), request.refunded_amount_raw ?? '0', request.fiat?.currency ?? null, request.fiat?.rate ?? null];
}

/** A page's place: the last row's sort key (its seq, and its amount when sorted by amount). */
export interface Cursor {
  seq: number;
  amountKey?: string;
}

export function encodeCursor(sort: ShopSort, row: { seq: number | string; amount_key: string }): string {
  return sort === 'amount' ? `a${row.amount_key}.${row.seq}` : `c${row.seq}`;
}

function decodeCursor(sort: ShopSort, text: string): Cursor {
  const match = sort === 'amount' ? /^a(\d{40})\.(\d{1,15})$/.exec(text) : /^c(\d{1,15})$/.exec(text);
  if (match === null) throw new NanoPayError('INVALID_REQUEST', 'This page link is not valid for this sort (start from the first page)');
  return sort === 'amount' ? { amountKey: match[1] as string, seq: Number(match[2]) } : { seq: Number(match[1]) };
}

/**
 * The WHERE clauses and ORDER BY of a search, with `?` placeholders in order (PostgreSQL numbers them).
 * Both stores run the same SQL: the columns are text, amounts compared zero-padded.
 */
export function searchSql(query: ShopFilter & Partial<Pick<ShopSearchQuery, 'sort' | 'descending' | 'after'>>): { where: string[]; values: unknown[]; order: string } {
  const where: string[] = [];
  const values: unknown[] = [];
  const add = (clause: string, ...vals: unknown[]): void => {
    where.push(clause);
    values.push(...vals);
  };
  if (query.status !== undefined) add('status = ?', query.status);
  if (query.orderId !== undefined) add('order_id = ?', query.orderId);
  if (query.from !== undefined) add('created_at >= ?', query.from);
  if (query.to !== undefined) add('created_at < ?', query.to);
  if (query.minRaw !== undefined) add('amount_key >= ?', amountKey(query.minRaw));
  if (query.maxRaw !== undefined) add('amount_key <= ?', amountKey(query.maxRaw));
  const sort = query.sort ?? 'created';
  const direction = query.descending === false ? 'ASC' : 'DESC';
  const past = direction === 'DESC' ? '<' : '>';
  if (query.after !== undefined) {
    const cursor = decodeCursor(sort, query.after);
    if (sort === 'amount') add(`(amount_key, seq) ${past} (?, ?)`, cursor.amountKey, cursor.seq);
    else add(`seq ${past} ?`, cursor.seq);
  }
  const order = sort === 'amount' ? `amount_key ${direction}, seq ${direction}` : `seq ${direction}`;
  return { where, values, order };
}

/** A selection's row as totals read it: received raw, refunded raw, price currency and rate (or null). */
export type TotalsRow = [string, string, string | null, string | null];

/**
 * Sums of the selection's rows, exactly (raw in bigint; a price currency's value at each request's own rate,
 * rounded half up to 2 decimals). Zeros, most rows' refunds and waiting requests' receipts, cost no bigint.
 */
export function sumTotals(rows: TotalsRow[]): ShopTotals {
  let received = 0n;
  let refunded = 0n;
  const fiat = new Map<string, { received: bigint; refunded: bigint }>();
  for (const [receivedRaw, refundedRaw, currency, rate] of rows) {
    const r = receivedRaw === '0' ? 0n : BigInt(receivedRaw);
    const f = refundedRaw === '0' ? 0n : BigInt(refundedRaw);
    received += r;
    refunded += f;
    if (currency !== null && rate !== null) {
      const scaled = scaledRate(rate);
      const sums = fiat.get(currency) ?? { received: 0n, refunded: 0n };
      sums.received += r * scaled;
      sums.refunded += f * scaled;
      fiat.set(currency, sums);
    }
  }
  return {
    count: rows.length,
    received_raw: received.toString(),
    refunded_raw: refunded.toString(),
    fiat: [...fiat]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([currency, sums]) => ({ currency, received: cents(sums.received), refunded: cents(sums.refunded) })),
  };
}

/** A rate's digits after the point kept (rates carry fewer): raw × rate is then in units of 10^-(30+RATE_DECIMALS). */
const RATE_DECIMALS = 12;

function scaledRate(rate: string): bigint {
  const [whole, fraction = ''] = rate.split('.');
  return BigInt(`${whole}${fraction.padEnd(RATE_DECIMALS, '0').slice(0, RATE_DECIMALS)}`);
}

/** A sum of raw × scaled rate as the currency's amount, rounded half up to 2 decimals. */
function cents(value: bigint): string {
  const unit = 10n ** BigInt(30 + RATE_DECIMALS - 2);
  const hundredths = (value + unit / 2n) / unit;
  return `${hundredths / 100n}.${(hundredths % 100n).toString().padStart(2, '0')}`;
}
