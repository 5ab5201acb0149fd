import { Socket } from 'node:net';
import type pg from 'pg';
import { NanoPayError } from '../errors.js';
import type { RequestRecord } from '../wallet/requests.js';
import { MIGRATIONS, SCHEMA_VERSION, requestColumns, tooNew } from './schema.js';
import { checkSslFiles, maskDatabaseUrl } from './url.js';
import { PostgresPrices } from './postgres-prices.js';
import { PostgresAccess } from './postgres-access.js';
import type { AccessTable } from './access.js';
import { PostgresShop } from './postgres-shop.js';
import { PostgresApprovals, PostgresAudit } from './postgres-spending.js';
import type { ApprovalsTable, AuditTable } from './spending.js';
import { PostgresRefunds, PostgresSweeps } from './postgres-refunds.js';
import type { RefundsTable, SweepsTable } from './refunds.js';
import type { PricesTable } from './prices.js';
import type { ShopTable } from './shop.js';
import type { LateIf, Outbox, OutboxItem, RequestsTable, Store, StoreChange } from './store.js';

/** The channel status changes are announced on (pg_notify in the changing transaction: sent on commit only). */
const CHANNEL = 'nanopay_changes';
/** Held while migrating, so that instances starting together migrate once. */
const MIGRATION_LOCK = 7_402_611_903;
const NOW_MS = '(extract(epoch from clock_timestamp()) * 1000)::bigint';

/** Errors that say the server or the connection is gone, not that the statement was wrong. */
function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: string }).code ?? '';
  return (
    ['ECONNREFUSED', 'ECONNRESET', 'ENOENT', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN'].includes(code) ||
    code.startsWith('08') ||
    code.startsWith('57P') ||
    /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/.test((error as Error).message ?? '')
  );
}

/**
 * The server answered and refused the connection: the password (wrong, or none given where one is
 * wanted: node-postgres then throws before asking), the user, the database, or its rules (pg_hba).
 */
function isRefusal(error: unknown): boolean {
  const code = (error as { code?: string }).code ?? '';
  return code.startsWith('28') || code === '3D000' || code === '42501' || /password must be a string/i.test((error as Error).message ?? '');
}

const ignore = (): void => undefined;

const rowRecord = (row: { doc: RequestRecord } | undefined): RequestRecord | undefined => row?.doc;

const NOTIFY = (seq: string, id: string, status: string) => `pg_notify('${CHANNEL}', json_build_object('id', ${id}, 'status', ${status}, 'seq', ${seq})::text)`;

/** Adds a request nanopay keeps with one statement (the row and its announcement commit together), through `query` (the pool's, or a transaction's client). */
async function insertRequest(record: RequestRecord, query: (text: string, values: unknown[]) => Promise<unknown>): Promise<void> {
  const c = requestColumns(record);
  try {
    await query(
      `WITH added AS (
         INSERT INTO requests (id, status, order_id, address, amount_raw, created_at, expires_at, fresh_wallet, fresh_index, changed_seq, doc)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, nextval('request_changes'), $10::jsonb) RETURNING id, status, changed_seq)
       SELECT ${NOTIFY('changed_seq', 'id', 'status')} FROM added`,
      [c.id, c.status, c.order_id, c.address, c.amount_raw, c.created_at, c.expires_at, c.fresh_wallet, c.fresh_index, c.doc],
    );
  } catch (error) {
    if ((error as { code?: string }).code === '23505') throw new NanoPayError('CONFLICT', `Request ${record.id} or its account is already in the store`);
    throw error;
  }
}

class PostgresRequests implements RequestsTable {
  constructor(private readonly store: PostgresStore) {}

  async get(id: string): Promise<RequestRecord | undefined> {
    return rowRecord((await this.store.query<{ doc: RequestRecord }>('SELECT doc FROM requests WHERE id = $1', [id])).rows[0]);
  }

  async insert(record: RequestRecord): Promise<void> {
    await insertRequest(record, (text, values) => this.store.query(text, values, { retry: false }));
  }

  async amountInUse(address: string, amountRaw: string, now: string): Promise<boolean> {
    const result = await this.store.query(
      `SELECT 1 FROM requests WHERE address = $1 AND amount_raw = $2 AND status = 'open' AND (expires_at IS NULL OR expires_at > $3) LIMIT 1`,
      [address, amountRaw, now],
    );
    return result.rows.length > 0;
  }

  async claimedBy(hashes: string[]): Promise<Map<string, string>> {
    if (hashes.length === 0) return new Map();
    const result = await this.store.query<{ hash: string; request_id: string }>('SELECT hash, request_id FROM request_payments WHERE hash = ANY($1::text[])', [hashes]);
    return new Map(result.rows.map((r) => [r.hash, r.request_id]));
  }

  async freshIndexes(wallet: string): Promise<number[]> {
    const result = await this.store.query<{ fresh_index: number }>('SELECT DISTINCT fresh_index FROM requests WHERE fresh_wallet = $1', [wallet]);
    return result.rows.map((r) => r.fresh_index);
  }

  async fresh(wallet: string): Promise<RequestRecord[]> {
    return (await this.store.query<{ doc: RequestRecord }>('SELECT doc FROM requests WHERE fresh_wallet = $1 ORDER BY fresh_index', [wallet])).rows.map((r) => r.doc);
  }

  claim(id: string, hashes: string[], late?: LateIf): Promise<RequestRecord | undefined> {
    return this.claimIn(async (client) => rowRecord((await client.query<{ doc: RequestRecord }>('SELECT doc FROM requests WHERE id = $1 FOR UPDATE', [id])).rows[0]), hashes, late);
  }

  claimOldest(address: string, amountRaw: string, hash: string, late?: LateIf): Promise<RequestRecord | undefined> {
    return this.claimIn(async (client) => {
      const result = await client.query<{ doc: RequestRecord }>(
        `SELECT doc FROM requests WHERE address = $1 AND amount_raw = $2 AND status = 'open' AND fresh_wallet IS NULL ORDER BY created_at LIMIT 1 FOR UPDATE`,
        [address, amountRaw],
      );
      return rowRecord(result.rows[0]);
    }, [hash], late);
  }

  /**
   * One transaction: the request `find` locks is paid by `hashes`, unless one of them paid another
   * (the payments' primary key decides between instances claiming the same block at once).
   */
  private claimIn(find: (client: pg.PoolClient) => Promise<RequestRecord | undefined>, hashes: string[], late?: LateIf): Promise<RequestRecord | undefined> {
    return this.store.transaction(async (client, rollback) => {
      const record = await find(client);
      if (record === undefined) return rollback(undefined);
      if (record.paidBy !== undefined) return record;
      const added = await client.query('INSERT INTO request_payments (hash, request_id) SELECT unnest($1::text[]), $2 ON CONFLICT (hash) DO NOTHING', [hashes, record.id]);
      if (added.rowCount !== hashes.length) return rollback(undefined);
      const paid: RequestRecord = { ...record, paidBy: hashes, ...(late?.(record) === true ? { paidLate: true } : {}) };
      await client.query(
        `WITH changed AS (UPDATE requests SET status = 'paid', doc = $2::jsonb, changed_seq = nextval('request_changes') WHERE id = $1 RETURNING id, status, changed_seq)
         SELECT ${NOTIFY('changed_seq', 'id', 'status')} FROM changed`,
        [record.id, JSON.stringify(paid)],
      );
      return paid;
    });
  }

  /** In statements of a thousand rows each (arrays unnested): 100,000 took 18 s one by one here, 3 s so. */
  importAll(records: RequestRecord[]): Promise<number> {
    return this.store.transaction(async (client) => {
      let added = 0;
      for (let start = 0; start < records.length; start += 1000) {
        const part = records.slice(start, start + 1000);
        const columns = part.map(requestColumns);
        const pick = <K extends keyof (typeof columns)[number]>(key: K) => columns.map((c) => c[key]);
        const inserted = await client.query<{ id: string }>(
          `INSERT INTO requests (id, status, order_id, address, amount_raw, created_at, expires_at, fresh_wallet, fresh_index, changed_seq, doc)
           SELECT id, status, order_id, address, amount_raw, created_at, expires_at, fresh_wallet, fresh_index, nextval('request_changes'), doc::jsonb
           FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::int[], $10::text[])
             AS t (id, status, order_id, address, amount_raw, created_at, expires_at, fresh_wallet, fresh_index, doc)
           ON CONFLICT (id) DO NOTHING RETURNING id`,
          [pick('id'), pick('status'), pick('order_id'), pick('address'), pick('amount_raw'), pick('created_at'), pick('expires_at'), pick('fresh_wallet'), pick('fresh_index'), pick('doc')],
        );
        added += inserted.rows.length;
        const fresh = new Set(inserted.rows.map((r) => r.id));
        const payments = part.flatMap((r) => (fresh.has(r.id) ? (r.paidBy ?? []).map((hash) => [hash, r.id] as const) : []));
        if (payments.length > 0) {
          await client.query('INSERT INTO request_payments (hash, request_id) SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT (hash) DO NOTHING', [
            payments.map((p) => p[0]),
            payments.map((p) => p[1]),
          ]);
        }
      }
      return added;
    });
  }
}

class PostgresOutbox implements Outbox {
  constructor(private readonly store: PostgresStore) {}

  async enqueue(topic: string, payload: unknown): Promise<number> {
    const result = await this.store.query<{ id: string }>(`INSERT INTO outbox (topic, payload, due_ms) VALUES ($1, $2::jsonb, ${NOW_MS}) RETURNING id`, [topic, JSON.stringify(payload)], {
      retry: false,
    });
    return Number(result.rows[0]?.id);
  }

  async claim(topic: string, leaseMs: number): Promise<OutboxItem | undefined> {
    // The row lock is held only by this statement; the lease (due_ms moved ahead) keeps it from others until it ends.
    const result = await this.store.query<{ id: string; topic: string; payload: unknown; attempts: number }>(
      `UPDATE outbox SET due_ms = ${NOW_MS} + $2, attempts = attempts + 1
       WHERE id = (SELECT id FROM outbox WHERE topic = $1 AND NOT done AND due_ms <= ${NOW_MS} ORDER BY due_ms, id FOR UPDATE SKIP LOCKED LIMIT 1)
       RETURNING id, topic, payload, attempts`,
      [topic, leaseMs],
      { retry: false },
    );
    const row = result.rows[0];
    return row === undefined ? undefined : { id: Number(row.id), topic: row.topic, payload: row.payload, attempts: row.attempts };
  }

  async done(id: number): Promise<void> {
    await this.store.query('UPDATE outbox SET done = true WHERE id = $1', [id]);
  }

  async retry(id: number, delayMs: number): Promise<void> {
    await this.store.query(`UPDATE outbox SET due_ms = ${NOW_MS} + $2 WHERE id = $1 AND NOT done`, [id, delayMs]);
  }

  async backlog(topic: string): Promise<{ count: number; oldest?: unknown }> {
    const result = await this.store.query<{ n: string; oldest: unknown }>(
      'SELECT (SELECT count(*) FROM outbox WHERE topic = $1 AND NOT done) AS n, (SELECT payload FROM outbox WHERE id = (SELECT min(id) FROM outbox WHERE topic = $1 AND NOT done)) AS oldest',
      [topic],
    );
    const row = result.rows[0];
    const count = Number(row?.n ?? 0);
    return row?.oldest === null || row?.oldest === undefined ? { count } : { count, oldest: row.oldest };
  }
}

/**
 * A shared store in PostgreSQL: several instances (processes, machines) use it
 * at once. Claims are transactions with row locks, status changes are
 * announced with NOTIFY, and the schema is migrated on open.
 */
export class PostgresStore implements Store {
  readonly kind = 'postgres';
  readonly requests: RequestsTable = new PostgresRequests(this);
  readonly outbox: Outbox = new PostgresOutbox(this);
  readonly shop: ShopTable = new PostgresShop(this);
  readonly audit: AuditTable = new PostgresAudit(this);
  readonly approvals: ApprovalsTable = new PostgresApprovals(this);
  readonly refunds: RefundsTable = new PostgresRefunds(this);
  readonly sweeps: SweepsTable = new PostgresSweeps(this);
  readonly prices: PricesTable = new PostgresPrices(this);
  readonly access: AccessTable = new PostgresAccess(this);
  readonly location: string;
  private readonly listeners = new Set<Listener>();
  private readonly queues = new Map<string, Promise<void>>();

  private constructor(
    private readonly pg: typeof import('pg').default,
    private readonly pool: pg.Pool,
    private readonly url: string,
  ) {
    this.location = maskDatabaseUrl(url);
  }

  static async open(url: string): Promise<PostgresStore> {
    checkSslFiles(url);
    const { default: pgModule } = await import('pg');
    // node-postgres leaves a connection open when it cannot answer the server's password request (none given):
    // the server holds it for a minute, and the process with it. Every socket is kept here, so a failed open closes them.
    const sockets = new Set<Socket>();
    const stream = (): Socket => {
      const socket = new Socket();
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      return socket;
    };
    // Idle connections must not keep a command's process alive.
    const pool = new pgModule.Pool({ connectionString: url, max: 10, allowExitOnIdle: true, connectionTimeoutMillis: 10_000, stream });
    // An idle connection the server ended (a restart) is dropped by the pool; without a listener the process would end.
    pool.on('error', () => undefined);
    const store = new PostgresStore(pgModule, pool, url);
    try {
      await store.migrate();
    } catch (error) {
      await pool.end().catch(() => undefined);
      for (const socket of sockets) socket.destroy();
      throw error;
    }
    return store;
  }

  unavailable(error: unknown): NanoPayError {
    return new NanoPayError('STORE_UNAVAILABLE', `The store ${this.location} cannot be reached: ${(error as Error).message}`, { cause: error });
  }

  /** A failure to connect, as the user should see it: unreachable, refused, or (neither) as it is. */
  private connectFailure(error: unknown): unknown {
    if (isConnectionError(error)) return this.unavailable(error);
    if (!isRefusal(error)) return error;
    const said = /password must be a string/i.test((error as Error).message) ? 'the server wants a password, and none was given' : (error as Error).message;
    return new NanoPayError('STORE_REFUSED', `The store ${this.location} refused the connection: ${said}`, {
      hint: 'Check the user and database in the URL (database-url or NANOPAY_DATABASE_URL), and the password in PGPASSWORD, ~/.pgpass or NANOPAY_DATABASE_URL.',
      cause: error,
    });
  }

  /** One statement; a lost connection is retried (a read, or `retry` left on) for up to about 5 s, then reported. */
  async query<R extends pg.QueryResultRow = Record<string, unknown>>(text: string, values: unknown[] = [], { retry = true } = {}): Promise<pg.QueryResult<R>> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.pool.query<R>(text, values);
      } catch (error) {
        if (isRefusal(error)) throw this.connectFailure(error);
        if (!isConnectionError(error)) throw error;
        if (!retry || attempt >= 10) throw this.unavailable(error);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  }

  /**
   * A connection of the pool for a while. Its errors (the server gone) are ignored here: the statement
   * running on it fails with them, and it is released as broken.
   */
  async checkout(): Promise<pg.PoolClient> {
    const client = await this.pool.connect().catch((error: unknown) => {
      throw this.connectFailure(error);
    });
    client.on('error', ignore);
    return client;
  }

  release(client: pg.PoolClient, error?: unknown): void {
    client.off('error', ignore);
    client.release(error as Error | undefined);
  }

  /** Adds a request nanopay keeps, on `client` (in its transaction). */
  insertRequest(record: RequestRecord, client: pg.PoolClient): Promise<void> {
    return insertRequest(record, (text, values) => client.query(text, values));
  }

  /** Runs `fn` in a transaction on one connection; `rollback(value)` ends it unchanged with that value. */
  async transaction<T>(fn: (client: pg.PoolClient, rollback: <V>(value: V) => V) => Promise<T>): Promise<T> {
    const client = await this.checkout();
    let rolledBack = false;
    let broken: unknown;
    try {
      await client.query('BEGIN');
      const result = await fn(client, (value) => {
        rolledBack = true;
        return value;
      });
      await client.query(rolledBack ? 'ROLLBACK' : 'COMMIT');
      return result;
    } catch (error) {
      if (isConnectionError(error)) {
        broken = error;
        throw this.unavailable(error);
      }
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      this.release(client, broken);
    }
  }

  private async migrate(): Promise<void> {
    await this.transaction(async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())');
      const current = Number((await client.query<{ v: number | null }>('SELECT MAX(version) AS v FROM schema_migrations')).rows[0]?.v ?? 0);
      if (current > SCHEMA_VERSION) throw tooNew(this.location, current);
      for (const migration of MIGRATIONS.filter((m) => m.version > current)) {
        await client.query(migration.postgres);
        await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [migration.version]);
      }
    });
  }

  /**
   * Callers of this process queue for a name first, so that they hold one connection between them while
   * waiting for the server's lock (waiting with one each would leave `fn` none to work with).
   */
  exclusive<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(name) ?? Promise.resolve();
    const mine = previous.then(() => this.exclusiveOnServer(name, fn));
    const settled = mine.then(
      () => undefined,
      () => undefined,
    );
    this.queues.set(name, settled);
    void settled.then(() => {
      if (this.queues.get(name) === settled) this.queues.delete(name);
    });
    return mine;
  }

  private async exclusiveOnServer<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const client = await this.checkout();
    // A session lock on a connection of its own: if this process dies, the server ends the session and frees it.
    try {
      await client.query(`SELECT pg_advisory_lock(hashtextextended($1, 0))`, [`nanopay:${name}`]);
    } catch (error) {
      this.release(client, error);
      throw isConnectionError(error) ? this.unavailable(error) : error;
    }
    try {
      return await fn();
    } finally {
      await client.query(`SELECT pg_advisory_unlock(hashtextextended($1, 0))`, [`nanopay:${name}`]).then(
        () => this.release(client),
        (error: unknown) => this.release(client, error),
      );
    }
  }

  async subscribe(onChange: (change: StoreChange) => void): Promise<() => Promise<void>> {
    const seq = Number((await this.query<{ seq: string | null }>('SELECT MAX(changed_seq) AS seq FROM requests')).rows[0]?.seq ?? 0);
    const listener = new Listener(this.pg, this.url, seq, onChange);
    this.listeners.add(listener);
    await listener.start();
    return async () => {
      this.listeners.delete(listener);
      await listener.stop();
    };
  }

  async ping(): Promise<void> {
    await this.query('SELECT 1', [], { retry: false });
  }

  async close(): Promise<void> {
    await Promise.all([...this.listeners].map((l) => l.stop()));
    this.listeners.clear();
    await this.pool.end();
  }
}

/** How far before the newest change it saw a listener reads again after a lost connection: changes commit out of order. */
const CATCH_UP_MARGIN = 1000;
/** How many change numbers a listener remembers, so that none is passed on twice. */
const SEEN_LIMIT = 20_000;

/**
 * LISTEN on a connection of its own. When the connection is lost (the server
 * restarted), it reconnects with a growing pause and then reads the changes it
 * may have missed, so nothing is lost; each change is passed on once.
 */
class Listener {
  private client: pg.Client | undefined;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly seen = new Set<number>();
  private newest: number;
  /** Notifications that came during a catch-up, passed on after it (in order). */
  private held: StoreChange[] | undefined;

  /** `since`: the newest change when the subscription began; none up to it is passed on. */
  constructor(
    private readonly pg: typeof import('pg').default,
    private readonly url: string,
    private readonly since: number,
    private readonly onChange: (change: StoreChange) => void,
  ) {
    this.newest = since;
  }

  async start(): Promise<void> {
    await this.connect(false);
  }

  private pass(change: StoreChange): void {
    if (this.held !== undefined) {
      this.held.push(change);
      return;
    }
    if (this.seen.has(change.seq)) return;
    this.seen.add(change.seq);
    if (this.seen.size > SEEN_LIMIT) this.seen.delete(this.seen.values().next().value as number);
    this.newest = Math.max(this.newest, change.seq);
    this.onChange(change);
  }

  private async connect(catchUp: boolean): Promise<void> {
    const client = new this.pg.Client({ connectionString: this.url, connectionTimeoutMillis: 10_000 });
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    client.on('notification', (message) => {
      if (message.channel !== CHANNEL || message.payload === undefined) return;
      const { id, status, seq } = JSON.parse(message.payload) as { id: string; status: StoreChange['status']; seq: number };
      this.pass({ table: 'requests', id, status, seq: Number(seq) });
    });
    await client.connect();
    if (catchUp) this.held = [];
    try {
      await client.query(`LISTEN ${CHANNEL}`);
      if (this.stopped) {
        await client.end().catch(() => undefined);
        return;
      }
      this.client = client;
      if (catchUp) await this.catchUp(client);
    } finally {
      const held = this.held ?? [];
      this.held = undefined;
      for (const change of held) this.pass(change);
    }
  }

  /** The changes made while no connection listened (and a margin before them: numbers are taken before commits), in order. */
  private async catchUp(client: pg.Client): Promise<void> {
    const missed = await client.query<{ id: string; status: StoreChange['status']; changed_seq: string }>(
      'SELECT id, status, changed_seq FROM requests WHERE changed_seq > $1 ORDER BY changed_seq',
      [Math.max(this.since, this.newest - CATCH_UP_MARGIN)],
    );
    const held = this.held ?? [];
    this.held = undefined;
    for (const row of missed.rows) this.pass({ table: 'requests', id: row.id, status: row.status, seq: Number(row.changed_seq) });
    for (const change of held) this.pass(change);
  }

  private lost(client: pg.Client, pauseMs = 100): void {
    if (this.stopped || (this.client !== client && this.client !== undefined)) return;
    this.client = undefined;
    client.end().catch(() => undefined);
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      this.connect(true).catch(() => {
        if (!this.stopped) this.lost(client, Math.min(pauseMs * 2, 2000));
      });
    }, pauseMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }
}
