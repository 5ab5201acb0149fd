import { EventEmitter } from 'node:events';
import { accessSync, closeSync, constants, lstatSync, openSync, statSync, statfsSync } from 'node:fs';
import { dirname } from 'node:path';
import { pathToFileURL } from 'node:url';
import type BetterSqlite3 from 'better-sqlite3';
import { NanoPayError, diskFull, notWritable } from '../errors.js';
import { ensurePrivateDir } from '../fs/secure-fs.js';
import { withAccountLock } from '../wallet/lock.js';
import type { RequestRecord } from '../wallet/requests.js';
import { MIGRATIONS, SCHEMA_VERSION, requestColumns, tooNew } from './schema.js';
import { SqlitePrices } from './sqlite-prices.js';
import { SqliteAccess } from './sqlite-access.js';
import type { AccessTable } from './access.js';
import { SqliteShop } from './sqlite-shop.js';
import { SqliteApprovals, SqliteAudit } from './sqlite-spending.js';
import type { ApprovalsTable, AuditTable } from './spending.js';
import { SqliteRefunds, SqliteSweeps } from './sqlite-refunds.js';
import type { RefundsTable, SweepsTable } from './refunds.js';
import type { PricesTable } from './prices.js';
import type { ShopTable } from './shop.js';
import type { LateIf, Outbox, OutboxItem, RequestsTable, Store, StoreChange } from './store.js';

type Db = BetterSqlite3.Database;

/** SQLite's own codes for a file that is not (or no longer) a sound database. */
const DAMAGED = new Set(['SQLITE_NOTADB', 'SQLITE_CORRUPT', 'SQLITE_CORRUPT_INDEX', 'SQLITE_CORRUPT_SEQUENCE', 'SQLITE_CORRUPT_VTAB']);

function damaged(path: string, error: unknown): NanoPayError {
  return new NanoPayError('STORE_CORRUPT', `The store ${path} is damaged (${(error as Error).message}); it was left untouched`, {
    hint: 'Restore it from a backup, or move it away to start an empty store: nanopay never recreates it over your data.',
    cause: error,
  });
}

/** Below this much room, the disk is full for SQLite, which sizes its -shm and -wal files in steps of 32 KiB and more. */
const FULL_BELOW_BYTES = 1024 * 1024;

function diskIsFull(path: string): boolean {
  try {
    const room = statfsSync(dirname(path));
    return room.bavail * room.bsize < FULL_BELOW_BYTES;
  } catch {
    return false;
  }
}

/**
 * What SQLite's error means for the user: a damaged file, a full disk (SQLite
 * says "disk I/O error" when it cannot size its -shm file on one), or a file
 * it may not write. Anything else as it is.
 */
function storeFailure(path: string, error: unknown): unknown {
  if (error instanceof NanoPayError) return error;
  const code = (error as { code?: string }).code ?? '';
  if (DAMAGED.has(code)) return damaged(path, error);
  if (code === 'SQLITE_FULL' || (code.startsWith('SQLITE_IOERR') && diskIsFull(path))) return diskFull(path, error);
  if (code.startsWith('SQLITE_READONLY')) return notWritable(path, true, error);
  return error;
}

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * How SQLite opens the store on a disk it cannot write: a WAL database needs its -shm file,
 * which cannot be made there. With no -wal file (every change is in the database itself, as
 * after the last writer closed it) it is opened immutable, which needs none; else as it is,
 * which works if a writer elsewhere left both files.
 */
function readOnlyName(path: string): string {
  const wal = statSync(`${path}-wal`, { throwIfNoEntry: false });
  if (wal !== undefined && wal.size > 0) return path;
  return `${pathToFileURL(path).href}?immutable=1`;
}

/** Statements kept prepared per store. */
const MAX_PREPARED = 256;

/** Changes made in this process, per database file: SQLite has no notifications across processes. */
const emitters = new Map<string, EventEmitter>();

function emitter(path: string): EventEmitter {
  let found = emitters.get(path);
  if (found === undefined) {
    found = new EventEmitter();
    found.setMaxListeners(0);
    emitters.set(path, found);
  }
  return found;
}

const toRecord = (row: { doc: string } | undefined): RequestRecord | undefined => (row === undefined ? undefined : (JSON.parse(row.doc) as RequestRecord));

/** In statements with one parameter per item, in chunks under SQLite's limit of parameters. */
function chunks<T>(items: T[], size = 500): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

class SqliteRequests implements RequestsTable {
  constructor(private readonly store: SqliteStore) {}

  private get db(): Db {
    return this.store.db;
  }

  get(id: string): Promise<RequestRecord | undefined> {
    return this.store.run(() => toRecord(this.store.prepared('SELECT doc FROM requests WHERE id = ?').get(id) as { doc: string } | undefined));
  }

  insert(record: RequestRecord): Promise<void> {
    return this.store.run(() => {
      const change = this.db.transaction(() => this.store.insertRequest(record)).immediate();
      this.store.emit(change);
    });
  }

  amountInUse(address: string, amountRaw: string, now: string): Promise<boolean> {
    return this.store.run(
      () =>
        this.store
          .prepared(`SELECT 1 FROM requests WHERE address = ? AND amount_raw = ? AND status = 'open' AND (expires_at IS NULL OR expires_at > ?) LIMIT 1`)
          .get(address, amountRaw, now) !== undefined,
    );
  }

  claimedBy(hashes: string[]): Promise<Map<string, string>> {
    return this.store.run(() => {
      const found = new Map<string, string>();
      for (const part of chunks(hashes)) {
        const rows = this.db.prepare(`SELECT hash, request_id FROM request_payments WHERE hash IN (${part.map(() => '?').join(',')})`).all(...part) as { hash: string; request_id: string }[];
        for (const row of rows) found.set(row.hash, row.request_id);
      }
      return found;
    });
  }

  freshIndexes(wallet: string): Promise<number[]> {
    return this.store.run(() =>
      (this.db.prepare('SELECT DISTINCT fresh_index FROM requests WHERE fresh_wallet = ?').all(wallet) as { fresh_index: number }[]).map((r) => r.fresh_index),
    );
  }

  fresh(wallet: string): Promise<RequestRecord[]> {
    return this.store.run(() =>
      (this.db.prepare('SELECT doc FROM requests WHERE fresh_wallet = ? ORDER BY fresh_index').all(wallet) as { doc: string }[]).map((r) => JSON.parse(r.doc) as RequestRecord),
    );
  }

  claim(id: string, hashes: string[], late?: LateIf): Promise<RequestRecord | undefined> {
    return this.store.run(() => this.claimIn(() => toRecord(this.db.prepare('SELECT doc FROM requests WHERE id = ?').get(id) as { doc: string } | undefined), hashes, late));
  }

  claimOldest(address: string, amountRaw: string, hash: string, late?: LateIf): Promise<RequestRecord | undefined> {
    return this.store.run(() =>
      this.claimIn(
        () =>
          toRecord(
            this.db
              .prepare(`SELECT doc FROM requests WHERE address = ? AND amount_raw = ? AND status = 'open' AND fresh_wallet IS NULL ORDER BY created_at LIMIT 1`)
              .get(address, amountRaw) as { doc: string } | undefined,
          ),
        [hash],
        late,
      ),
    );
  }

  /** One write transaction: the request `find` picks is paid by `hashes` unless one of them paid another. */
  private claimIn(find: () => RequestRecord | undefined, hashes: string[], late?: LateIf): RequestRecord | undefined {
    const result = this.db
      .transaction((): { record?: RequestRecord; change?: StoreChange } => {
        const record = find();
        if (record === undefined) return {};
        if (record.paidBy !== undefined) return { record };
        const taken = this.db.prepare('SELECT 1 FROM request_payments WHERE hash = ?');
        if (hashes.some((hash) => taken.get(hash) !== undefined)) return {};
        const paid: RequestRecord = { ...record, paidBy: hashes, ...(late?.(record) === true ? { paidLate: true } : {}) };
        const insert = this.db.prepare('INSERT INTO request_payments (hash, request_id) VALUES (?, ?)');
        for (const hash of hashes) insert.run(hash, record.id);
        const seq = this.store.nextSeq();
        this.db.prepare(`UPDATE requests SET status = 'paid', doc = ?, changed_seq = ? WHERE id = ?`).run(JSON.stringify(paid), seq, record.id);
        return { record: paid, change: { table: 'requests', id: record.id, status: 'paid', seq } };
      })
      .immediate();
    if (result.change !== undefined) this.store.emit(result.change);
    return result.record;
  }

  importAll(records: RequestRecord[]): Promise<number> {
    return this.store.run(() =>
      this.db
        .transaction(() => {
          const insert = this.db.prepare(
            `INSERT OR IGNORE INTO requests (id, status, order_id, address, amount_raw, created_at, expires_at, fresh_wallet, fresh_index, changed_seq, doc)
             VALUES (@id, @status, @order_id, @address, @amount_raw, @created_at, @expires_at, @fresh_wallet, @fresh_index, @seq, @doc)`,
          );
          const pay = this.db.prepare('INSERT OR IGNORE INTO request_payments (hash, request_id) VALUES (?, ?)');
          let added = 0;
          for (const record of records) {
            if (insert.run({ ...requestColumns(record), seq: this.store.nextSeq() }).changes === 0) continue;
            added++;
            for (const hash of record.paidBy ?? []) pay.run(hash, record.id);
          }
          return added;
        })
        .immediate(),
    );
  }
}

class SqliteOutbox implements Outbox {
  constructor(private readonly store: SqliteStore) {}

  enqueue(topic: string, payload: unknown): Promise<number> {
    return this.store.run(
      () => Number(this.store.db.prepare('INSERT INTO outbox (topic, payload, due_ms) VALUES (?, ?, ?)').run(topic, JSON.stringify(payload), Date.now()).lastInsertRowid),
    );
  }

  claim(topic: string, leaseMs: number): Promise<OutboxItem | undefined> {
    const db = this.store.db;
    return this.store.run(() =>
      db
        .transaction((): OutboxItem | undefined => {
          const now = Date.now();
          const row = db.prepare('SELECT id, topic, payload, attempts FROM outbox WHERE topic = ? AND done = 0 AND due_ms <= ? ORDER BY due_ms, id LIMIT 1').get(topic, now) as
            | { id: number; topic: string; payload: string; attempts: number }
            | undefined;
          if (row === undefined) return undefined;
          db.prepare('UPDATE outbox SET due_ms = ?, attempts = attempts + 1 WHERE id = ?').run(now + leaseMs, row.id);
          return { id: row.id, topic: row.topic, payload: JSON.parse(row.payload), attempts: row.attempts + 1 };
        })
        .immediate(),
    );
  }

  done(id: number): Promise<void> {
    return this.store.run(() => void this.store.db.prepare('UPDATE outbox SET done = 1 WHERE id = ?').run(id));
  }

  retry(id: number, delayMs: number): Promise<void> {
    return this.store.run(() => void this.store.db.prepare('UPDATE outbox SET due_ms = ? WHERE id = ? AND done = 0').run(Date.now() + delayMs, id));
  }

  backlog(topic: string): Promise<{ count: number; oldest?: unknown }> {
    const db = this.store.db;
    return this.store.run(() => {
      const { n, first } = db.prepare('SELECT COUNT(*) AS n, MIN(id) AS first FROM outbox WHERE topic = ? AND done = 0').get(topic) as { n: number; first: number | null };
      if (first === null) return { count: n };
      const row = db.prepare('SELECT payload FROM outbox WHERE id = ?').get(first) as { payload: string } | undefined;
      return row === undefined ? { count: n } : { count: n, oldest: JSON.parse(row.payload) };
    });
  }
}

/**
 * The embedded store: one SQLite file (0600) in WAL mode, so readers never wait
 * for a writer and a crash loses no committed change. Writes are short
 * transactions (BEGIN IMMEDIATE) that other processes wait for (busy timeout).
 */
export class SqliteStore implements Store {
  readonly kind = 'sqlite';
  readonly requests: RequestsTable = new SqliteRequests(this);
  readonly outbox: Outbox = new SqliteOutbox(this);
  readonly shop: ShopTable = new SqliteShop(this);
  readonly audit: AuditTable = new SqliteAudit(this);
  readonly approvals: ApprovalsTable = new SqliteApprovals(this);
  readonly refunds: RefundsTable = new SqliteRefunds(this);
  readonly sweeps: SweepsTable = new SqliteSweeps(this);
  readonly prices: PricesTable = new SqlitePrices(this);
  readonly access: AccessTable = new SqliteAccess(this);

  private readonly statements = new Map<string, BetterSqlite3.Statement>();

  private constructor(
    readonly db: Db,
    readonly location: string,
    private readonly lockDir: string,
    private readonly lockPrefix: string,
  ) {}

  /**
   * Opens (or creates) the store at `path`; a damaged file is reported, never replaced.
   * In a dir this process cannot write (a read-only disk), an existing store is opened
   * read-only, so that the commands that only read still run.
   */
  static async open(path: string, lockDir: string, lockPrefix: string): Promise<SqliteStore> {
    await ensurePrivateDir(dirname(path));
    // A link is not followed (its target may be anyone's), as for every file of the config dir.
    if (lstatSync(path, { throwIfNoEntry: false })?.isSymbolicLink() === true) {
      throw new NanoPayError('STORE_CORRUPT', `${path} is a symbolic link; nanopay does not follow links for its own files`, { hint: 'Replace the link with the file it points to.' });
    }
    const readOnly = !writable(dirname(path));
    // Created 0600 before SQLite opens it: SQLite gives its -wal and -shm files the database's mode.
    if (!readOnly) closeSync(openSync(path, 'a', 0o600));
    // Lets a name that starts with file: be a URI (for immutable=1 below); ours are absolute paths, never read so otherwise.
    process.env.SQLITE_USE_URI = '1';
    const { default: Database } = await import('better-sqlite3');
    let db: Db | undefined;
    try {
      if (readOnly) {
        db = new Database(readOnlyName(path), { readonly: true, fileMustExist: true });
      } else {
        db = new Database(path, { timeout: 15_000 });
        db.pragma('journal_mode = WAL');
        // Every commit synced before it returns: better-sqlite3 builds SQLite to sync a WAL database only at checkpoints
        // (NORMAL), so a request answered as created, or a spend counted, could be lost with the machine's power.
        db.pragma('synchronous = FULL');
      }
      db.pragma('foreign_keys = ON');
      migrate(db, path);
    } catch (error) {
      db?.close();
      throw storeFailure(path, error);
    }
    return new SqliteStore(db, path, lockDir, lockPrefix);
  }

  /** Runs a statement, reporting a damaged file, a full disk or a read-only one as such. */
  run<T>(fn: () => T): Promise<T> {
    try {
      return Promise.resolve(fn());
    } catch (error) {
      return Promise.reject(storeFailure(this.location, error));
    }
  }

  /** The next change's number; called inside a write transaction. */
  nextSeq(): number {
    return ((this.prepared('SELECT MAX(changed_seq) AS seq FROM requests').get() as { seq: number | null }).seq ?? 0) + 1;
  }

  /** Adds a request nanopay keeps, inside the caller's write transaction; the change to emit once it commits. */
  insertRequest(record: RequestRecord): StoreChange {
    const seq = this.nextSeq();
    try {
      this.prepared(
        `INSERT INTO requests (id, status, order_id, address, amount_raw, created_at, expires_at, fresh_wallet, fresh_index, changed_seq, doc)
         VALUES (@id, @status, @order_id, @address, @amount_raw, @created_at, @expires_at, @fresh_wallet, @fresh_index, @seq, @doc)`,
      ).run({ ...requestColumns(record), seq });
    } catch (error) {
      if ((error as { code?: string }).code?.startsWith('SQLITE_CONSTRAINT')) throw new NanoPayError('CONFLICT', `Request ${record.id} or its account is already in the store`);
      throw error;
    }
    return { table: 'requests', id: record.id, status: 'open', seq };
  }

  /**
   * The statement for `sql`, prepared once: SQLite parses and plans each
   * preparation, on every request made. Statements whose text is built per
   * call (IN lists) beyond the first few hundred are prepared each time.
   */
  prepared(sql: string): BetterSqlite3.Statement {
    let statement = this.statements.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      if (this.statements.size < MAX_PREPARED) this.statements.set(sql, statement);
    }
    return statement;
  }

  emit(change: StoreChange): void {
    emitter(this.location).emit('change', change);
  }

  exclusive<T>(name: string, fn: () => Promise<T>): Promise<T> {
    return withAccountLock(this.lockDir, `${this.lockPrefix}-${name}`, fn);
  }

  async subscribe(onChange: (change: StoreChange) => void): Promise<() => Promise<void>> {
    const events = emitter(this.location);
    events.on('change', onChange);
    return async () => void events.off('change', onChange);
  }

  ping(): Promise<void> {
    return this.run(() => void this.db.prepare('SELECT MAX(version) FROM schema_migrations').get());
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}

function migrate(db: Db, path: string): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)');
  const current = () => (db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null }).v ?? 0;
  if (current() > SCHEMA_VERSION) throw tooNew(path, current());
  if (current() === SCHEMA_VERSION) return;
  db.transaction(() => {
    // Read again inside the write transaction: another process may have migrated meanwhile.
    const from = current();
    for (const migration of MIGRATIONS.filter((m) => m.version > from)) {
      db.exec(migration.sqlite);
      db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(migration.version, new Date().toISOString());
    }
  }).immediate();
}
