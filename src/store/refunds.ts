import { NanoPayError } from '../errors.js';

/**
 * Refunds of payment requests and sweeps of fresh accounts (issue 33). A refund
 * is recorded, with its own id, before anything is signed: its block is sent
 * through the one money path under that id, so a crash at any moment ends in
 * exactly one refund block (the journal and the send log keep the rest). A
 * sweep keeps its run, one line per account, so a crash never sweeps an
 * account twice nor forgets one.
 */

/**
 * `pending`: recorded, its block not known to have landed (an API order waiting for a signer, or a run
 * that stopped); `sent`: its block landed; `failed`: refused before anything was signed (limits, funds, policy).
 */
export type RefundStatus = 'pending' | 'sent' | 'failed';

/** One refund, as the store keeps it (snake_case: the shop's API, its events and its exports use the same names). */
export interface RefundRecord {
  id: string;
  request_id: string;
  status: RefundStatus;
  amount: string;
  amount_raw: string;
  /** Where it goes: a payer of the request (or, from the CLI, any address the merchant named). */
  to: string;
  /** What the request had received when the refund was asked for (raw): its refunds never add up to more. */
  received_raw: string;
  /** The account the paying blocks went to: the refund is paid from there when it holds enough. */
  paid_to?: string;
  /** The account that signs it (and the wallet's account it is), recorded before signing. */
  from?: string;
  from_account?: { wallet: string; index: number };
  /** The refund's send block, once it landed. */
  block?: string;
  created_at: string;
  refunded_at?: string;
  /** Who asked: `nanopay refund`, the shop's API or dashboard (an order a signer carries out), or a customer's claim (the address is theirs). */
  source: 'cli' | 'api' | 'claim';
  idempotency_key?: string;
  /** Of the request id, amount and destination: the same key with other ones is refused. */
  fingerprint?: string;
  /** Why a pending order has not gone yet, or why it failed. */
  error?: { code: string; message: string };
  /** Runs that failed so far (an API order is retried: refundRetry), and when the next may run. */
  attempts?: number;
  next_attempt_at?: string;
  /** The spending policy held it for a person: the approval that, once given, lets it go. */
  approval_id?: string;
}

export interface RefundsTable {
  /**
   * Adds a refund. With an idempotency key already used: the refund made with it when the fingerprint is
   * the same (created false), IDEMPOTENCY_MISMATCH when it differs.
   */
  add(refund: RefundRecord): Promise<{ refund: RefundRecord; created: boolean }>;
  get(id: string): Promise<RefundRecord | undefined>;
  byKey(key: string): Promise<RefundRecord | undefined>;
  /** The refunds of a request, oldest first. */
  ofRequest(requestId: string): Promise<RefundRecord[]>;
  /** Pending refunds, oldest first. */
  pending(limit: number): Promise<RefundRecord[]>;
  /** Stores the refund's new state (same id). */
  update(refund: RefundRecord): Promise<void>;
}

/**
 * Where one account of a sweep stands: `planned` (found), `sending` (amount recorded, its block under way),
 * `held` (the spending policy holds it for a person: sent with its approval by a later run), then one of the
 * ends; `left`: its request is not settled, so its money stays (`reason` says why).
 */
export type SweepAccountStatus = 'planned' | 'sending' | 'held' | 'swept' | 'below_min' | 'empty' | 'failed' | 'left';

export interface SweepAccount {
  address: string;
  wallet: string;
  index: number;
  request_id: string;
  status: SweepAccountStatus;
  /** Received on it by this sweep (raw). */
  received_raw?: string;
  /** What is (or was) moved, recorded before signing (raw). */
  amount_raw?: string;
  block?: string;
  error?: { code: string; message: string };
  /** Left: why its request is not settled. */
  reason?: string;
  /** Held: the approval that lets it go once a person gives it. */
  approval_id?: string;
}

export interface SweepRun {
  id: string;
  to: string;
  min_raw: string;
  started_at: string;
  finished_at?: string;
  accounts: SweepAccount[];
}

export interface SweepsTable {
  /** The run that has not finished (a sweep stopped by a crash), if any. */
  unfinished(): Promise<SweepRun | undefined>;
  /** Stores the run as it is now (added or replaced). */
  save(run: SweepRun): Promise<void>;
  /** The last `limit` runs, newest first. */
  recent(limit: number): Promise<SweepRun[]>;
}

/** `open` until the customer names an address (then `claimed`, its refund recorded) or the shop cancels it. */
export type ClaimStatus = 'open' | 'claimed' | 'cancelled';

/**
 * A refund the customer claims with their own address (issue 44): the link's token is a bearer secret, kept
 * hashed; the claim reserves its amount while it is open and unexpired.
 */
export interface RefundClaim {
  id: string;
  request_id: string;
  status: ClaimStatus;
  amount: string;
  amount_raw: string;
  created_at: string;
  expires_at: string;
  /** SHA-256 of the link's token, hex. */
  token_hash: string;
  claimed_at?: string;
  /** The address the customer named, and the refund recorded for it. */
  to?: string;
  refund_id?: string;
  cancelled_at?: string;
}

export interface ClaimsTable {
  add(claim: RefundClaim): Promise<void>;
  get(id: string): Promise<RefundClaim | undefined>;
  byTokenHash(hash: string): Promise<RefundClaim | undefined>;
  /** The claims of a request, oldest first. */
  ofRequest(requestId: string): Promise<RefundClaim[]>;
  /** Stores the claim as it now is when its status is still `from`: false when another process changed it first. */
  change(from: ClaimStatus, claim: RefundClaim): Promise<boolean>;
}

/** A refund key reused for another refund: refused, nothing is recorded. */
export function refundKeyMismatch(key: string): NanoPayError {
  return new NanoPayError('IDEMPOTENCY_MISMATCH', `The key "${key.slice(0, 80)}" was used for another refund (another request, amount or destination); nothing was refunded`, {
    hint: 'Use a new key for another refund; repeat the same request, amount and destination to get the first result.',
  });
}
