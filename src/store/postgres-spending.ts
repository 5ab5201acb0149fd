import type { PostgresHost } from './postgres-shop.js';
import { auditColumns, auditRecord, type ApprovalRecord, type ApprovalState, type ApprovalsTable, type AuditPage, type AuditRecord, type AuditTable, type SpendStatus } from './spending.js';

type AuditRow = { seq: string; hash: string | null; status: string | null; settled_at: string | null; doc: AuditRecord };
const AUDIT = 'SELECT seq, hash, status, settled_at, doc FROM spend_audit';

export class PostgresAudit implements AuditTable {
  constructor(private readonly host: PostgresHost) {}

  async add(record: AuditRecord): Promise<void> {
    const c = auditColumns(record);
    await this.host.query(
      'INSERT INTO spend_audit (id, profile, at_ms, account, counts, hash, status, settled_at, doc) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb)',
      [c.id, c.profile, c.at_ms, c.account, c.counts, c.hash, c.status, c.settled_at, c.doc],
      { retry: false },
    );
  }

  async setStatus(profile: string, hash: string, status: SpendStatus, at: string): Promise<boolean> {
    const result = await this.host.query('UPDATE spend_audit SET status = $1, settled_at = $2 WHERE profile = $3 AND hash = $4 AND counts = 1', [status, at, profile, hash]);
    return (result.rowCount ?? 0) > 0;
  }

  async counted(profile: string, sinceMs: number): Promise<AuditRecord[]> {
    const result = await this.host.query<AuditRow>(`${AUDIT} WHERE profile = $1 AND counts = 1 AND at_ms > $2 AND status IN ('in_flight', 'paid')`, [profile, sinceMs]);
    return result.rows.map(auditRecord);
  }

  async inFlight(profile: string, account: string): Promise<AuditRecord[]> {
    const result = await this.host.query<AuditRow>(`${AUDIT} WHERE profile = $1 AND account = $2 AND counts = 1 AND status = 'in_flight'`, [profile, account]);
    return result.rows.map(auditRecord);
  }

  async page(query: AuditPage): Promise<AuditRecord[]> {
    const result = await this.host.query<AuditRow>(`${AUDIT} WHERE profile = $1 AND seq > $2 AND at_ms >= $3 ORDER BY seq LIMIT $4`, [
      query.profile,
      query.afterSeq ?? 0,
      query.sinceMs ?? 0,
      query.limit,
    ]);
    return result.rows.map(auditRecord);
  }
}

export class PostgresApprovals implements ApprovalsTable {
  constructor(private readonly host: PostgresHost) {}

  async create(record: ApprovalRecord, binding: string): Promise<void> {
    await this.host.query(
      'INSERT INTO approvals (id, profile, state, binding, created_ms, expires_ms, doc) VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb)',
      [record.id, record.profile, record.state, binding, Date.parse(record.created_at), Date.parse(record.expires_at), JSON.stringify(record)],
      { retry: false },
    );
  }

  async get(profile: string, id: string): Promise<ApprovalRecord | undefined> {
    return (await this.host.query<{ doc: ApprovalRecord }>('SELECT doc FROM approvals WHERE profile = $1 AND id = $2', [profile, id])).rows[0]?.doc;
  }

  async pendingFor(profile: string, binding: string, nowMs: number): Promise<ApprovalRecord | undefined> {
    const result = await this.host.query<{ doc: ApprovalRecord }>(
      `SELECT doc FROM approvals WHERE profile = $1 AND binding = $2 AND state = 'pending' AND expires_ms > $3 AND chat_token IS NULL ORDER BY created_ms LIMIT 1`,
      [profile, binding, nowMs],
    );
    return result.rows[0]?.doc;
  }

  async list(profile: string, nowMs: number, all = false): Promise<ApprovalRecord[]> {
    const result = all
      ? await this.host.query<{ doc: ApprovalRecord }>('SELECT doc FROM approvals WHERE profile = $1 ORDER BY created_ms DESC LIMIT 1000', [profile])
      : await this.host.query<{ doc: ApprovalRecord }>(`SELECT doc FROM approvals WHERE profile = $1 AND state IN ('pending', 'approved') AND expires_ms > $2 ORDER BY created_ms LIMIT 1000`, [
          profile,
          nowMs,
        ]);
    return result.rows.map((row) => row.doc);
  }

  async change(from: ApprovalState, next: ApprovalRecord): Promise<boolean> {
    const result = await this.host.query('UPDATE approvals SET state = $1, doc = $2::jsonb WHERE profile = $3 AND id = $4 AND state = $5', [
      next.state,
      JSON.stringify(next),
      next.profile,
      next.id,
      from,
    ]);
    return (result.rowCount ?? 0) > 0;
  }

  async setChatToken(profile: string, id: string, tokenDigest: string): Promise<void> {
    await this.host.query('UPDATE approvals SET chat_token = $1 WHERE profile = $2 AND id = $3', [tokenDigest, profile, id]);
  }

  async byChatToken(profile: string, tokenDigest: string): Promise<ApprovalRecord | undefined> {
    return (await this.host.query<{ doc: ApprovalRecord }>('SELECT doc FROM approvals WHERE profile = $1 AND chat_token = $2', [profile, tokenDigest])).rows[0]?.doc;
  }
}
