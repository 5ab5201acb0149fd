import { refundKeyMismatch, type ClaimsTable, type ClaimStatus, type RefundClaim, type RefundRecord, type RefundsTable, type SweepRun, type SweepsTable } from './refunds.js';
import type { PostgresHost } from './postgres-shop.js';

export class PostgresRefunds implements RefundsTable {
  constructor(private readonly host: PostgresHost) {}

  private async docs(text: string, values: unknown[]): Promise<RefundRecord[]> {
    return (await this.host.query<{ doc: RefundRecord }>(text, values)).rows.map((r) => r.doc);
  }

  async add(refund: RefundRecord): Promise<{ refund: RefundRecord; created: boolean }> {
    for (;;) {
      if (refund.idempotency_key !== undefined) {
        const found = await this.byKey(refund.idempotency_key);
        if (found !== undefined) {
          if (found.fingerprint !== refund.fingerprint) throw refundKeyMismatch(refund.idempotency_key);
          return { refund: found, created: false };
        }
      }
      try {
        await this.host.query(
          'INSERT INTO refunds (id, request_id, status, idempotency_key, doc) VALUES ($1, $2, $3, $4, $5::jsonb)',
          [refund.id, refund.request_id, refund.status, refund.idempotency_key ?? null, JSON.stringify(refund)],
          { retry: false },
        );
        return { refund, created: true };
      } catch (error) {
        // Another instance took the key meanwhile: its refund is the answer.
        if ((error as { code?: string }).code === '23505' && refund.idempotency_key !== undefined) continue;
        throw error;
      }
    }
  }

  async get(id: string): Promise<RefundRecord | undefined> {
    return (await this.docs('SELECT doc FROM refunds WHERE id = $1', [id]))[0];
  }

  async byKey(key: string): Promise<RefundRecord | undefined> {
    return (await this.docs('SELECT doc FROM refunds WHERE idempotency_key = $1', [key]))[0];
  }

  ofRequest(requestId: string): Promise<RefundRecord[]> {
    return this.docs('SELECT doc FROM refunds WHERE request_id = $1 ORDER BY seq', [requestId]);
  }

  pending(limit: number): Promise<RefundRecord[]> {
    return this.docs(`SELECT doc FROM refunds WHERE status = 'pending' ORDER BY seq LIMIT $1`, [limit]);
  }

  async update(refund: RefundRecord): Promise<void> {
    await this.host.query('UPDATE refunds SET status = $2, doc = $3::jsonb WHERE id = $1', [refund.id, refund.status, JSON.stringify(refund)]);
  }
}

export class PostgresSweeps implements SweepsTable {
  constructor(private readonly host: PostgresHost) {}

  async unfinished(): Promise<SweepRun | undefined> {
    return (await this.host.query<{ doc: SweepRun }>('SELECT doc FROM sweeps WHERE NOT finished ORDER BY seq LIMIT 1')).rows[0]?.doc;
  }

  async save(run: SweepRun): Promise<void> {
    await this.host.query(
      'INSERT INTO sweeps (id, finished, doc) VALUES ($1, $2, $3::jsonb) ON CONFLICT (id) DO UPDATE SET finished = excluded.finished, doc = excluded.doc',
      [run.id, run.finished_at !== undefined, JSON.stringify(run)],
    );
  }

  async recent(limit: number): Promise<SweepRun[]> {
    return (await this.host.query<{ doc: SweepRun }>('SELECT doc FROM sweeps ORDER BY seq DESC LIMIT $1', [limit])).rows.map((r) => r.doc);
  }
}

export class PostgresClaims implements ClaimsTable {
  constructor(private readonly host: PostgresHost) {}

  private async docs(text: string, values: unknown[]): Promise<RefundClaim[]> {
    return (await this.host.query<{ doc: RefundClaim }>(text, values)).rows.map((r) => r.doc);
  }

  async add(claim: RefundClaim): Promise<void> {
    await this.host.query('INSERT INTO refund_claims (id, token_hash, request_id, status, doc) VALUES ($1, $2, $3, $4, $5::jsonb)', [
      claim.id,
      claim.token_hash,
      claim.request_id,
      claim.status,
      JSON.stringify(claim),
    ]);
  }

  async get(id: string): Promise<RefundClaim | undefined> {
    return (await this.docs('SELECT doc FROM refund_claims WHERE id = $1', [id]))[0];
  }

  async byTokenHash(hash: string): Promise<RefundClaim | undefined> {
    return (await this.docs('SELECT doc FROM refund_claims WHERE token_hash = $1', [hash]))[0];
  }

  ofRequest(requestId: string): Promise<RefundClaim[]> {
    return this.docs('SELECT doc FROM refund_claims WHERE request_id = $1 ORDER BY seq', [requestId]);
  }

  async change(from: ClaimStatus, claim: RefundClaim): Promise<boolean> {
    const updated = await this.host.query('UPDATE refund_claims SET status = $1, doc = $2::jsonb WHERE id = $3 AND status = $4', [claim.status, JSON.stringify(claim), claim.id, from]);
    return updated.rowCount === 1;
  }
}
