import type pg from 'pg';
import { NanoPayError } from '../errors.js';
import type { RequestRecord } from '../wallet/requests.js';
import { encodeCursor, SEARCH_COLUMNS, searchSql, searchValues, type ShopFilter, type ShopSearchPage, type ShopSearchQuery, type ShopTotals } from './shop-search.js';
import { destinationTopic, idempotencyMismatch, WEBHOOK_TOPIC, type ShopExportQuery, type ShopListQuery, type ShopRequest, type ShopStatus, type ShopTable, type UnsettledRequest, unsettledRow, type WebhookEvent } from './shop.js';

/** What the shop table needs of the PostgreSQL store. */
export interface PostgresHost {
  query<R extends pg.QueryResultRow = Record<string, unknown>>(text: string, values?: unknown[], options?: { retry?: boolean }): Promise<pg.QueryResult<R>>;
  transaction<T>(fn: (client: pg.PoolClient, rollback: <V>(value: V) => V) => Promise<T>): Promise<T>;
  insertRequest(record: RequestRecord, client: pg.PoolClient): Promise<void>;
}

/** The `?` placeholders of shared SQL as $1, $2…, in order. */
function numbered<T extends { where: string[]; values: unknown[] }>(sql: T): T {
  let n = 0;
  return { ...sql, where: sql.where.map((clause) => clause.replaceAll('?', () => `$${++n}`)), values: [...sql.values] };
}

const NOW_MS = '(extract(epoch from clock_timestamp()) * 1000)::bigint';

export class PostgresShop implements ShopTable {
  constructor(private readonly host: PostgresHost) {}

  async create(request: ShopRequest, idempotency?: { key: string; fingerprint: string }, kept?: RequestRecord): Promise<{ request: ShopRequest; created: boolean }> {
    const text = `INSERT INTO shop_requests (id, status, order_id, idempotency_key, fingerprint, expires_at, doc, ${SEARCH_COLUMNS.join(', ')})
      VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, ${SEARCH_COLUMNS.map((_, i) => `$${i + 8}`).join(', ')})`;
    const values = [request.id, request.status, request.order_id ?? null, idempotency?.key ?? null, idempotency?.fingerprint ?? null, request.expires_at ?? null, JSON.stringify(request), ...searchValues(request)];
    for (;;) {
      if (idempotency !== undefined) {
        const found = await this.byIdempotencyKey(idempotency.key);
        if (found !== undefined) {
          if (found.fingerprint !== idempotency.fingerprint) throw idempotencyMismatch(idempotency.key);
          return { request: found.request, created: false };
        }
      }
      try {
        if (kept === undefined) await this.host.query(text, values, { retry: false });
        else
          await this.host.transaction(async (client) => {
            await this.host.insertRequest(kept, client);
            await client.query(text, values);
          });
        return { request, created: true };
      } catch (error) {
        if ((error as { code?: string; constraint?: string }).code !== '23505') throw error;
        // Another instance took the key meanwhile: its answer is the answer.
        if (idempotency !== undefined && (error as { constraint?: string }).constraint === 'shop_requests_idempotency_key_key') continue;
        throw new NanoPayError('CONFLICT', `Request ${request.id} is already in the store`);
      }
    }
  }

  async byIdempotencyKey(key: string): Promise<{ request: ShopRequest; fingerprint: string } | undefined> {
    const row = (await this.host.query<{ doc: ShopRequest; fingerprint: string }>('SELECT doc, fingerprint FROM shop_requests WHERE idempotency_key = $1', [key])).rows[0];
    return row === undefined ? undefined : { request: row.doc, fingerprint: row.fingerprint };
  }

  async get(id: string): Promise<ShopRequest | undefined> {
    return (await this.host.query<{ doc: ShopRequest }>('SELECT doc FROM shop_requests WHERE id = $1', [id])).rows[0]?.doc;
  }

  async list(query: ShopListQuery): Promise<{ data: ShopRequest[]; hasMore: boolean }> {
    const where: string[] = [];
    const values: unknown[] = [];
    const add = (clause: string, value: unknown): void => {
      values.push(value);
      where.push(clause.replace('?', `$${values.length}`));
    };
    if (query.status !== undefined) add('status = ?', query.status);
    if (query.orderId !== undefined) add('order_id = ?', query.orderId);
    if (query.startingAfter !== undefined) {
      const after = (await this.host.query<{ seq: string }>('SELECT seq FROM shop_requests WHERE id = $1', [query.startingAfter])).rows[0];
      if (after === undefined) throw new NanoPayError('NOT_FOUND', `No request ${query.startingAfter.slice(0, 80)} to start after`);
      add('seq < ?', after.seq);
    }
    values.push(query.limit + 1);
    const rows = (
      await this.host.query<{ doc: ShopRequest }>(
        `SELECT doc FROM shop_requests ${where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`} ORDER BY seq DESC LIMIT $${values.length}`,
        values,
      )
    ).rows;
    return { data: rows.slice(0, query.limit).map((r) => r.doc), hasMore: rows.length > query.limit };
  }

  async search(query: ShopSearchQuery): Promise<ShopSearchPage> {
    const { where, values, order } = numbered(searchSql(query));
    values.push(query.limit + 1);
    const rows = (
      await this.host.query<{ seq: string; amount_key: string; doc: ShopRequest }>(
        `SELECT seq, amount_key, doc FROM shop_requests ${where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`} ORDER BY ${order} LIMIT $${values.length}`,
        values,
      )
    ).rows;
    const page = rows.slice(0, query.limit);
    const last = page.at(-1);
    return { data: page.map((r) => r.doc), ...(rows.length > query.limit && last !== undefined ? { next: encodeCursor(query.sort, last) } : {}) };
  }

  async totals(filter: ShopFilter): Promise<ShopTotals> {
    // Summed by the database (numeric is exact), each price currency at each request's own rate: the same figures sumTotals makes.
    const { where, values } = numbered(searchSql(filter));
    const clause = where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`;
    const { rows } = await this.host.query<{ currency: string | null; count: string; received: string; refunded: string; fiat_received: string | null; fiat_refunded: string | null }>(
      `SELECT fiat_currency AS currency, count(*) AS count, sum(received_raw::numeric)::text AS received, sum(refunded_raw::numeric)::text AS refunded,
         round(sum(received_raw::numeric * fiat_rate::numeric) / 1e30, 2)::text AS fiat_received,
         round(sum(refunded_raw::numeric * fiat_rate::numeric) / 1e30, 2)::text AS fiat_refunded
       FROM shop_requests ${clause} GROUP BY fiat_currency ORDER BY fiat_currency NULLS FIRST`,
      values,
    );
    return {
      count: rows.reduce((n, r) => n + Number(r.count), 0),
      received_raw: rows.reduce((n, r) => n + BigInt(r.received), 0n).toString(),
      refunded_raw: rows.reduce((n, r) => n + BigInt(r.refunded), 0n).toString(),
      fiat: rows.flatMap((r) => (r.currency === null ? [] : [{ currency: r.currency, received: r.fiat_received ?? '0.00', refunded: r.fiat_refunded ?? '0.00' }])),
    };
  }

  async exportPage(query: ShopExportQuery, after: number | undefined, limit: number): Promise<{ requests: ShopRequest[]; next?: number }> {
    const where = ['seq > $1'];
    const values: unknown[] = [after ?? 0];
    const add = (clause: string, value: unknown): void => {
      values.push(value);
      where.push(`${clause} $${values.length}`);
    };
    if (query.from !== undefined) add(`doc->>'created_at' >=`, query.from);
    if (query.to !== undefined) add(`doc->>'created_at' <`, query.to);
    if (query.status !== undefined) add('status =', query.status);
    values.push(limit);
    const rows = (await this.host.query<{ seq: string; doc: ShopRequest }>(`SELECT seq, doc FROM shop_requests WHERE ${where.join(' AND ')} ORDER BY seq LIMIT $${values.length}`, values)).rows;
    const last = rows.at(-1);
    return { requests: rows.map((r) => r.doc), ...(last === undefined || rows.length < limit ? {} : { next: Number(last.seq) }) };
  }

  async unsettled(expiredSince: string, after = 0): Promise<{ requests: UnsettledRequest[]; last: number }> {
    // A row committed after a later one was read is skipped by `after`; the monitor's full rounds (without it) find it.
    const { rows } = await this.host.query<UnsettledRequest & { seq: string; expires_at: string | null }>(
      `SELECT seq, id, status, expires_at, doc->>'receive_address' AS receive_address, doc->>'created_at' AS created_at
       FROM shop_requests WHERE seq > $1 AND (status IN ('waiting', 'underpaid', 'overpaid') OR (status = 'expired' AND expires_at > $2)) ORDER BY seq`,
      [after, expiredSince],
    );
    return { requests: rows.map(unsettledRow), last: Number(rows.at(-1)?.seq ?? after) };
  }

  change(from: ShopStatus, next: ShopRequest, event?: WebhookEvent): Promise<boolean> {
    return this.host.transaction(async (client, rollback) => {
      const updated = await client.query(
        `UPDATE shop_requests SET status = $1, doc = $2::jsonb, ${SEARCH_COLUMNS.map((c, i) => `${c} = $${i + 5}`).join(', ')} WHERE id = $3 AND status = $4`,
        [next.status, JSON.stringify(next), next.id, from, ...searchValues(next)],
      );
      if (updated.rowCount === 0) return rollback(false);
      if (event !== undefined) {
        await client.query('INSERT INTO webhook_events (id, request_id, request_seq, pending, doc) VALUES ($1, $2, $3, true, $4::jsonb)', [
          event.id,
          next.id,
          event.request_seq,
          JSON.stringify(event),
        ]);
        const payload = JSON.stringify({ event_id: event.id });
        await client.query(`INSERT INTO outbox (topic, payload, due_ms) VALUES ($1, $2::jsonb, ${NOW_MS})`, [WEBHOOK_TOPIC, payload]);
        const listeners = await client.query<{ id: string }>(`SELECT id FROM webhook_destinations WHERE expires_ms > ${NOW_MS}`);
        for (const { id } of listeners.rows) {
          await client.query(`INSERT INTO webhook_deliveries (destination, event_id, request_id, request_seq, pending, doc) VALUES ($1, $2, $3, $4, true, '{"attempts":0}'::jsonb)`, [
            id,
            event.id,
            next.id,
            event.request_seq,
          ]);
          await client.query(`INSERT INTO outbox (topic, payload, due_ms) VALUES ($1, $2::jsonb, ${NOW_MS})`, [destinationTopic(id), payload]);
        }
      }
      return true;
    });
  }

  async event(id: string): Promise<WebhookEvent | undefined> {
    return (await this.host.query<{ doc: WebhookEvent }>('SELECT doc FROM webhook_events WHERE id = $1', [id])).rows[0]?.doc;
  }

  async events(limit: number): Promise<WebhookEvent[]> {
    return (await this.host.query<{ doc: WebhookEvent }>('SELECT doc FROM webhook_events ORDER BY seq DESC LIMIT $1', [limit])).rows.map((r) => r.doc);
  }

  async eventsOf(requestId: string): Promise<WebhookEvent[]> {
    return (await this.host.query<{ doc: WebhookEvent }>('SELECT doc FROM webhook_events WHERE request_id = $1 ORDER BY request_seq', [requestId])).rows.map((r) => r.doc);
  }

  async earlierPending(requestId: string, requestSeq: number, destination?: string): Promise<boolean> {
    const result =
      destination === undefined
        ? await this.host.query('SELECT 1 FROM webhook_events WHERE request_id = $1 AND request_seq < $2 AND pending LIMIT 1', [requestId, requestSeq])
        : await this.host.query('SELECT 1 FROM webhook_deliveries WHERE destination = $3 AND request_id = $1 AND request_seq < $2 AND pending LIMIT 1', [requestId, requestSeq, destination]);
    return result.rows.length > 0;
  }

  async recordDelivery(id: string, delivery: WebhookEvent['delivery'], destination?: string): Promise<void> {
    const pending = delivery.delivered_at === undefined && delivery.failed !== true;
    if (destination === undefined) {
      await this.host.query(`UPDATE webhook_events SET pending = $2, doc = jsonb_set(doc, '{delivery}', $3::jsonb) WHERE id = $1`, [id, pending, JSON.stringify(delivery)]);
    } else {
      await this.host.query('UPDATE webhook_deliveries SET pending = $3, doc = $4::jsonb WHERE destination = $1 AND event_id = $2', [destination, id, pending, JSON.stringify(delivery)]);
    }
  }

  async delivery(id: string, destination: string): Promise<WebhookEvent['delivery'] | undefined> {
    return (await this.host.query<{ doc: WebhookEvent['delivery'] }>('SELECT doc FROM webhook_deliveries WHERE destination = $1 AND event_id = $2', [destination, id])).rows[0]?.doc;
  }

  addDestination(destination: string, url: string, leaseMs: number): Promise<void> {
    return this.host.transaction(async (client) => {
      const expired = await client.query<{ id: string }>(`DELETE FROM webhook_destinations WHERE expires_ms <= ${NOW_MS} RETURNING id`);
      for (const { id } of expired.rows) await removeWaiting(client, id);
      await client.query(
        `INSERT INTO webhook_destinations (id, url, expires_ms) VALUES ($1, $2, ${NOW_MS} + $3) ON CONFLICT (id) DO UPDATE SET url = excluded.url, expires_ms = excluded.expires_ms`,
        [destination, url, leaseMs],
      );
    });
  }

  removeDestination(destination: string): Promise<void> {
    return this.host.transaction(async (client) => {
      await client.query('DELETE FROM webhook_destinations WHERE id = $1', [destination]);
      await removeWaiting(client, destination);
    });
  }
}

/** What waits for a listener (its deliveries, its outbox items), in the caller's transaction. */
async function removeWaiting(client: pg.PoolClient, destination: string): Promise<void> {
  await client.query('DELETE FROM webhook_deliveries WHERE destination = $1', [destination]);
  await client.query('UPDATE outbox SET done = true WHERE topic = $1 AND NOT done', [destinationTopic(destination)]);
}
