import { NanoPayError } from '../errors.js';
import { keyWithColumns, operatorExists, sessionWithColumns, type AccessTable, type ApiKeyRecord, type OperatorRecord, type OperatorSessionRecord } from './access.js';
import type { PostgresHost } from './postgres-shop.js';

interface KeyRow {
  doc: ApiKeyRecord;
  revoked_at: string | null;
  last_used_at: string | null;
}

const keyOf = (row: KeyRow): ApiKeyRecord => keyWithColumns(row.doc, row.revoked_at, row.last_used_at);
const KEY_COLUMNS = 'doc, revoked_at, last_used_at';
const UNIQUE_VIOLATION = '23505';

export class PostgresAccess implements AccessTable {
  constructor(private readonly host: PostgresHost) {}

  async addKey(key: ApiKeyRecord): Promise<void> {
    try {
      await this.host.query('INSERT INTO api_keys (id, name, hash, doc) VALUES ($1, $2, $3, $4::jsonb)', [key.id, key.name, key.hash, JSON.stringify(key)], { retry: false });
    } catch (error) {
      if ((error as { code?: string }).code === UNIQUE_VIOLATION) throw new NanoPayError('CONFLICT', `A key named "${key.name}" exists`, { hint: 'Choose another name, or revoke that key first.' });
      throw error;
    }
  }

  async keys(): Promise<ApiKeyRecord[]> {
    return (await this.host.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys ORDER BY doc->>'created_at', id`)).rows.map(keyOf);
  }

  async keyByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    const row = (await this.host.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE hash = $1`, [hash])).rows[0];
    return row === undefined ? undefined : keyOf(row);
  }

  async revokeKey(idOrName: string, at: string): Promise<ApiKeyRecord | undefined> {
    // One statement: the first revocation time stays, and a key is matched by id before name.
    const row = (
      await this.host.query<KeyRow>(
        `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2)
         WHERE id = (SELECT id FROM api_keys WHERE id = $1 OR (name = $1 AND revoked_at IS NULL) ORDER BY (id = $1) DESC LIMIT 1)
         RETURNING ${KEY_COLUMNS}`,
        [idOrName, at],
      )
    ).rows[0];
    return row === undefined ? undefined : keyOf(row);
  }

  async keyUsed(id: string, at: string): Promise<void> {
    await this.host.query('UPDATE api_keys SET last_used_at = $2 WHERE id = $1', [id, at]);
  }

  async putOperator(operator: OperatorRecord, replace: boolean): Promise<void> {
    await this.host.transaction(async (client) => {
      const inserted = await client.query(
        `INSERT INTO operators (name, doc) VALUES ($1, $2::jsonb)
         ON CONFLICT (name) DO ${replace ? 'UPDATE SET doc = excluded.doc' : 'NOTHING'}`,
        [operator.name, JSON.stringify(operator)],
      );
      if (inserted.rowCount === 0) throw operatorExists(operator.name);
      await client.query('DELETE FROM operator_sessions WHERE operator = $1', [operator.name]);
    });
  }

  async operator(name: string): Promise<OperatorRecord | undefined> {
    return (await this.host.query<{ doc: OperatorRecord }>('SELECT doc FROM operators WHERE name = $1', [name])).rows[0]?.doc;
  }

  async operators(): Promise<OperatorRecord[]> {
    return (await this.host.query<{ doc: OperatorRecord }>('SELECT doc FROM operators ORDER BY name')).rows.map((r) => r.doc);
  }

  async removeOperator(name: string): Promise<boolean> {
    return this.host.transaction(async (client) => {
      await client.query('DELETE FROM operator_sessions WHERE operator = $1', [name]);
      return ((await client.query('DELETE FROM operators WHERE name = $1', [name])).rowCount ?? 0) > 0;
    });
  }

  async addSession(session: OperatorSessionRecord): Promise<void> {
    await this.host.query('INSERT INTO operator_sessions (id_hash, operator, expires_at, last_seen_at, doc) VALUES ($1, $2, $3, $4, $5::jsonb)', [
      session.id_hash,
      session.operator,
      session.expires_at,
      session.last_seen_at,
      JSON.stringify(session),
    ]);
  }

  async session(idHash: string): Promise<OperatorSessionRecord | undefined> {
    const row = (await this.host.query<{ doc: OperatorSessionRecord; last_seen_at: string }>('SELECT doc, last_seen_at FROM operator_sessions WHERE id_hash = $1', [idHash])).rows[0];
    return row === undefined ? undefined : sessionWithColumns(row.doc, row.last_seen_at);
  }

  async touchSession(idHash: string, at: string): Promise<void> {
    await this.host.query('UPDATE operator_sessions SET last_seen_at = $2 WHERE id_hash = $1', [idHash, at]);
  }

  async endSession(idHash: string): Promise<void> {
    await this.host.query('DELETE FROM operator_sessions WHERE id_hash = $1', [idHash]);
  }

  async dropSessionsBefore(expiredBefore: string, idleBefore: string): Promise<number> {
    return (await this.host.query('DELETE FROM operator_sessions WHERE expires_at < $1 OR last_seen_at < $2', [expiredBefore, idleBefore])).rowCount ?? 0;
  }
}
