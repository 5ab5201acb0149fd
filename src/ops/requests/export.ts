import { NanoPayError } from '../../errors.js';
import { requestTotals } from '../../store/shop-events.js';
import { SHOP_STATUSES, type ShopExportQuery, type ShopRequest, type ShopStatus, type ShopTable } from '../../store/shop.js';
import type { Session } from '../session.js';
import { CSV_BOM, csvRecord } from './csv.js';

/**
 * The shop's requests for its accountant (requests export, GET
 * /api/v1/requests/export): one row per request, in the order made, as CSV or JSON,
 * produced a page at a time, so the memory it takes does not grow with the
 * store (the caller writes each page before the next is read).
 */

/** ndjson: the JSON rows one per line, for tools that read a stream (jq, log shippers). */
export type ExportFormat = 'csv' | 'json' | 'ndjson';
export const EXPORT_FORMATS: readonly ExportFormat[] = ['csv', 'json', 'ndjson'];

/** Rows read from the store at a time. */
const PAGE_ROWS = 500;

type Cell = string | boolean | readonly string[] | Record<string, unknown> | undefined;

/** The columns, in order. Times are ISO 8601 in UTC; lists are space-separated in CSV, arrays in JSON. */
const COLUMNS: readonly (readonly [string, (r: ShopRequest) => Cell])[] = [
  ['id', (r) => r.id],
  ['order_id', (r) => r.order_id],
  ['status', (r) => r.status],
  ['is_paid', (r) => requestTotals(r).is_paid],
  ['created_at', (r) => r.created_at],
  ['expires_at', (r) => r.expires_at],
  ['paid_at', (r) => r.paid_at],
  ['refunded_at', (r) => r.refunded_at],
  ['amount', (r) => r.amount],
  ['amount_raw', (r) => r.amount_raw],
  ['received_amount', (r) => requestTotals(r).received_amount],
  ['received_amount_raw', (r) => requestTotals(r).received_amount_raw],
  ['fiat_currency', (r) => r.fiat?.currency],
  ['fiat_amount', (r) => r.fiat?.amount],
  ['fiat_rate', (r) => r.fiat?.rate],
  ['rate_source', (r) => r.fiat?.rate_source],
  ['rate_time', (r) => r.fiat?.rate_time],
  ['receive_address', (r) => r.receive_address],
  ['paying_blocks', (r) => r.paid_by ?? []],
  ['payer_accounts', (r) => r.payers ?? []],
  ['refund_blocks', (r) => r.refund_blocks ?? []],
  ['refunded_amount', (r) => requestTotals(r).refunded_amount],
  ['refunded_amount_raw', (r) => requestTotals(r).refunded_amount_raw],
  ['metadata', (r) => r.metadata ?? {}],
];

function csvCell(cell: Cell): string {
  if (cell === undefined) return '';
  if (typeof cell === 'string') return cell;
  if (typeof cell === 'boolean') return String(cell);
  if (Array.isArray(cell)) return cell.join(' ');
  return JSON.stringify(cell);
}

const jsonRow = (r: ShopRequest): Record<string, unknown> => Object.fromEntries(COLUMNS.map(([name, cell]) => [name, cell(r) ?? null]));

const DATE = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?(Z|[+-]\d{2}:\d{2})?)?$/;

/**
 * A bound of an export: an ISO 8601 date (a whole day) or date and time, in UTC unless the time names its
 * offset. `to` is excluded, but a date alone as `to` takes that whole day in.
 */
function parseBound(text: string, which: 'from' | 'to'): string {
  const given = text.trim();
  const match = DATE.exec(given);
  const [, year = '', month = '', day = '', hour, , , , zone] = match ?? [];
  // JavaScript would roll a day the month does not have (2026-02-30) over into the next: refused instead.
  const real = match !== null && Number(month) >= 1 && Number(day) >= 1 && Number(day) <= new Date(Date.UTC(Number(year), Number(month), 0)).getUTCDate();
  const date = new Date(hour !== undefined && zone === undefined ? `${given}Z` : given);
  if (!real || Number.isNaN(date.getTime())) {
    throw new NanoPayError('INVALID_REQUEST', `"${text.slice(0, 40)}" is not a date for ${which}: write 2026-01-31, or a time such as 2026-01-31T18:00:00Z (UTC unless it says otherwise)`);
  }
  if (which === 'to' && hour === undefined) date.setUTCDate(date.getUTCDate() + 1);
  return date.toISOString();
}

/** The requests an export takes, checked: dates, their order, a known status. */
export function exportQuery(input: { from?: string | undefined; to?: string | undefined; status?: string | undefined }): ShopExportQuery {
  const from = input.from === undefined ? undefined : parseBound(input.from, 'from');
  const to = input.to === undefined ? undefined : parseBound(input.to, 'to');
  if (from !== undefined && to !== undefined && from >= to) throw new NanoPayError('INVALID_REQUEST', `from (${from}) must come before to (${to})`);
  if (input.status !== undefined && !SHOP_STATUSES.includes(input.status as ShopStatus)) {
    throw new NanoPayError('INVALID_REQUEST', `"${input.status.slice(0, 40)}" is not a status; known: ${SHOP_STATUSES.join(', ')}`);
  }
  return { ...(from === undefined ? {} : { from }), ...(to === undefined ? {} : { to }), ...(input.status === undefined ? {} : { status: input.status as ShopStatus }) };
}

export function exportFormat(text: string | undefined): ExportFormat {
  if (text === undefined) return 'csv';
  if (!EXPORT_FORMATS.includes(text as ExportFormat)) throw new NanoPayError('INVALID_REQUEST', `"${text.slice(0, 40)}" is not an export format; known: ${EXPORT_FORMATS.join(', ')}`);
  return text as ExportFormat;
}

/**
 * The export, in pieces of text: the first holds the header (CSV, behind a byte order mark unless `bom` is
 * false) or the opening bracket (JSON) and the first page of rows; each next one a page. Without `shop` (no
 * store yet) it has no rows.
 */
export async function* exportRequests(
  shop: Pick<ShopTable, 'exportPage'> | undefined,
  query: ShopExportQuery,
  format: ExportFormat,
  options: { bom?: boolean } = {},
): AsyncGenerator<string> {
  let text = format === 'json' ? '[' : format === 'ndjson' ? '' : `${options.bom === false ? '' : CSV_BOM}${csvRecord(COLUMNS.map(([name]) => name))}`;
  let rows = 0;
  let after: number | undefined;
  do {
    const page = shop === undefined ? { requests: [] } : await shop.exportPage(query, after, PAGE_ROWS);
    for (const request of page.requests) {
      if (format === 'json') text += `${rows === 0 ? '\n' : ',\n'}${JSON.stringify(jsonRow(request))}`;
      else if (format === 'ndjson') text += `${JSON.stringify(jsonRow(request))}\n`;
      else text += csvRecord(COLUMNS.map(([, cell]) => csvCell(cell(request))));
      rows++;
    }
    after = page.next;
    if (after === undefined && format === 'json') text += rows === 0 ? ']\n' : '\n]\n';
    yield text;
    text = '';
  } while (after !== undefined);
}

/** The profile's export (requests export): its store's shop requests, without making a store where there is none. */
export async function exportProfileRequests(session: Session, query: ShopExportQuery, format: ExportFormat, options: { bom?: boolean }): Promise<AsyncGenerator<string>> {
  const shop = session.hasDataStore() ? (await session.dataStore()).shop : undefined;
  return exportRequests(shop, query, format, options);
}
