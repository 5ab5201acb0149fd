/**
 * The spending policy's records: every decision (the audit trail, which is
 * also the spend log budgets count: a spend allowed and signed counts while it
 * is in flight or paid), and the approvals a person answers. One profile's
 * rows beside another's in a shared PostgreSQL store, so every query names its
 * profile.
 */

/**
 * How a spend was decided: allowed by the rules, approved by a person (an
 * approval, or the terminal), denied, held for approval, or declined at the
 * terminal; and changes of the policy itself (kind "policy"): made with the
 * key store password, or denied.
 */
export type Decision = 'allowed' | 'approved' | 'denied' | 'approval_required' | 'declined' | 'policy_changed';

/** Where an allowed spend's block stands: signed and not known landed (a cheque until resolved), paid, dropped by the ledger, or cancelled (a cheque superseded). */
export type SpendStatus = 'in_flight' | 'paid' | 'dropped' | 'cancelled';

/** A spend as the records keep it: who asked, for what, from which account, to whom, how much. */
export interface SpendFields {
  front_end: string;
  kind: string;
  /** The account that pays. */
  account: string;
  recipient: string;
  contact?: string;
  host?: string;
  amount_raw: string;
}

export interface AuditRecord extends SpendFields {
  id: string;
  /** The record's place in the trail (set by the store): pages follow it. */
  seq?: number;
  at: string;
  profile: string;
  decision: Decision;
  /** The rule that decided (as `policy set` takes it); null when the spend was within every rule. */
  rule: string | null;
  message?: string;
  approval_id?: string;
  /** The block, once signed (allowed and approved spends). */
  hash?: string;
  status?: SpendStatus;
  /** When the status last changed. */
  settled_at?: string;
  /** The scope of the unlocked session that judged and signed it (nanopay unlock --scope). */
  session?: string;
  /** How a person's approval was given (the approval's decided_by). */
  via?: string;
  /** A change of the policy: its JSON form before and after. */
  before?: Record<string, unknown>;
  after?: Record<string, unknown>;
}

export interface AuditPage {
  profile: string;
  /** Records at or after this time (ms). */
  sinceMs?: number;
  /** Records after this seq: the next page. */
  afterSeq?: number;
  limit: number;
}

export interface AuditTable {
  add(record: AuditRecord): Promise<void>;
  /** Changes the status of the profile's spend signed as `hash`; false when no spend has that hash. */
  setStatus(profile: string, hash: string, status: SpendStatus, at: string): Promise<boolean>;
  /** The spends that count toward budgets (allowed or approved, in flight or paid) made after `sinceMs`. */
  counted(profile: string, sinceMs: number): Promise<AuditRecord[]>;
  /** The profile's spends of `account` still in flight. */
  inFlight(profile: string, account: string): Promise<AuditRecord[]>;
  /** One page of the trail, oldest first (keyset on seq: a page costs the same at any depth). */
  page(query: AuditPage): Promise<AuditRecord[]>;
}

export type ApprovalState = 'pending' | 'approved' | 'denied' | 'used';

/** A spend held until a person says yes: bound to exactly that spend, used once, expiring. */
export interface ApprovalRecord extends SpendFields {
  /** Random (128 bits), so it cannot be guessed; knowing it lets one use an approved spend, never approve one. */
  id: string;
  profile: string;
  state: ApprovalState;
  created_at: string;
  expires_at: string;
  /** For an x402 payment: the requirement it pays (scheme, network, asset, payTo, amount…). */
  requirement?: unknown;
  /** The "ask above" rule that held it, and why. */
  rule: string;
  message: string;
  /** That rule's amount (raw): while this waits, spends to the same recipient or host add up to it at most. */
  limit_raw?: string;
  decided_at?: string;
  /** Who answered, and how: "terminal, with the password", "the password", "agent chat (--chat-confirms)". */
  decided_by?: string;
  /** A person's yes, sealed with the key store's seal key (ops/spending/decide.ts): an approval without it pays nothing. */
  seal?: string;
  /** The block that used it. */
  used_hash?: string;
  /** The tool call the agent's chat holds under it, carried out when the chat's user confirms. */
  call?: { name: string; arguments: Record<string, unknown> };
}

export interface ApprovalsTable {
  /** Adds an approval; `binding` is the digest of the spend it is bound to. */
  create(record: ApprovalRecord, binding: string): Promise<void>;
  get(profile: string, id: string): Promise<ApprovalRecord | undefined>;
  /** A pending, unexpired approval of the profile bound to the same spend, not held by a chat for one call: asking again reuses it. */
  pendingFor(profile: string, binding: string, nowMs: number): Promise<ApprovalRecord | undefined>;
  /** The profile's approvals waiting (pending, or approved and not used) and unexpired at `nowMs`, oldest first; `all` adds the answered and expired ones (newest 1000). */
  list(profile: string, nowMs: number, all?: boolean): Promise<ApprovalRecord[]>;
  /** Stores `next` when the approval is still in state `from` (compare-and-set): false when another got there first. */
  change(from: ApprovalState, next: ApprovalRecord): Promise<boolean>;
  /** Binds a chat's confirmation token (its digest) to the approval. */
  setChatToken(profile: string, id: string, tokenDigest: string): Promise<void>;
  byChatToken(profile: string, tokenDigest: string): Promise<ApprovalRecord | undefined>;
}

/** The columns of an audit record besides its document. */
export function auditColumns(record: AuditRecord) {
  const { seq: _seq, hash, status, settled_at, ...doc } = record;
  return {
    id: record.id,
    profile: record.profile,
    at_ms: Date.parse(record.at),
    account: record.account,
    counts: record.decision === 'allowed' || record.decision === 'approved' ? 1 : 0,
    hash: hash ?? null,
    status: status ?? null,
    settled_at: settled_at ?? null,
    doc: JSON.stringify(doc),
  };
}

/** An audit record from its row. */
export function auditRecord(row: { seq: number | string; hash: string | null; status: string | null; settled_at: string | null; doc: string | AuditRecord }): AuditRecord {
  const doc = (typeof row.doc === 'string' ? JSON.parse(row.doc) : row.doc) as AuditRecord;
  return {
    ...doc,
    seq: Number(row.seq),
    ...(row.hash === null ? {} : { hash: row.hash }),
    ...(row.status === null ? {} : { status: row.status as SpendStatus }),
    ...(row.settled_at === null ? {} : { settled_at: row.settled_at }),
  };
}
