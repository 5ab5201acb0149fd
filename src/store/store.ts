import type { RequestRecord } from '../wallet/requests.js';
import type { AccessTable } from './access.js';
import type { RefundsTable, SweepsTable } from './refunds.js';
import type { PricesTable } from './prices.js';
import type { ShopTable } from './shop.js';
import type { ApprovalsTable, AuditTable } from './spending.js';

/**
 * The storage of what grows without bound (payment requests now; the webhook
 * outbox, x402 records and the send log later), behind one interface with two
 * implementations: SQLite in the config dir (the default) and PostgreSQL (a
 * `database-url`), which several servers can share. Each method reads or writes
 * only the rows it needs. A new table is a new versioned migration (schema.ts)
 * and a new member here; records are JSON documents beside the columns that
 * are indexed, so a new field of a record needs no migration.
 */
export interface Store {
  readonly kind: 'sqlite' | 'postgres';
  /** Where the store is, for messages: a file path, or the database URL without its password. */
  readonly location: string;
  readonly requests: RequestsTable;
  readonly outbox: Outbox;
  /** The shop server's requests and webhook events (shop.ts). */
  readonly shop: ShopTable;
  /** The spending policy's decisions (the audit trail and spend log) and approvals (spending.ts). */
  readonly audit: AuditTable;
  readonly approvals: ApprovalsTable;
  /** Refunds of requests, and sweeps of their fresh accounts (refunds.ts). */
  readonly refunds: RefundsTable;
  readonly sweeps: SweepsTable;
  /** Prices in the shop's currency and the last accepted rates (prices.ts). */
  readonly prices: PricesTable;
  /** API keys of the shop, the dashboard's operators and their sessions (access.ts). */
  readonly access: AccessTable;
  /**
   * Runs `fn` as the only holder of `name` among every process using this store (a lock file beside
   * SQLite; an advisory lock in PostgreSQL, released if the holder's connection dies).
   */
  exclusive<T>(name: string, fn: () => Promise<T>): Promise<T>;
  /**
   * Calls `onChange` for each change of a request's status made from now on by anyone using the store
   * (SQLite: this process; PostgreSQL: every instance, through LISTEN/NOTIFY, caught up after a lost
   * connection). Resolves to the function that ends the subscription.
   */
  subscribe(onChange: (change: StoreChange) => void): Promise<() => Promise<void>>;
  /** Resolves once the store answers a trivial read: a server's readiness. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** A request created (status open) or paid. `seq` grows with each change of the store. */
export interface StoreChange {
  table: 'requests';
  id: string;
  status: RequestStatus;
  seq: number;
}

export type RequestStatus = 'open' | 'paid';

export const requestStatus = (record: RequestRecord): RequestStatus => (record.paidBy === undefined ? 'open' : 'paid');

/** Whether the payment a claim records came after the request it pays expired: it is then kept as paid late (reported, not paid). */
export type LateIf = (record: RequestRecord) => boolean;

/** Payment requests (node backend). Times are ISO strings, amounts raw decimal strings. */
export interface RequestsTable {
  get(id: string): Promise<RequestRecord | undefined>;
  /** Adds a new request; CONFLICT when its id or its fresh account is already taken. */
  insert(record: RequestRecord): Promise<void>;
  /** Whether an open request (unpaid, unexpired at `now`) to `address` wants exactly `amountRaw`. */
  amountInUse(address: string, amountRaw: string, now: string): Promise<boolean>;
  /** Which of these block hashes already paid a request, and which request each paid. */
  claimedBy(hashes: string[]): Promise<Map<string, string>>;
  /** The account indexes of `wallet` that requests got as fresh addresses. */
  freshIndexes(wallet: string): Promise<number[]>;
  /** The requests that got an account of `wallet` as a fresh address, by account index. */
  fresh(wallet: string): Promise<RequestRecord[]>;
  /**
   * Marks request `id` paid by `hashes`, in one transaction: the record as paid (now or before), or
   * undefined when there is no such request or one of the hashes already paid another (one payment
   * claims one request, whoever sees it first).
   */
  claim(id: string, hashes: string[], late?: LateIf): Promise<RequestRecord | undefined>;
  /** The oldest open shared-address request to `address` of exactly `amountRaw` is paid by `hash` (unless `hash` paid one already). */
  claimOldest(address: string, amountRaw: string, hash: string, late?: LateIf): Promise<RequestRecord | undefined>;
  /** Adds records kept elsewhere (the old JSON file); ids already there are left as they are. Returns how many were added. */
  importAll(records: RequestRecord[]): Promise<number>;
}

/** An event waiting to be delivered (webhooks): claimed by one worker at a time, for a lease. */
export interface OutboxItem {
  id: number;
  topic: string;
  payload: unknown;
  /** Claims so far, this one included. */
  attempts: number;
}

export interface Outbox {
  enqueue(topic: string, payload: unknown): Promise<number>;
  /**
   * The oldest due item of `topic`, leased to the caller for `leaseMs` (no other caller gets it meanwhile,
   * whatever the process: row locks with SKIP LOCKED in PostgreSQL, a write transaction in SQLite).
   */
  claim(topic: string, leaseMs: number): Promise<OutboxItem | undefined>;
  /** Delivered: never claimed again. */
  done(id: number): Promise<void>;
  /** Not delivered: due again in `delayMs`. */
  retry(id: number, delayMs: number): Promise<void>;
  /** How many items of `topic` are not done, and the payload of the oldest queued of them. */
  backlog(topic: string): Promise<{ count: number; oldest?: unknown }>;
}
