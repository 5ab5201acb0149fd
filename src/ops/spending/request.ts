import type { SpendKind, Verdict } from './policy.js';

/** A spend to decide: who pays whom how much, for what, and the approval the caller got for it. */
export interface SpendRequest {
  /** The account that pays. */
  account: string;
  /** The account the spend is made for when another account of its wallet signs it (a payment lane): approvals are bound to it. */
  payer?: string;
  /** The recipient's address. */
  to: string;
  /** The contact the recipient was named as. */
  contact?: string;
  /** The host an x402 payment pays. */
  host?: string;
  amountRaw: bigint;
  kind: SpendKind;
  /** For an x402 payment: the requirement it pays; an approval is bound to it. */
  requirement?: unknown;
  /** An approval given for this very spend (APPROVAL_REQUIRED named it). */
  approvalId?: string;
  /** The front end that asked an unlocked session (what it says; the session judges by what it was granted). */
  caller?: string;
}

/**
 * Where spends are judged when the keys are in an unlocked session: the
 * session itself, by the scope it was granted at unlock. `dry` records
 * nothing; `screen` records a refusal (POLICY_DENIED) or holds the spend for
 * a person (APPROVAL_REQUIRED), as screenSpend does. The session judges again
 * whatever it is asked to sign.
 */
export interface SpendAuthority {
  judge(spend: SpendRequest, mode: 'dry' | 'screen'): Promise<Verdict>;
  /** What the session's scope still lets its caller spend, and what waits for a person (status.ts's SpendingStatus). */
  status(): Promise<SpendingStatus>;
}

/** What a caller (an agent above all) may still spend, and what waits for a person: read-only, from the rules that judge its spends. */
export interface SpendingStatus {
  /** Who its spends are judged as: the process's front end, or the unlocked session's scope ("*": every front end's rules). */
  judged_as: string;
  /** False when the policy was changed behind its seal: every spend is refused until a person reseals it. */
  sealed: boolean;
  /** The profile's spends that count (landed or in flight), every account together. */
  spent: { last_hour: string; last_24_hours: string; last_30_days: string };
  /** Each amount rule that applies, with what it leaves and when room comes back (ISO). */
  rules: { rule: string; kind: string; limit: string; spent?: string; remaining?: string; room_back_at?: string }[];
  /** Recipients and hosts a spend cannot go to (deny), or must go to (allow, when not empty). */
  lists: { deny_recipients: string[]; allow_recipients: string[]; deny_hosts: string[]; allow_hosts: string[] };
  /** Spends held for a person's approval, not yet answered. */
  pending_approvals: { id: string; amount: string; recipient: string; host?: string; rule: string; expires_at: string }[];
}
