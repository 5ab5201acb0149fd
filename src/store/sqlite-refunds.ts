import { refundKeyMismatch, type ClaimsTable, type ClaimStatus, type RefundClaim, type RefundRecord, type RefundsTable, type SweepRun, type SweepsTable } from './refunds.js';
import type { SqliteHost } from './sqlite-shop.js';

const docs = <T>(rows: unknown[]): T[] => (rows as { doc: string }[]).map((r) => JSON.parse(r.doc) as T);

export class SqliteRefunds implements RefundsTable {
  constructor(private readonly host: SqliteHost) {}

  add(refund: RefundRecord): Promise<{ refund: RefundRecord; created: boolean }> {
    const db = this.host.db;
    return this.host.run(() =>
      db
        .transaction(() => {
          if (refund.idempotency_key !== undefined) {
            const found = docs<RefundRecord>(db.prepare('SELECT doc FROM refunds WHERE idempotency_key = ?').all(refund.idempotency_key))[0];
            if (found !== undefined) {
              if (found.fingerprint !== refund.fingerprint) throw refundKeyMismatch(refund.idempotency_key);
              return { refund: found, created: false };
            }
          }
          db.prepare('INSERT INTO refunds (id, request_id, status, idempotency_key, doc) VALUES (?, ?, ?, ?, ?)').run(
            refund.id,
            refund.request_id,
            refund.status,
            refund.idempotency_key ?? null,
            JSON.stringify(refund),
          );
          return { refund, created: true };
        })
        .immediate(),
    );
  }

  get(id: string): Promise<RefundRecord | undefined> {
    return this.host.run(() => docs<RefundRecord>(this.host.db.prepare('SELECT doc FROM refunds WHERE id = ?').all(id))[0]);
  }

  byKey(key: string): Promise<RefundRecord | undefined> {
    return this.host.run(() => docs<RefundRecord>(this.host.db.prepare('SELECT doc FROM refunds WHERE idempotency_key = ?').all(key))[0]);
  }

  ofRequest(requestId: string): Promise<RefundRecord[]> {
    return this.host.run(() => docs<RefundRecord>(this.host.db.prepare('SELECT doc FROM refunds WHERE request_id = ? ORDER BY seq').all(requestId)));
  }

  pending(limit: number): Promise<RefundRecord[]> {
    return this.host.run(() => docs<RefundRecord>(this.host.db.prepare(`SELECT doc FROM refunds WHERE status = 'pending' ORDER BY seq LIMIT ?`).all(limit)));
  }

  update(refund: RefundRecord): Promise<void> {
    return this.host.run(() => void this.host.db.prepare('UPDATE refunds SET status = ?, doc = ? WHERE id = ?').run(refund.status, JSON.stringify(refund), refund.id));
  }
}

export class SqliteSweeps implements SweepsTable {
  constructor(private readonly host: SqliteHost) {}

  unfinished(): Promise<SweepRun | undefined> {
    return this.host.run(() => docs<SweepRun>(this.host.db.prepare('SELECT doc FROM sweeps WHERE finished = 0 ORDER BY seq LIMIT 1').all())[0]);
  }

  save(run: SweepRun): Promise<void> {
    return this.host.run(
      () =>
        void this.host.db
          .prepare('INSERT INTO sweeps (id, finished, doc) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET finished = excluded.finished, doc = excluded.doc')
          .run(run.id, run.finished_at === undefined ? 0 : 1, JSON.stringify(run)),
    );
  }

  recent(limit: number): Promise<SweepRun[]> {
    return this.host.run(() => docs<SweepRun>(this.host.db.prepare('SELECT doc FROM sweeps ORDER BY seq DESC LIMIT ?').all(limit)));
  }
}

export class SqliteClaims implements ClaimsTable {
  constructor(private readonly host: SqliteHost) {}

  add(claim: RefundClaim): Promise<void> {
    return this.host.run(
      () =>
        void this.host.db
          .prepare('INSERT INTO refund_claims (id, token_hash, request_id, status, doc) VALUES (?, ?, ?, ?, ?)')
          .run(claim.id, claim.token_hash, claim.request_id, claim.status, JSON.stringify(claim)),
    );
  }

  get(id: string): Promise<RefundClaim | undefined> {
    return this.host.run(() => docs<RefundClaim>(this.host.db.prepare('SELECT doc FROM refund_claims WHERE id = ?').all(id))[0]);
  }

  byTokenHash(hash: string): Promise<RefundClaim | undefined> {
    return this.host.run(() => docs<RefundClaim>(this.host.db.prepare('SELECT doc FROM refund_claims WHERE token_hash = ?').all(hash))[0]);
  }

  ofRequest(requestId: string): Promise<RefundClaim[]> {
    return this.host.run(() => docs<RefundClaim>(this.host.db.prepare('SELECT doc FROM refund_claims WHERE request_id = ? ORDER BY seq').all(requestId)));
  }

  change(from: ClaimStatus, claim: RefundClaim): Promise<boolean> {
    return this.host.run(
      () => this.host.db.prepare('UPDATE refund_claims SET status = ?, doc = ? WHERE id = ? AND status = ?').run(claim.status, JSON.stringify(claim), claim.id, from).changes === 1,
    );
  }
}
