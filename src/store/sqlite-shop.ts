import type BetterSqlite3 from 'better-sqlite3';
import { NanoPayError } from '../errors.js';
import type { RequestRecord } from '../wallet/requests.js';
import type { StoreChange } from './store.js';
import { encodeCursor, SEARCH_COLUMNS, searchSql, searchValues, sumTotals, type ShopFilter, type ShopSearchPage, type ShopSearchQuery, type ShopTotals } from './shop-search.js';
import { destinationTopic, idempotencyMismatch, WEBHOOK_TOPIC, type ShopExportQuery, type ShopListQuery, type ShopRequest, type ShopStatus, type ShopTable, type UnsettledRequest, unsettledRow, type WebhookEvent } from './shop.js';

/** What the shop table needs of the SQLite store: its database, statements run with damage reported, and the requests nanopay keeps. */
export interface SqliteHost {
  readonly db: BetterSqlite3.Database;
  run<T>(fn: () => T): Promise<T>;
  prepared(sql: string): BetterSqlite3.Statement;
  insertRequest(record: RequestRecord): StoreChange;
  emit(change: StoreChange): void;
}

const parse = <T>(row: { doc: string } | undefined): T | undefined => (row === undefined ? undefined : (JSON.parse(row.doc) as T));

export class SqliteShop implements ShopTable {
  constructor(private readonly host: SqliteHost) {}

  private get db(): BetterSqlite3.Database {
    return this.host.db;
  }

  create(request: ShopRequest, idempotency?: { key: string; fingerprint: string }, kept?: RequestRecord): Promise<{ request: ShopRequest; created: boolean }> {
    return this.host.run(() => {
      const result = this.db
        .transaction((): { request: ShopRequest; created: boolean; change?: StoreChange } => {
          if (idempotency !== undefined) {
            const found = this.host.prepared('SELECT doc, fingerprint FROM shop_requests WHERE idempotency_key = ?').get(idempotency.key) as
              | { doc: string; fingerprint: string }
              | undefined;
            if (found !== undefined) {
              if (found.fingerprint !== idempotency.fingerprint) throw idempotencyMismatch(idempotency.key);
              return { request: JSON.parse(found.doc) as ShopRequest, created: false };
            }
          }
          const change = kept === undefined ? undefined : this.host.insertRequest(kept);
          try {
            this.host
              .prepared(
                `INSERT INTO shop_requests (id, status, order_id, idempotency_key, fingerprint, expires_at, doc, ${SEARCH_COLUMNS.join(', ')})
                 VALUES (?, ?, ?, ?, ?, ?, ?, ${SEARCH_COLUMNS.map(() => '?').join(', ')})`,
              )
              .run(request.id, request.status, request.order_id ?? null, idempotency?.key ?? null, idempotency?.fingerprint ?? null, request.expires_at ?? null, JSON.stringify(request), ...searchValues(request));
          } catch (error) {
            if ((error as { code?: string }).code?.startsWith('SQLITE_CONSTRAINT')) throw new NanoPayError('CONFLICT', `Request ${request.id} is already in the store`);
            throw error;
          }
          return { request, created: true, ...(change === undefined ? {} : { change }) };
        })
        .immediate();
      if (result.change !== undefined) this.host.emit(result.change);
      return { request: result.request, created: result.created };
    });
  }

  byIdempotencyKey(key: string): Promise<{ request: ShopRequest; fingerprint: string } | undefined> {
    return this.host.run(() => {
      const row = this.host.prepared('SELECT doc, fingerprint FROM shop_requests WHERE idempotency_key = ?').get(key) as { doc: string; fingerprint: string } | undefined;
      return row === undefined ? undefined : { request: JSON.parse(row.doc) as ShopRequest, fingerprint: row.fingerprint };
    });
  }

  get(id: string): Promise<ShopRequest | undefined> {
    return this.host.run(() => parse<ShopRequest>(this.db.prepare('SELECT doc FROM shop_requests WHERE id = ?').get(id) as { doc: string } | undefined));
  }

  list(query: ShopListQuery): Promise<{ data: ShopRequest[]; hasMore: boolean }> {
    return this.host.run(() => {
      const where: string[] = [];
      const values: unknown[] = [];
      if (query.status !== undefined) (where.push('status = ?'), values.push(query.status));
      if (query.orderId !== undefined) (where.push('order_id = ?'), values.push(query.orderId));
      if (query.startingAfter !== undefined) {
        const after = this.db.prepare('SELECT seq FROM shop_requests WHERE id = ?').get(query.startingAfter) as { seq: number } | undefined;
        if (after === undefined) throw new NanoPayError('NOT_FOUND', `No request ${query.startingAfter.slice(0, 80)} to start after`);
        where.push('seq < ?');
        values.push(after.seq);
      }
      const rows = this.db
        .prepare(`SELECT doc FROM shop_requests ${where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`} ORDER BY seq DESC LIMIT ?`)
        .all(...values, query.limit + 1) as { doc: string }[];
      return { data: rows.slice(0, query.limit).map((r) => JSON.parse(r.doc) as ShopRequest), hasMore: rows.length > query.limit };
    });
  }

  search(query: ShopSearchQuery): Promise<ShopSearchPage> {
    return this.host.run(() => {
      const { where, values, order } = searchSql(query);
      const rows = this.db
        .prepare(`SELECT seq, amount_key, doc FROM shop_requests ${where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`} ORDER BY ${order} LIMIT ?`)
        .all(...values, query.limit + 1) as { seq: number; amount_key: string; doc: string }[];
      const page = rows.slice(0, query.limit);
      const last = page.at(-1);
      return { data: page.map((r) => JSON.parse(r.doc) as ShopRequest), ...(rows.length > query.limit && last !== undefined ? { next: encodeCursor(query.sort, last) } : {}) };
    });
  }

  totals(filter: ShopFilter): Promise<ShopTotals> {
    return this.host.run(() => {
      const { where, values } = searchSql(filter);
      const rows = this.db
        .prepare(`SELECT received_raw, refunded_raw, fiat_currency, fiat_rate FROM shop_requests ${where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`}`)
        .raw(true)
        .all(...values) as [string, string, string | null, string | null][];
      return sumTotals(rows);
    });
  }

  exportPage(query: ShopExportQuery, after: number | undefined, limit: number): Promise<{ requests: ShopRequest[]; next?: number }> {
    return this.host.run(() => {
      const where = ['seq > ?'];
      const values: unknown[] = [after ?? 0];
      if (query.from !== undefined) (where.push(`json_extract(doc, '$.created_at') >= ?`), values.push(query.from));
      if (query.to !== undefined) (where.push(`json_extract(doc, '$.created_at') < ?`), values.push(query.to));
      if (query.status !== undefined) (where.push('status = ?'), values.push(query.status));
      const rows = this.db.prepare(`SELECT seq, doc FROM shop_requests WHERE ${where.join(' AND ')} ORDER BY seq LIMIT ?`).all(...values, limit) as { seq: number; doc: string }[];
      const last = rows.at(-1);
      return { requests: rows.map((r) => JSON.parse(r.doc) as ShopRequest), ...(last === undefined || rows.length < limit ? {} : { next: last.seq }) };
    });
  }

  unsettled(expiredSince: string, after = 0): Promise<{ requests: UnsettledRequest[]; last: number }> {
    return this.host.run(() => {
      const rows = this.host
        .prepared(
          `SELECT seq, id, status, expires_at, json_extract(doc, '$.receive_address') AS receive_address, json_extract(doc, '$.created_at') AS created_at
           FROM shop_requests WHERE seq > ? AND (status IN ('waiting', 'underpaid', 'overpaid') OR (status = 'expired' AND expires_at > ?)) ORDER BY seq`,
        )
        .all(after, expiredSince) as (UnsettledRequest & { seq: number; expires_at: string | null })[];
      return { requests: rows.map(unsettledRow), last: rows.at(-1)?.seq ?? after };
    });
  }

  change(from: ShopStatus, next: ShopRequest, event?: WebhookEvent): Promise<boolean> {
    return this.host.run(() =>
      this.db
        .transaction(() => {
          const updated = this.db
            .prepare(`UPDATE shop_requests SET status = ?, doc = ?, ${SEARCH_COLUMNS.map((c) => `${c} = ?`).join(', ')} WHERE id = ? AND status = ?`)
            .run(next.status, JSON.stringify(next), ...searchValues(next), next.id, from);
          if (updated.changes === 0) return false;
          if (event !== undefined) {
            const now = Date.now();
            this.db
              .prepare('INSERT INTO webhook_events (id, request_id, request_seq, pending, doc) VALUES (?, ?, ?, 1, ?)')
              .run(event.id, next.id, event.request_seq, JSON.stringify(event));
            const queue = this.db.prepare('INSERT INTO outbox (topic, payload, due_ms) VALUES (?, ?, ?)');
            const payload = JSON.stringify({ event_id: event.id });
            queue.run(WEBHOOK_TOPIC, payload, now);
            const listeners = this.db.prepare('SELECT id FROM webhook_destinations WHERE expires_ms > ?').all(now) as { id: string }[];
            const deliver = this.db.prepare('INSERT INTO webhook_deliveries (destination, event_id, request_id, request_seq, pending, doc) VALUES (?, ?, ?, ?, 1, ?)');
            for (const { id } of listeners) {
              deliver.run(id, event.id, next.id, event.request_seq, JSON.stringify({ attempts: 0 }));
              queue.run(destinationTopic(id), payload, now);
            }
          }
          return true;
        })
        .immediate(),
    );
  }

  event(id: string): Promise<WebhookEvent | undefined> {
    return this.host.run(() => parse<WebhookEvent>(this.db.prepare('SELECT doc FROM webhook_events WHERE id = ?').get(id) as { doc: string } | undefined));
  }

  events(limit: number): Promise<WebhookEvent[]> {
    return this.host.run(() =>
      (this.db.prepare('SELECT doc FROM webhook_events ORDER BY seq DESC LIMIT ?').all(limit) as { doc: string }[]).map((r) => JSON.parse(r.doc) as WebhookEvent),
    );
  }

  eventsOf(requestId: string): Promise<WebhookEvent[]> {
    return this.host.run(() =>
      (this.db.prepare('SELECT doc FROM webhook_events WHERE request_id = ? ORDER BY request_seq').all(requestId) as { doc: string }[]).map((r) => JSON.parse(r.doc) as WebhookEvent),
    );
  }

  earlierPending(requestId: string, requestSeq: number, destination?: string): Promise<boolean> {
    return this.host.run(() => {
      const row =
        destination === undefined
          ? this.db.prepare('SELECT 1 FROM webhook_events WHERE request_id = ? AND request_seq < ? AND pending = 1 LIMIT 1').get(requestId, requestSeq)
          : this.db.prepare('SELECT 1 FROM webhook_deliveries WHERE destination = ? AND request_id = ? AND request_seq < ? AND pending = 1 LIMIT 1').get(destination, requestId, requestSeq);
      return row !== undefined;
    });
  }

  recordDelivery(id: string, delivery: WebhookEvent['delivery'], destination?: string): Promise<void> {
    const pending = delivery.delivered_at === undefined && delivery.failed !== true ? 1 : 0;
    return this.host.run(() => {
      if (destination !== undefined) {
        this.db.prepare('UPDATE webhook_deliveries SET pending = ?, doc = ? WHERE destination = ? AND event_id = ?').run(pending, JSON.stringify(delivery), destination, id);
        return;
      }
      this.db
        .transaction(() => {
          const event = parse<WebhookEvent>(this.db.prepare('SELECT doc FROM webhook_events WHERE id = ?').get(id) as { doc: string } | undefined);
          if (event === undefined) return;
          this.db.prepare('UPDATE webhook_events SET pending = ?, doc = ? WHERE id = ?').run(pending, JSON.stringify({ ...event, delivery }), id);
        })
        .immediate();
    });
  }

  delivery(id: string, destination: string): Promise<WebhookEvent['delivery'] | undefined> {
    return this.host.run(() => parse<WebhookEvent['delivery']>(this.db.prepare('SELECT doc FROM webhook_deliveries WHERE destination = ? AND event_id = ?').get(destination, id) as { doc: string } | undefined));
  }

  addDestination(destination: string, url: string, leaseMs: number): Promise<void> {
    return this.host.run(() =>
      this.db
        .transaction(() => {
          const now = Date.now();
          for (const { id } of this.db.prepare('SELECT id FROM webhook_destinations WHERE expires_ms <= ?').all(now) as { id: string }[]) this.remove(id);
          this.db
            .prepare('INSERT INTO webhook_destinations (id, url, expires_ms) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET url = excluded.url, expires_ms = excluded.expires_ms')
            .run(destination, url, now + leaseMs);
        })
        .immediate(),
    );
  }

  removeDestination(destination: string): Promise<void> {
    return this.host.run(() => this.db.transaction(() => this.remove(destination)).immediate());
  }

  /** A listener and what waits for it (its deliveries, its outbox items), in the caller's transaction. */
  private remove(destination: string): void {
    this.db.prepare('DELETE FROM webhook_destinations WHERE id = ?').run(destination);
    this.db.prepare('DELETE FROM webhook_deliveries WHERE destination = ?').run(destination);
    this.db.prepare('UPDATE outbox SET done = 1 WHERE topic = ? AND done = 0').run(destinationTopic(destination));
  }
}
