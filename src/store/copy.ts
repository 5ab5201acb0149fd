import type pg from 'pg';
import { NanoPayError } from '../errors.js';
import { MIGRATIONS } from './schema.js';
import type { PostgresStore } from './postgres.js';
import type { SqliteStore } from './sqlite.js';
import type { Store } from './store.js';

/**
 * Copying a whole store to another of the other kind (SQLite ⇄ PostgreSQL), generically: the tables come from
 * the catalog, their rows column by column. Values travel in a form both sides take: SQLite's JSON text and 0/1
 * go into JSONB and BOOLEAN as they are (PostgreSQL parses them), and PostgreSQL's JSONB and BOOLEAN are read as
 * text and 0/1 for SQLite.
 */

/** The tables in the order the migrations create them: a table a foreign key references comes before the one referring to it. */
const TABLE_ORDER = MIGRATIONS.flatMap((m) => [...m.sqlite.matchAll(/CREATE TABLE (\w+)/g)].map((match) => match[1] as string));

/** A sequence that no column owns, and the column whose values it hands out (PostgreSQL; SQLite takes the column's maximum). */
const FREE_SEQUENCES: Record<string, { table: string; column: string }> = { request_changes: { table: 'requests', column: 'changed_seq' } };

/** Rows read and written at a time. */
const PAGE = 500;

type Row = unknown[];

export interface TableCount {
  table: string;
  rows: number;
}

/** One side of a copy, in a transaction of its own: a snapshot to read, or the writes to commit. */
interface Side {
  readonly location: string;
  tables(): Promise<string[]>;
  columns(table: string): Promise<string[]>;
  count(table: string): Promise<number>;
  page(table: string, columns: string[], offset: number): Promise<Row[]>;
  insert(table: string, columns: string[], rows: Row[]): Promise<void>;
  /** The last number each counter handed out (keyed by table for a table's own id, by name for a free sequence). */
  counters(): Promise<Map<string, number>>;
  /** Moves each counter past `last` (and past the copied rows' maximum). */
  setCounters(last: Map<string, number>): Promise<void>;
  end(commit: boolean): Promise<void>;
}

const quote = (name: string): string => `"${name.replaceAll('"', '""')}"`;

class SqliteSide implements Side {
  constructor(
    private readonly store: SqliteStore,
    write: boolean,
  ) {
    store.db.exec(write ? 'BEGIN IMMEDIATE' : 'BEGIN');
  }

  get location(): string {
    return this.store.location;
  }

  async tables(): Promise<string[]> {
    const rows = this.store.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations'").all() as { name: string }[];
    return rows.map((r) => r.name);
  }

  async columns(table: string): Promise<string[]> {
    return (this.store.db.prepare(`SELECT name FROM pragma_table_info(?) ORDER BY cid`).all(table) as { name: string }[]).map((r) => r.name);
  }

  async count(table: string): Promise<number> {
    return (this.store.db.prepare(`SELECT COUNT(*) AS n FROM ${quote(table)}`).get() as { n: number }).n;
  }

  async page(table: string, columns: string[], offset: number): Promise<Row[]> {
    return this.store.db
      .prepare(`SELECT ${columns.map(quote).join(', ')} FROM ${quote(table)} ORDER BY rowid LIMIT ? OFFSET ?`)
      .raw()
      .all(PAGE, offset) as Row[];
  }

  async insert(table: string, columns: string[], rows: Row[]): Promise<void> {
    const statement = this.store.db.prepare(`INSERT INTO ${quote(table)} (${columns.map(quote).join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`);
    for (const row of rows) statement.run(...row);
  }

  async counters(): Promise<Map<string, number>> {
    const last = new Map((this.store.db.prepare('SELECT name, seq FROM sqlite_sequence').all() as { name: string; seq: number }[]).map((r) => [r.name, r.seq]));
    for (const [name, { table, column }] of Object.entries(FREE_SEQUENCES)) {
      last.set(name, (this.store.db.prepare(`SELECT MAX(${quote(column)}) AS n FROM ${quote(table)}`).get() as { n: number | null }).n ?? 0);
    }
    return last;
  }

  async setCounters(last: Map<string, number>): Promise<void> {
    // An AUTOINCREMENT table's counter; its inserts already moved it to the copied maximum. Free sequences need
    // nothing here: SQLite numbers a change past the column's maximum.
    const tables = new Set(await this.tables());
    for (const [table, value] of last) {
      if (!tables.has(table)) continue;
      const changed = this.store.db.prepare('UPDATE sqlite_sequence SET seq = MAX(seq, ?) WHERE name = ?').run(value, table).changes;
      if (changed === 0 && value > 0) this.store.db.prepare('INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)').run(table, value);
    }
  }

  async end(commit: boolean): Promise<void> {
    if (this.store.db.inTransaction) this.store.db.exec(commit ? 'COMMIT' : 'ROLLBACK');
  }
}

class PostgresSide implements Side {
  private readonly types = new Map<string, Map<string, string>>();

  private constructor(
    private readonly store: PostgresStore,
    private readonly client: pg.PoolClient,
  ) {}

  get location(): string {
    return this.store.location;
  }

  /** A snapshot (REPEATABLE READ) to read, or a transaction to write. */
  static async begin(store: PostgresStore, write: boolean): Promise<PostgresSide> {
    const client = await store.checkout();
    try {
      await client.query(write ? 'BEGIN' : 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    } catch (error) {
      store.release(client, error);
      throw error;
    }
    return new PostgresSide(store, client);
  }

  async tables(): Promise<string[]> {
    const result = await this.client.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'schema_migrations'",
    );
    return result.rows.map((r) => r.table_name);
  }

  private async typesOf(table: string): Promise<Map<string, string>> {
    let found = this.types.get(table);
    if (found === undefined) {
      const result = await this.client.query<{ column_name: string; data_type: string }>(
        'SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position',
        [table],
      );
      found = new Map(result.rows.map((r) => [r.column_name, r.data_type]));
      this.types.set(table, found);
    }
    return found;
  }

  async columns(table: string): Promise<string[]> {
    return [...(await this.typesOf(table)).keys()];
  }

  async count(table: string): Promise<number> {
    return Number((await this.client.query<{ n: string }>(`SELECT COUNT(*) AS n FROM ${quote(table)}`)).rows[0]?.n ?? 0);
  }

  async page(table: string, columns: string[], offset: number): Promise<Row[]> {
    const types = await this.typesOf(table);
    // JSONB as its text and BOOLEAN as 0/1, what SQLite keeps; BIGINT comes as a decimal string, which SQLite's INTEGER columns take as the number.
    const select = columns.map((c) => (types.get(c) === 'jsonb' ? `${quote(c)}::text` : types.get(c) === 'boolean' ? `${quote(c)}::int` : quote(c)));
    const key = await this.primaryKey(table);
    const result = await this.client.query({
      text: `SELECT ${select.join(', ')} FROM ${quote(table)} ORDER BY ${key.map(quote).join(', ')} LIMIT $1 OFFSET $2`,
      values: [PAGE, offset],
      rowMode: 'array',
    });
    return result.rows as Row[];
  }

  private async primaryKey(table: string): Promise<string[]> {
    const result = await this.client.query<{ attname: string }>(
      `SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
       WHERE i.indrelid = $1::regclass AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)`,
      [quote(table)],
    );
    if (result.rows.length === 0) throw new NanoPayError('STORE_CORRUPT', `The table ${table} of ${this.location} has no primary key, so its rows cannot be read in a stable order`);
    return result.rows.map((r) => r.attname);
  }

  async insert(table: string, columns: string[], rows: Row[]): Promise<void> {
    const values = rows.map((_, r) => `(${columns.map((__, c) => `$${r * columns.length + c + 1}`).join(', ')})`);
    if (rows.length > 0) await this.client.query(`INSERT INTO ${quote(table)} (${columns.map(quote).join(', ')}) VALUES ${values.join(', ')}`, rows.flat());
  }

  /** Each table's own id sequence (a BIGSERIAL column) with its column, from the catalog. */
  private async owned(): Promise<{ table: string; column: string; sequence: string }[]> {
    const result = await this.client.query<{ table_name: string; column_name: string; sequence: string }>(
      `SELECT table_name, column_name, pg_get_serial_sequence(quote_ident(table_name), column_name) AS sequence
       FROM information_schema.columns WHERE table_schema = current_schema() AND column_default LIKE 'nextval(%'`,
    );
    return result.rows.map((r) => ({ table: r.table_name, column: r.column_name, sequence: r.sequence }));
  }

  private async lastOf(sequence: string): Promise<number> {
    const row = (await this.client.query<{ last_value: string; is_called: boolean }>(`SELECT last_value, is_called FROM ${sequence}`)).rows[0];
    return row === undefined || !row.is_called ? 0 : Number(row.last_value);
  }

  async counters(): Promise<Map<string, number>> {
    const last = new Map<string, number>();
    for (const { table, sequence } of await this.owned()) last.set(table, await this.lastOf(sequence));
    for (const name of Object.keys(FREE_SEQUENCES)) last.set(name, await this.lastOf(quote(name)));
    return last;
  }

  async setCounters(last: Map<string, number>): Promise<void> {
    const targets = [
      ...(await this.owned()).map(({ table, column, sequence }) => ({ key: table, table, column, sequence })),
      ...Object.entries(FREE_SEQUENCES).map(([name, { table, column }]) => ({ key: name, table, column, sequence: quote(name) })),
    ];
    for (const { key, table, column, sequence } of targets) {
      const max = Number((await this.client.query<{ n: string | null }>(`SELECT MAX(${quote(column)}) AS n FROM ${quote(table)}`)).rows[0]?.n ?? 0);
      const value = Math.max(max, last.get(key) ?? 0);
      // setval(…, false) when nothing was handed out: the next number is then 1.
      await this.client.query(`SELECT setval('${sequence.replaceAll("'", "''")}', $1, $2)`, [Math.max(value, 1), value > 0]);
    }
  }

  async end(commit: boolean): Promise<void> {
    try {
      await this.client.query(commit ? 'COMMIT' : 'ROLLBACK');
      this.store.release(this.client);
    } catch (error) {
      this.store.release(this.client, error);
      throw error;
    }
  }
}

async function side(store: Store, write: boolean): Promise<Side> {
  if (store.kind === 'sqlite') return new SqliteSide(store as SqliteStore, write);
  return PostgresSide.begin(store as PostgresStore, write);
}

/** The tables of the schema, in creation order; one the schema does not know (a newer nanopay's, or someone's own) is refused. */
async function schemaTables(from: Side): Promise<string[]> {
  const found = await from.tables();
  const unknown = found.filter((t) => !TABLE_ORDER.includes(t));
  if (unknown.length > 0) {
    throw new NanoPayError('STORE_CORRUPT', `${from.location} holds tables this nanopay does not know (${unknown.join(', ')}), so it cannot be copied whole`, {
      hint: 'Drop them if they are not nanopay\'s, or move the store with the nanopay that made them.',
    });
  }
  return TABLE_ORDER.filter((t) => found.includes(t));
}

/** How many rows each table of `store` holds. */
export async function countRows(store: Store): Promise<TableCount[]> {
  const reader = await side(store, false);
  try {
    const counts: TableCount[] = [];
    for (const table of await schemaTables(reader)) counts.push({ table, rows: await reader.count(table) });
    return counts;
  } finally {
    await reader.end(false);
  }
}

/**
 * Copies every row of `source` into `destination` (both at this nanopay's schema; `destination` empty), from one
 * snapshot of `source` into one transaction of `destination`, counters moved past what was copied. The counts of
 * each table are compared before the destination commits: on a difference nothing is kept there.
 */
export async function copyStore(source: Store, destination: Store): Promise<TableCount[]> {
  const reader = await side(source, false);
  let writer: Side | undefined;
  let committed = false;
  try {
    writer = await side(destination, true);
    const tables = await schemaTables(reader);
    const counts: TableCount[] = [];
    for (const table of tables) {
      const columns = await reader.columns(table);
      const wanted = new Set(await writer.columns(table));
      const missing = columns.filter((c) => !wanted.has(c));
      if (missing.length > 0) throw new NanoPayError('STORE_CORRUPT', `The table ${table} of ${writer.location} lacks the columns ${missing.join(', ')} of ${reader.location}`);
      for (let offset = 0; ; offset += PAGE) {
        const rows = await reader.page(table, columns, offset);
        try {
          await writer.insert(table, columns, rows);
        } catch (error) {
          // A value one side keeps and the other refuses (PostgreSQL's JSONB takes no \u0000): said with the table, not as a bug.
          throw new NanoPayError('STORE_CORRUPT', `${writer.location} refused a row of table ${table} (${(error as Error).message}); nothing was kept there`, {
            hint: `Find the row in ${reader.location} and fix or remove it, then run the move again.`,
            cause: error,
          });
        }
        if (rows.length < PAGE) break;
      }
      const [read, written] = [await reader.count(table), await writer.count(table)];
      if (read !== written) {
        throw new NanoPayError('STORE_CORRUPT', `The copy of table ${table} holds ${written} rows, the store ${read}: nothing was kept in ${writer.location}`, {
          hint: 'Run it again; if it differs again, report it.',
        });
      }
      counts.push({ table, rows: read });
    }
    await writer.setCounters(await reader.counters());
    await writer.end(true);
    committed = true;
    return counts;
  } finally {
    if (writer !== undefined && !committed) await writer.end(false).catch(() => undefined);
    await reader.end(false).catch(() => undefined);
  }
}
