import { NanoPayError } from '../errors.js';
import { keyWithColumns, operatorExists, sessionWithColumns, type AccessTable, type ApiKeyRecord, type OperatorRecord, type OperatorSessionRecord } from './access.js';
import type { SqliteHost } from './sqlite-shop.js';

interface KeyRow {
  doc: string;
  revoked_at: string | null;
  last_used_at: string | null;
}

const keyOf = (row: KeyRow): ApiKeyRecord => keyWithColumns(JSON.parse(row.doc) as ApiKeyRecord, row.revoked_at, row.last_used_at);
const KEY_COLUMNS = 'doc, revoked_at, last_used_at';

const taken = (error: unknown): boolean => (error as { code?: string }).code?.startsWith('SQLITE_CONSTRAINT') === true;

export class SqliteAccess implements AccessTable {
  constructor(private readonly host: SqliteHost) {}

  addKey(key: ApiKeyRecord): Promise<void> {
    return this.host.run(() => {
      try {
        this.host.prepared('INSERT INTO api_keys (id, name, hash, doc) VALUES (?, ?, ?, ?)').run(key.id, key.name, key.hash, JSON.stringify(key));
      } catch (error) {
        if (taken(error)) throw new NanoPayError('CONFLICT', `A key named "${key.name}" exists`, { hint: 'Choose another name, or revoke that key first.' });
        throw error;
      }
    });
  }

  keys(): Promise<ApiKeyRecord[]> {
    return this.host.run(() => (this.host.prepared(`SELECT ${KEY_COLUMNS} FROM api_keys ORDER BY rowid`).all() as KeyRow[]).map(keyOf));
  }

  keyByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    return this.host.run(() => {
      const row = this.host.prepared(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE hash = ?`).get(hash) as KeyRow | undefined;
      return row === undefined ? undefined : keyOf(row);
    });
  }

  revokeKey(idOrName: string, at: string): Promise<ApiKeyRecord | undefined> {
    const db = this.host.db;
    return this.host.run(() =>
      db
        .transaction(() => {
          const row = (db.prepare(`SELECT id, ${KEY_COLUMNS} FROM api_keys WHERE id = ?`).get(idOrName) ??
            db.prepare(`SELECT id, ${KEY_COLUMNS} FROM api_keys WHERE name = ? AND revoked_at IS NULL`).get(idOrName)) as (KeyRow & { id: string }) | undefined;
          if (row === undefined) return undefined;
          if (row.revoked_at !== null) return keyOf(row);
          db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ?').run(at, row.id);
          return keyOf({ ...row, revoked_at: at });
        })
        .immediate(),
    );
  }

  keyUsed(id: string, at: string): Promise<void> {
    return this.host.run(() => void this.host.prepared('UPDATE api_keys SET last_used_at = ? WHERE id = ?').run(at, id));
  }

  putOperator(operator: OperatorRecord, replace: boolean): Promise<void> {
    const db = this.host.db;
    return this.host.run(() =>
      db
        .transaction(() => {
          const exists = db.prepare('SELECT 1 FROM operators WHERE name = ?').get(operator.name) !== undefined;
          if (exists && !replace) throw operatorExists(operator.name);
          db.prepare('INSERT INTO operators (name, doc) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET doc = excluded.doc').run(operator.name, JSON.stringify(operator));
          db.prepare('DELETE FROM operator_sessions WHERE operator = ?').run(operator.name);
        })
        .immediate(),
    );
  }

  operator(name: string): Promise<OperatorRecord | undefined> {
    return this.host.run(() => {
      const row = this.host.prepared('SELECT doc FROM operators WHERE name = ?').get(name) as { doc: string } | undefined;
      return row === undefined ? undefined : (JSON.parse(row.doc) as OperatorRecord);
    });
  }

  operators(): Promise<OperatorRecord[]> {
    return this.host.run(() => (this.host.prepared('SELECT doc FROM operators ORDER BY name').all() as { doc: string }[]).map((r) => JSON.parse(r.doc) as OperatorRecord));
  }

  removeOperator(name: string): Promise<boolean> {
    const db = this.host.db;
    return this.host.run(() =>
      db
        .transaction(() => {
          db.prepare('DELETE FROM operator_sessions WHERE operator = ?').run(name);
          return db.prepare('DELETE FROM operators WHERE name = ?').run(name).changes > 0;
        })
        .immediate(),
    );
  }

  addSession(session: OperatorSessionRecord): Promise<void> {
    return this.host.run(
      () =>
        void this.host
          .prepared('INSERT INTO operator_sessions (id_hash, operator, expires_at, last_seen_at, doc) VALUES (?, ?, ?, ?, ?)')
          .run(session.id_hash, session.operator, session.expires_at, session.last_seen_at, JSON.stringify(session)),
    );
  }

  session(idHash: string): Promise<OperatorSessionRecord | undefined> {
    return this.host.run(() => {
      const row = this.host.prepared('SELECT doc, last_seen_at FROM operator_sessions WHERE id_hash = ?').get(idHash) as { doc: string; last_seen_at: string } | undefined;
      return row === undefined ? undefined : sessionWithColumns(JSON.parse(row.doc) as OperatorSessionRecord, row.last_seen_at);
    });
  }

  touchSession(idHash: string, at: string): Promise<void> {
    return this.host.run(() => void this.host.prepared('UPDATE operator_sessions SET last_seen_at = ? WHERE id_hash = ?').run(at, idHash));
  }

  endSession(idHash: string): Promise<void> {
    return this.host.run(() => void this.host.prepared('DELETE FROM operator_sessions WHERE id_hash = ?').run(idHash));
  }

  dropSessionsBefore(expiredBefore: string, idleBefore: string): Promise<number> {
    return this.host.run(() => this.host.prepared('DELETE FROM operator_sessions WHERE expires_at < ? OR last_seen_at < ?').run(expiredBefore, idleBefore).changes);
  }
}
