import type { RequestRecord } from '../wallet/requests.js';
import { NanoPayError } from '../errors.js';
import { requestStatus } from './store.js';

/**
 * The store's schema, as versioned migrations: each runs once, in order, in a
 * transaction that also records its version in schema_migrations. Never edit
 * one that shipped; add the next. Records are JSON documents (`doc`) beside the
 * columns that are queried, so a new field of a record needs no migration.
 */
export interface Migration {
  version: number;
  sqlite: string;
  postgres: string;
}

export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    sqlite: `
      CREATE TABLE requests (
        id TEXT PRIMARY KEY,
        status TEXT NOT NULL,
        order_id TEXT,
        address TEXT NOT NULL,
        amount_raw TEXT NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT,
        fresh_wallet TEXT,
        fresh_index INTEGER,
        changed_seq INTEGER NOT NULL,
        doc TEXT NOT NULL
      );
      CREATE INDEX requests_status ON requests (status);
      CREATE INDEX requests_order ON requests (order_id) WHERE order_id IS NOT NULL;
      CREATE INDEX requests_address_amount ON requests (address, amount_raw);
      CREATE INDEX requests_created ON requests (created_at);
      CREATE INDEX requests_changed ON requests (changed_seq);
      CREATE UNIQUE INDEX requests_fresh ON requests (fresh_wallet, fresh_index) WHERE fresh_wallet IS NOT NULL;
      CREATE TABLE request_payments (
        hash TEXT PRIMARY KEY,
        request_id TEXT NOT NULL REFERENCES requests (id)
      );
      CREATE TABLE outbox (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        topic TEXT NOT NULL,
        payload TEXT NOT NULL,
        due_ms INTEGER NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        done INTEGER NOT NULL DEFAULT 0
      );
      CREATE INDEX outbox_due ON outbox (topic, due_ms) WHERE done = 0;
    `,
    postgres: `
      CREATE SEQUENCE request_changes;
      CREATE TABLE requests (
        id TEXT PRIMARY KEY,
        status TEXT NOT NULL,
        order_id TEXT,
        address TEXT NOT NULL,
        amount_raw TEXT NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT,
        fresh_wallet TEXT,
        fresh_index INTEGER,
        changed_seq BIGINT NOT NULL,
        doc JSONB NOT NULL
      );
      CREATE INDEX requests_status ON requests (status);
      CREATE INDEX requests_order ON requests (order_id) WHERE order_id IS NOT NULL;
      CREATE INDEX requests_address_amount ON requests (address, amount_raw);
      CREATE INDEX requests_created ON requests (created_at);
      CREATE INDEX requests_changed ON requests (changed_seq);
      CREATE UNIQUE INDEX requests_fresh ON requests (fresh_wallet, fresh_index) WHERE fresh_wallet IS NOT NULL;
      CREATE TABLE request_payments (
        hash TEXT PRIMARY KEY,
        request_id TEXT NOT NULL REFERENCES requests (id)
      );
      CREATE TABLE outbox (
        id BIGSERIAL PRIMARY KEY,
        topic TEXT NOT NULL,
        payload JSONB NOT NULL,
        due_ms BIGINT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        done BOOLEAN NOT NULL DEFAULT false
      );
      CREATE INDEX outbox_due ON outbox (topic, due_ms) WHERE NOT done;
    `,
  },
  {
    version: 2,
    // The shop server (checkout serve): its requests and their webhook events (shop.ts).
    sqlite: `
      CREATE TABLE shop_requests (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        status TEXT NOT NULL,
        order_id TEXT,
        idempotency_key TEXT UNIQUE,
        fingerprint TEXT,
        doc TEXT NOT NULL
      );
      CREATE INDEX shop_requests_status ON shop_requests (status, seq);
      CREATE INDEX shop_requests_order ON shop_requests (order_id, seq) WHERE order_id IS NOT NULL;
      CREATE TABLE webhook_events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        request_id TEXT NOT NULL,
        request_seq INTEGER NOT NULL,
        pending INTEGER NOT NULL,
        doc TEXT NOT NULL,
        UNIQUE (request_id, request_seq)
      );
    `,
    postgres: `
      CREATE TABLE shop_requests (
        seq BIGSERIAL PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        status TEXT NOT NULL,
        order_id TEXT,
        idempotency_key TEXT UNIQUE,
        fingerprint TEXT,
        doc JSONB NOT NULL
      );
      CREATE INDEX shop_requests_status ON shop_requests (status, seq);
      CREATE INDEX shop_requests_order ON shop_requests (order_id, seq) WHERE order_id IS NOT NULL;
      CREATE TABLE webhook_events (
        seq BIGSERIAL PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        request_id TEXT NOT NULL,
        request_seq INTEGER NOT NULL,
        pending BOOLEAN NOT NULL,
        doc JSONB NOT NULL,
        UNIQUE (request_id, request_seq)
      );
    `,
  },
  {
    version: 3,
    // Expired shop requests are still read for a late payment (by their expiry); listeners (listen --forward-to) are
    // webhook destinations of their own, with a lease, and their own delivery state per event.
    sqlite: `
      ALTER TABLE shop_requests ADD COLUMN expires_at TEXT;
      UPDATE shop_requests SET expires_at = json_extract(doc, '$.expires_at');
      CREATE INDEX shop_requests_expired ON shop_requests (expires_at) WHERE status = 'expired';
      CREATE TABLE webhook_destinations (
        id TEXT PRIMARY KEY,
        url TEXT NOT NULL,
        expires_ms INTEGER NOT NULL
      );
      CREATE TABLE webhook_deliveries (
        destination TEXT NOT NULL,
        event_id TEXT NOT NULL,
        request_id TEXT NOT NULL,
        request_seq INTEGER NOT NULL,
        pending INTEGER NOT NULL,
        doc TEXT NOT NULL,
        PRIMARY KEY (destination, event_id)
      );
      CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (destination, request_id, request_seq) WHERE pending = 1;
    `,
    postgres: `
      ALTER TABLE shop_requests ADD COLUMN expires_at TEXT;
      UPDATE shop_requests SET expires_at = doc->>'expires_at';
      CREATE INDEX shop_requests_expired ON shop_requests (expires_at) WHERE status = 'expired';
      CREATE TABLE webhook_destinations (
        id TEXT PRIMARY KEY,
        url TEXT NOT NULL,
        expires_ms BIGINT NOT NULL
      );
      CREATE TABLE webhook_deliveries (
        destination TEXT NOT NULL,
        event_id TEXT NOT NULL,
        request_id TEXT NOT NULL,
        request_seq INTEGER NOT NULL,
        pending BOOLEAN NOT NULL,
        doc JSONB NOT NULL,
        PRIMARY KEY (destination, event_id)
      );
      CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (destination, request_id, request_seq) WHERE pending;
    `,
  },
  {
    version: 4,
    // The spending policy: every decision (the audit trail and the spend log budgets count), and approvals (spending.ts).
    sqlite: `
      CREATE TABLE spend_audit (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        profile TEXT NOT NULL,
        at_ms INTEGER NOT NULL,
        account TEXT NOT NULL,
        counts INTEGER NOT NULL,
        hash TEXT,
        status TEXT,
        settled_at TEXT,
        doc TEXT NOT NULL
      );
      CREATE INDEX spend_audit_counted ON spend_audit (profile, at_ms) WHERE counts = 1;
      CREATE INDEX spend_audit_trail ON spend_audit (profile, seq);
      CREATE INDEX spend_audit_time ON spend_audit (profile, at_ms);
      CREATE INDEX spend_audit_hash ON spend_audit (profile, hash) WHERE hash IS NOT NULL;
      CREATE TABLE approvals (
        id TEXT PRIMARY KEY,
        profile TEXT NOT NULL,
        state TEXT NOT NULL,
        binding TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        expires_ms INTEGER NOT NULL,
        chat_token TEXT UNIQUE,
        doc TEXT NOT NULL
      );
      CREATE INDEX approvals_waiting ON approvals (profile, state, created_ms);
      CREATE INDEX approvals_binding ON approvals (profile, binding);
    `,
    postgres: `
      CREATE TABLE spend_audit (
        seq BIGSERIAL PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        profile TEXT NOT NULL,
        at_ms BIGINT NOT NULL,
        account TEXT NOT NULL,
        counts INTEGER NOT NULL,
        hash TEXT,
        status TEXT,
        settled_at TEXT,
        doc JSONB NOT NULL
      );
      CREATE INDEX spend_audit_counted ON spend_audit (profile, at_ms) WHERE counts = 1;
      CREATE INDEX spend_audit_trail ON spend_audit (profile, seq);
      CREATE INDEX spend_audit_time ON spend_audit (profile, at_ms);
      CREATE INDEX spend_audit_hash ON spend_audit (profile, hash) WHERE hash IS NOT NULL;
      CREATE TABLE approvals (
        id TEXT PRIMARY KEY,
        profile TEXT NOT NULL,
        state TEXT NOT NULL,
        binding TEXT NOT NULL,
        created_ms BIGINT NOT NULL,
        expires_ms BIGINT NOT NULL,
        chat_token TEXT UNIQUE,
        doc JSONB NOT NULL
      );
      CREATE INDEX approvals_waiting ON approvals (profile, state, created_ms);
      CREATE INDEX approvals_binding ON approvals (profile, binding);
    `,
  },
  {
    version: 5,
    // Refunds of requests (refunds.ts: recorded before signing, one idempotency key per refund) and sweep runs of fresh accounts.
    sqlite: `
      CREATE TABLE refunds (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        request_id TEXT NOT NULL,
        status TEXT NOT NULL,
        idempotency_key TEXT UNIQUE,
        doc TEXT NOT NULL
      );
      CREATE INDEX refunds_request ON refunds (request_id, seq);
      CREATE INDEX refunds_pending ON refunds (seq) WHERE status = 'pending';
      CREATE TABLE sweeps (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        finished INTEGER NOT NULL,
        doc TEXT NOT NULL
      );
      CREATE INDEX sweeps_unfinished ON sweeps (seq) WHERE finished = 0;
    `,
    postgres: `
      CREATE TABLE refunds (
        seq BIGSERIAL PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        request_id TEXT NOT NULL,
        status TEXT NOT NULL,
        idempotency_key TEXT UNIQUE,
        doc JSONB NOT NULL
      );
      CREATE INDEX refunds_request ON refunds (request_id, seq);
      CREATE INDEX refunds_pending ON refunds (seq) WHERE status = 'pending';
      CREATE TABLE sweeps (
        seq BIGSERIAL PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        finished BOOLEAN NOT NULL,
        doc JSONB NOT NULL
      );
      CREATE INDEX sweeps_unfinished ON sweeps (seq) WHERE NOT finished;
    `,
  },
  {
    version: 6,
    // Prices in the shop's currency (prices.ts): the price each fiat-priced request was made at, and the last rate
    // accepted per currency (the next is checked against it).
    sqlite: `
      CREATE TABLE request_prices (
        id TEXT PRIMARY KEY,
        doc TEXT NOT NULL
      );
      CREATE TABLE accepted_rates (
        currency TEXT PRIMARY KEY,
        rate_time TEXT NOT NULL,
        doc TEXT NOT NULL
      );
    `,
    postgres: `
      CREATE TABLE request_prices (
        id TEXT PRIMARY KEY,
        doc JSONB NOT NULL
      );
      CREATE TABLE accepted_rates (
        currency TEXT PRIMARY KEY,
        rate_time TEXT NOT NULL,
        doc JSONB NOT NULL
      );
    `,
  },
  {
    version: 7,
    // A payment looks for its account's spends in flight (resolveOrphans, every payment): without this index the
    // query read every counted spend of the profile, so each payment cost more than the last.
    sqlite: `CREATE INDEX spend_audit_in_flight ON spend_audit (profile, account) WHERE counts = 1 AND status = 'in_flight';`,
    postgres: `CREATE INDEX spend_audit_in_flight ON spend_audit (profile, account) WHERE counts = 1 AND status = 'in_flight';`,
  },
  {
    version: 8,
    // The rates accepted of the recent past (prices.ts), not just the last: a new rate is checked against each, so a
    // source sliding a little at each step cannot move a price beyond rate-max-move in all.
    sqlite: `
      CREATE TABLE accepted_rate_history (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        currency TEXT NOT NULL,
        accepted_at TEXT NOT NULL,
        doc TEXT NOT NULL
      );
      CREATE INDEX accepted_rate_history_by_time ON accepted_rate_history (currency, accepted_at);
    `,
    postgres: `
      CREATE TABLE accepted_rate_history (
        seq BIGSERIAL PRIMARY KEY,
        currency TEXT NOT NULL,
        accepted_at TEXT NOT NULL,
        doc JSONB NOT NULL
      );
      CREATE INDEX accepted_rate_history_by_time ON accepted_rate_history (currency, accepted_at);
    `,
  },
  {
    version: 9,
    // Who may use the shop (access.ts): API keys with a role (kept as SHA-256 hashes), the dashboard's operators (scrypt
    // hashes) and their sessions (ids kept hashed). last_used_at and last_seen_at are columns, so a touch never rewrites a doc.
    sqlite: `
      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        revoked_at TEXT,
        last_used_at TEXT,
        doc TEXT NOT NULL
      );
      CREATE UNIQUE INDEX api_keys_live_name ON api_keys (name) WHERE revoked_at IS NULL;
      CREATE TABLE operators (
        name TEXT PRIMARY KEY,
        doc TEXT NOT NULL
      );
      CREATE TABLE operator_sessions (
        id_hash TEXT PRIMARY KEY,
        operator TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        last_seen_at TEXT NOT NULL,
        doc TEXT NOT NULL
      );
      CREATE INDEX operator_sessions_operator ON operator_sessions (operator);
    `,
    postgres: `
      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        revoked_at TEXT,
        last_used_at TEXT,
        doc JSONB NOT NULL
      );
      CREATE UNIQUE INDEX api_keys_live_name ON api_keys (name) WHERE revoked_at IS NULL;
      CREATE TABLE operators (
        name TEXT PRIMARY KEY,
        doc JSONB NOT NULL
      );
      CREATE TABLE operator_sessions (
        id_hash TEXT PRIMARY KEY,
        operator TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        last_seen_at TEXT NOT NULL,
        doc JSONB NOT NULL
      );
      CREATE INDEX operator_sessions_operator ON operator_sessions (operator);
    `,
  },
];

/** The columns a request's record is queried by, taken from its document (which keeps every field). */
export function requestColumns(record: RequestRecord) {
  const orderId = (record as { orderId?: unknown }).orderId;
  return {
    id: record.id,
    status: requestStatus(record),
    order_id: typeof orderId === 'string' ? orderId : null,
    address: record.address,
    amount_raw: record.amountRaw,
    created_at: record.createdAt,
    expires_at: record.expiresAt ?? null,
    fresh_wallet: record.fresh?.wallet ?? null,
    fresh_index: record.fresh?.index ?? null,
    doc: JSON.stringify(record),
  };
}

/** The newest schema this nanopay knows. */
export const SCHEMA_VERSION = Math.max(...MIGRATIONS.map((m) => m.version));

/** A store migrated by a newer nanopay: left alone. */
export function tooNew(location: string, version: number): NanoPayError {
  return new NanoPayError('STORE_TOO_NEW', `The store ${location} has schema version ${version}, newer than this nanopay knows (${SCHEMA_VERSION})`, {
    hint: 'Upgrade nanopay: an older version must not write to a newer schema.',
  });
}
