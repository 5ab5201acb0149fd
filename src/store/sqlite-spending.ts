import type { SqliteHost } from './sqlite-shop.js';
import { auditColumns, auditRecord, type ApprovalRecord, type ApprovalState, type ApprovalsTable, type AuditPage, type AuditRecord, type AuditTable, type SpendStatus } from './spending.js';

type AuditRow = { seq: number; hash: string | null; status: string | null; settled_at: string | null; doc: string };
const AUDIT = 'SELECT seq, hash, status, settled_at, doc FROM spend_audit';

export class SqliteAudit implements AuditTable {
  constructor(private readonly host: SqliteHost) {}

  add(record: AuditRecord): Promise<void> {
    return this.host.run(() => {
      this.host
        .prepared('INSERT INTO spend_audit (id, profile, at_ms, account, counts, hash, status, settled_at, doc) VALUES (@id, @profile, @at_ms, @account, @counts, @hash, @status, @settled_at, @doc)')
        .run(auditColumns(record));
    });
  }

  setStatus(profile: string, hash: string, status: SpendStatus, at: string): Promise<boolean> {
    return this.host.run(() => this.host.prepared('UPDATE spend_audit SET status = ?, settled_at = ? WHERE profile = ? AND hash = ? AND counts = 1').run(status, at, profile, hash).changes > 0);
  }

  counted(profile: string, sinceMs: number): Promise<AuditRecord[]> {
    return this.host.run(() =>
      (this.host.prepared(`${AUDIT} WHERE profile = ? AND counts = 1 AND at_ms > ? AND status IN ('in_flight', 'paid')`).all(profile, sinceMs) as AuditRow[]).map(auditRecord),
    );
  }

  inFlight(profile: string, account: string): Promise<AuditRecord[]> {
    return this.host.run(() =>
      (this.host.prepared(`${AUDIT} WHERE profile = ? AND account = ? AND counts = 1 AND status = 'in_flight'`).all(profile, account) as AuditRow[]).map(auditRecord),
    );
  }

  page(query: AuditPage): Promise<AuditRecord[]> {
    return this.host.run(() =>
      (this.host.prepared(`${AUDIT} WHERE profile = ? AND seq > ? AND at_ms >= ? ORDER BY seq LIMIT ?`).all(query.profile, query.afterSeq ?? 0, query.sinceMs ?? 0, query.limit) as AuditRow[]).map(
        auditRecord,
      ),
    );
  }
}

const APPROVAL = 'SELECT doc FROM approvals';
const parse = (row: { doc: string } | undefined): ApprovalRecord | undefined => (row === undefined ? undefined : (JSON.parse(row.doc) as ApprovalRecord));

export class SqliteApprovals implements ApprovalsTable {
  constructor(private readonly host: SqliteHost) {}

  create(record: ApprovalRecord, binding: string): Promise<void> {
    return this.host.run(() => {
      this.host
        .prepared('INSERT INTO approvals (id, profile, state, binding, created_ms, expires_ms, doc) VALUES (?, ?, ?, ?, ?, ?, ?)')
        .run(record.id, record.profile, record.state, binding, Date.parse(record.created_at), Date.parse(record.expires_at), JSON.stringify(record));
    });
  }

  get(profile: string, id: string): Promise<ApprovalRecord | undefined> {
    return this.host.run(() => parse(this.host.prepared(`${APPROVAL} WHERE profile = ? AND id = ?`).get(profile, id) as { doc: string } | undefined));
  }

  pendingFor(profile: string, binding: string, nowMs: number): Promise<ApprovalRecord | undefined> {
    return this.host.run(() =>
      parse(this.host.prepared(`${APPROVAL} WHERE profile = ? AND binding = ? AND state = 'pending' AND expires_ms > ? AND chat_token IS NULL ORDER BY created_ms LIMIT 1`).get(profile, binding, nowMs) as { doc: string } | undefined),
    );
  }

  list(profile: string, nowMs: number, all = false): Promise<ApprovalRecord[]> {
    return this.host.run(() => {
      const rows = all
        ? this.host.prepared(`${APPROVAL} WHERE profile = ? ORDER BY created_ms DESC LIMIT 1000`).all(profile)
        : this.host.prepared(`${APPROVAL} WHERE profile = ? AND state IN ('pending', 'approved') AND expires_ms > ? ORDER BY created_ms LIMIT 1000`).all(profile, nowMs);
      return (rows as { doc: string }[]).map((row) => JSON.parse(row.doc) as ApprovalRecord);
    });
  }

  change(from: ApprovalState, next: ApprovalRecord): Promise<boolean> {
    return this.host.run(
      () => this.host.prepared('UPDATE approvals SET state = ?, doc = ? WHERE profile = ? AND id = ? AND state = ?').run(next.state, JSON.stringify(next), next.profile, next.id, from).changes > 0,
    );
  }

  setChatToken(profile: string, id: string, tokenDigest: string): Promise<void> {
    return this.host.run(() => void this.host.prepared('UPDATE approvals SET chat_token = ? WHERE profile = ? AND id = ?').run(tokenDigest, profile, id));
  }

  byChatToken(profile: string, tokenDigest: string): Promise<ApprovalRecord | undefined> {
    return this.host.run(() => parse(this.host.prepared(`${APPROVAL} WHERE profile = ? AND chat_token = ?`).get(profile, tokenDigest) as { doc: string } | undefined));
  }
}
