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
}
