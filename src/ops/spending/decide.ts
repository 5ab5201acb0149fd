import { createHash, randomBytes } from 'node:crypto';
import { NanoPayError } from '../../errors.js';
import { rawToXno } from '../../nano/index.js';
import type { ApprovalRecord, AuditRecord, Decision, SpendFields } from '../../store/spending.js';
import type { Store } from '../../store/store.js';
import type { SpendingPolicy } from '../../wallet/config.js';
import { evaluate, lookback, UNKNOWN_HOST_RULE, type CountedSpend, type JudgedAs, type SpendKind, type Verdict } from './policy.js';
import type { SpendRequest } from './request.js';
import { canonicalJson, sealHolds, sealOf } from './seal.js';
import { recordId } from './spend-log.js';

export { withSpendingLock } from './spend-log.js';
export type { SpendRequest } from './request.js';

/**
 * What judging a spend needs, wherever it is judged: in the process that holds
 * the key store opened with the password (ops), or in the unlocked session,
 * which judges every spend it signs by the scope it was granted (src/session/).
 */
export interface Judge {
  profile: string;
  /** Who the spend is judged as: the process's front end, or what an unlocked session was granted. */
  frontEnd: JudgedAs;
  policy: SpendingPolicy;
  now(): number;
  store(): Promise<Store>;
  /** The addresses of the contacts the sealed policy names (name → address). */
  contacts(): Promise<Record<string, string>>;
  /** The spends that count toward budgets from `sinceMs` (the profile's, every account, landed or in flight). */
  counted(sinceMs: number): Promise<CountedSpend[]>;
  /** The seal key, once the policy in force was checked against its seal (POLICY_TAMPERED when it fails). */
  sealKey(): Promise<Buffer>;
  /** The unlocked session's scope, when it judges: kept in its records. */
  session?: string;
}

export interface SpendDecision {
  verdict: Verdict;
  /** The approval the caller named, approved and sealed, bound to this spend: it lifts an "ask above" rule, and is used by the spend either way. */
  approval?: ApprovalRecord;
}

/** How long an approval waits to be answered and used, unless the policy says (approval-ttl). */
const DEFAULT_APPROVAL_TTL_S = 60 * 60;

/** The digest of exactly what an approval lets run: who it is judged as, kind, account, recipient, host, amount, requirement. */
function bindingOf(frontEnd: string, spend: Pick<SpendRequest, 'kind' | 'account' | 'payer' | 'to' | 'host' | 'amountRaw' | 'requirement'>): string {
  const bound = [frontEnd, spend.kind, spend.payer ?? spend.account, spend.to, spend.host ?? null, spend.amountRaw.toString(), spend.requirement ?? null];
  return createHash('sha256').update(canonicalJson(bound)).digest('hex');
}

const approvalBinding = (a: ApprovalRecord): string =>
  bindingOf(a.front_end, { kind: a.kind as SpendKind, account: a.account, to: a.recipient, ...(a.host === undefined ? {} : { host: a.host }), amountRaw: BigInt(a.amount_raw), requirement: a.requirement });

/** What an approval's seal covers: the spend it is bound to, when it expires, and who approved it how. */
const approvalSealed = (a: ApprovalRecord): unknown => ({ id: a.id, profile: a.profile, binding: approvalBinding(a), expires_at: a.expires_at, decided_at: a.decided_at, decided_by: a.decided_by });

/** An approval answered yes by a person: sealed with the key only the key store password opens, so a row changed in the store pays nothing. */
export function approve(key: Buffer, approval: ApprovalRecord, by: string, at: number): ApprovalRecord {
  const next: ApprovalRecord = { ...approval, state: 'approved', decided_at: new Date(at).toISOString(), decided_by: by };
  return { ...next, seal: sealOf(key, 'approval', approvalSealed(next)) };
}

/** An approval id: 128 random bits. */
const approvalId = (): string => `apr_${randomBytes(16).toString('base64url')}`;

function invalid(id: string, why: string): NanoPayError {
  return new NanoPayError('APPROVAL_INVALID', `The approval ${id} ${why}; nothing was signed`, { hint: 'Run the payment again without it to ask for a new approval.' });
}

/**
 * The approval named by the caller, checked whole: it must be this profile's,
 * bound to exactly this spend, unexpired, not denied or used, and (once
 * approved) sealed by a person with the key store password. Pending: it still
 * waits. Anything else refuses the spend, whatever the rules say.
 */
async function approvalFor(judge: Judge, spend: SpendRequest, key: Buffer): Promise<ApprovalRecord | 'pending'> {
  const id = spend.approvalId as string;
  const approval = await (await judge.store()).approvals.get(judge.profile, id);
  if (approval === undefined) throw invalid(id, 'is unknown to this profile');
  if (approval.state === 'denied') throw invalid(id, `was denied${approval.decided_by === undefined ? '' : ` (${approval.decided_by})`}`);
  if (approval.state === 'used') throw invalid(id, `was used already, by block ${approval.used_hash ?? '?'}: an approval pays one spend once`);
  if (Date.parse(approval.expires_at) <= judge.now()) throw invalid(id, `expired at ${approval.expires_at}`);
  if (approvalBinding(approval) !== bindingOf(judge.frontEnd, spend)) {
    throw invalid(id, `is for ${describeApproval(approval)}, not this spend (${spend.kind} of ${rawToXno(spend.amountRaw)} XNO to ${spend.host ?? spend.to}, as ${shownAs(judge.frontEnd)})`);
  }
  if (approval.state === 'pending') return 'pending';
  if (!sealHolds(key, 'approval', approvalSealed(approval), approval.seal)) {
    throw invalid(id, 'is marked approved without the seal a person\'s approval carries (it was changed in the store, not approved with the key store password)');
  }
  return approval;
}

const shownAs = (frontEnd: string): string => (frontEnd === '*' ? 'an unlocked session granted every front end' : frontEnd);

/** An approval in words: what it pays, to whom, from which account, asked by which front end. */
export function describeApproval(a: ApprovalRecord): string {
  const to = a.host === undefined ? `${a.contact === undefined ? '' : `@${a.contact} `}${a.recipient}` : `${a.host} (${a.recipient})`;
  return `a ${a.kind} of ${rawToXno(BigInt(a.amount_raw))} XNO to ${to} from ${a.account}, asked by ${shownAs(a.front_end)}`;
}

/**
 * While a spend above an ask-above rule waits for a person, smaller spends to
 * the same recipient (or host) cannot add up past that rule's amount: a spend
 * that would take what was paid there since the held one was asked above it
 * waits too.
 */
async function heldTogether(judge: Judge, spend: SpendRequest, at: number): Promise<Verdict | undefined> {
  const { policy } = judge;
  const scopes = [policy, ...Object.values(policy.recipients ?? {}), ...Object.values(policy.hosts ?? {}), ...Object.values(policy.frontEnds ?? {})];
  // Only an ask-above rule holds a spend this way: without one in the policy, nothing waits under one.
  if (!scopes.some((limits) => limits.askAbove !== undefined)) return undefined;
  const waiting = (await (await judge.store()).approvals.list(judge.profile, at)).filter(
    (a) => a.state === 'pending' && a.limit_raw !== undefined && a.rule.startsWith('ask-above') && !a.rule.startsWith('ask-above-hour') && (spend.host === undefined ? a.recipient === spend.to : a.host === spend.host),
  );
  if (waiting.length === 0) return undefined;
  const since = Math.min(...waiting.map((a) => Date.parse(a.created_at)));
  const counted = await judge.counted(since);
  for (const held of waiting) {
    const limit = BigInt(held.limit_raw as string);
    const created = Date.parse(held.created_at);
    const paid = counted.filter((c) => c.at >= created && (spend.host === undefined ? c.to === spend.to : c.host === spend.host)).reduce((total, c) => total + c.amountRaw, 0n);
    if (paid + spend.amountRaw > limit) {
      return {
        outcome: 'ask',
        rule: held.rule,
        limitRaw: limit,
        message: `${rawToXno(spend.amountRaw)} XNO to ${spend.host ?? spend.to} would bring what was paid there while ${held.id} waits to ${rawToXno(paid + spend.amountRaw)} XNO, above the ask-above amount of ${rawToXno(limit)} XNO`,
      };
    }
  }
  return undefined;
}

/**
 * Decides a spend: the one place every spend of every front end is judged
 * (the CLI, the toolset, MCP, the agent, the SDK, x402, and the unlocked
 * session for whatever it signs). It checks the policy's seal, reads the spends
 * that count, and records nothing: a dry run or a plan calls it as it is. An
 * approval the caller names must fit this very spend, whatever the rules say;
 * approved and sealed, it lifts an "ask above" rule.
 */
export async function decideSpend(judge: Judge, spend: SpendRequest): Promise<SpendDecision> {
  const key = await judge.sealKey();
  const at = judge.now();
  const { policy } = judge;
  const back = lookback(policy);
  const counted = back === 0 ? [] : await judge.counted(at - back);
  const contacts = policy.recipients !== undefined || policy.allow !== undefined || policy.deny !== undefined ? await judge.contacts() : {};
  const facts = { frontEnd: judge.frontEnd, kind: spend.kind, to: spend.to, ...(spend.host === undefined ? {} : { host: spend.host }), amountRaw: spend.amountRaw, at };
  let verdict = evaluate(policy, facts, counted, contacts);
  if (verdict.outcome === 'allow') verdict = (await heldTogether(judge, spend, at)) ?? verdict;
  if (spend.approvalId === undefined) return { verdict };
  const approval = await approvalFor(judge, spend, key);
  if (approval !== 'pending') return { verdict, approval };
  // Named while it still waits: the spend waits with it, even where the rules would let it run (it must not run twice).
  if (verdict.outcome !== 'allow') return { verdict };
  const held = await (await judge.store()).approvals.get(judge.profile, spend.approvalId);
  return { verdict: { outcome: 'ask', rule: held?.rule ?? 'approval', message: `${held?.message ?? 'The spend'}: its approval ${spend.approvalId} still waits for a person` } };
}

/** Who asked, as the records keep it: the front end judged, or (judged as every front end) what the caller said it is. */
const recordedFrontEnd = (judge: Judge, spend: SpendRequest): string => (judge.frontEnd === '*' ? (spend.caller ?? '*') : judge.frontEnd);

/** The spend as its records keep it. */
function spendFields(judge: Judge, spend: SpendRequest): SpendFields {
  return {
    front_end: recordedFrontEnd(judge, spend),
    kind: spend.kind,
    account: spend.account,
    recipient: spend.to,
    ...(spend.contact === undefined ? {} : { contact: spend.contact }),
    ...(spend.host === undefined ? {} : { host: spend.host }),
    amount_raw: spend.amountRaw.toString(),
  };
}

/** The audit record of a decision. */
function auditOf(judge: Judge, spend: SpendRequest, decision: Decision, verdict: Verdict | undefined, extra: Partial<AuditRecord> = {}): AuditRecord {
  return {
    id: recordId(),
    at: new Date(judge.now()).toISOString(),
    profile: judge.profile,
    ...spendFields(judge, spend),
    decision,
    rule: verdict?.rule ?? null,
    ...(verdict?.message === undefined ? {} : { message: verdict.message }),
    ...(judge.session === undefined ? {} : { session: judge.session }),
    ...extra,
  };
}

/** A refusal that is no rule's (a broken seal, an approval that cannot pay): recorded as denied, then thrown. */
export async function refused(judge: Judge, spend: SpendRequest, error: unknown): Promise<never> {
  if (error instanceof NanoPayError && (error.code === 'APPROVAL_INVALID' || error.code === 'POLICY_TAMPERED' || error.code === 'INVALID_REQUEST')) {
    const rule = { POLICY_TAMPERED: 'seal', APPROVAL_INVALID: 'approval', INVALID_REQUEST: 'block' }[error.code];
    await (await judge.store()).audit.add(auditOf(judge, spend, 'denied', { outcome: 'deny', rule, message: error.message }, spend.approvalId === undefined ? {} : { approval_id: spend.approvalId }));
  }
  throw error;
}

/** A refusal: recorded, then thrown (see denial). */
async function deny(judge: Judge, spend: SpendRequest, verdict: Verdict): Promise<never> {
  await (await judge.store()).audit.add(auditOf(judge, spend, 'denied', verdict));
  throw denial(verdict);
}

/**
 * POLICY_DENIED, naming the rule, what it leaves and when room comes back (in
 * `details` for programs). It never tells how to change the policy: the caller
 * may be an agent, and only a person with the key store password changes it.
 */
export function denial(verdict: Verdict): NanoPayError {
  const remaining = verdict.remainingRaw ?? 0n;
  const back = verdict.retryAtMs === undefined ? undefined : new Date(verdict.retryAtMs).toISOString();
  const left = `${rawToXno(remaining)} XNO is left under this rule`;
  const hint =
    verdict.rule === UNKNOWN_HOST_RULE
      ? 'nanopay fetch and the SDK\'s fetch say the host; with @x402/fetch, register the scheme\'s onPaymentRequired on the x402HTTPClient (docs/x402.md).'
      : verdict.rule?.startsWith('allow') === true || verdict.rule?.startsWith('deny') === true
      ? 'This recipient or host is refused by the policy whatever the amount.'
      : back !== undefined
        ? `${left}; room for this spend comes back at ${back}, as earlier spends leave the window.`
        : verdict.rule?.startsWith('per-send') === true
          ? `One spend may be at most ${rawToXno(remaining)} XNO under this rule.`
          : `${left}; this spend is larger than the whole budget.`;
  const when = back === undefined ? '' : `; room for it comes back at ${back}`;
  return new NanoPayError('POLICY_DENIED', `${verdict.message ?? 'The spending policy refuses this spend'}${when} (rule: ${verdict.rule}); nothing was signed`, {
    hint,
    details: {
      rule: verdict.rule,
      remaining: rawToXno(remaining),
      remaining_raw: remaining.toString(),
      ...(verdict.limitRaw === undefined ? {} : { limit: rawToXno(verdict.limitRaw) }),
      ...(back === undefined ? {} : { retry_at: back }),
    },
  });
}

/** The error that tells the caller its spend waits for a person, and under which id. */
function approvalRequired(approval: ApprovalRecord): NanoPayError {
  return new NanoPayError(
    'APPROVAL_REQUIRED',
    `${approval.message} (rule: ${approval.rule}): it waits for a person's approval as ${approval.id}, until ${approval.expires_at}; nothing was signed`,
    {
      hint: `A person approves it with the key store password: nanopay approvals approve ${approval.id} (or denies it); then run the same payment again with the approval id (--approval, approval_id).`,
      details: {
        approval: { id: approval.id, amount: rawToXno(BigInt(approval.amount_raw)), amount_raw: approval.amount_raw, recipient: approval.recipient, ...(approval.host === undefined ? {} : { host: approval.host }), rule: approval.rule, reason: approval.message, expires_at: approval.expires_at },
      },
    },
  );
}

/**
 * Holds a spend for approval: a pending approval bound to exactly it (the one
 * already waiting for the same spend, if there is one), recorded, and thrown
 * as APPROVAL_REQUIRED with its id and what it would pay.
 */
async function hold(judge: Judge, spend: SpendRequest, verdict: Verdict): Promise<never> {
  const store = await judge.store();
  const binding = bindingOf(judge.frontEnd, spend);
  let approval = await store.approvals.pendingFor(judge.profile, binding, judge.now());
  if (approval === undefined) {
    const now = judge.now();
    approval = {
      id: approvalId(),
      profile: judge.profile,
      state: 'pending',
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + (judge.policy.approvalTtlS ?? DEFAULT_APPROVAL_TTL_S) * 1000).toISOString(),
      ...spendFields(judge, spend),
      // Bound as judged: an approval asked through a session is used through a session granted the same.
      front_end: judge.frontEnd,
      account: spend.payer ?? spend.account,
      ...(spend.requirement === undefined ? {} : { requirement: spend.requirement }),
      rule: verdict.rule as string,
      message: verdict.message as string,
      ...(verdict.limitRaw === undefined ? {} : { limit_raw: verdict.limitRaw.toString() }),
    };
    await store.approvals.create(approval, binding);
  }
  await store.audit.add(auditOf(judge, spend, 'approval_required', verdict, { approval_id: approval.id }));
  throw approvalRequired(approval);
}

/**
 * Judges a spend before anything is signed: refused (recorded,
 * POLICY_DENIED), or above an "ask above" rule with no approval: held
 * (APPROVAL_REQUIRED, with the id of a pending approval). An approval named
 * is checked here, and used when the block is admitted.
 */
export async function screenSpend(judge: Judge, spend: SpendRequest): Promise<void> {
  const { verdict, approval } = await decideSpend(judge, spend).catch((error: unknown) => refused(judge, spend, error));
  if (verdict.outcome === 'deny') return deny(judge, spend, verdict);
  if (verdict.outcome === 'ask' && approval === undefined) return hold(judge, spend, verdict);
}

/** The person at the terminal said no to a held spend: recorded. */
export async function recordDeclined(judge: Judge, spend: SpendRequest, approval: string): Promise<void> {
  await (await judge.store()).audit.add(auditOf(judge, spend, 'declined', undefined, { approval_id: approval }));
}

/**
 * The decision that lets a signed block leave, made holding the profile's
 * spending lock with the block's hash known: judged again on what counts now,
 * recorded as in flight (so it counts at once), and its approval used (once:
 * another spend racing with the same approval finds it used). A refusal or a
 * hold here throws before the block is journaled, so it never leaves.
 */
export async function admitSpend(judge: Judge, spend: SpendRequest, hash: string): Promise<void> {
  const { verdict, approval } = await decideSpend(judge, spend).catch((error: unknown) => refused(judge, spend, error));
  if (verdict.outcome === 'deny') return deny(judge, spend, verdict);
  if (verdict.outcome === 'ask' && approval === undefined) return hold(judge, spend, verdict);
  const store = await judge.store();
  const at = new Date(judge.now()).toISOString();
  if (approval !== undefined && !(await store.approvals.change('approved', { ...approval, state: 'used', used_hash: hash }))) {
    throw invalid(approval.id, 'was used already by another spend: an approval pays one spend once');
  }
  await store.audit.add(
    auditOf(judge, spend, approval === undefined ? 'allowed' : 'approved', verdict.outcome === 'ask' ? verdict : undefined, {
      hash,
      status: 'in_flight',
      settled_at: at,
      ...(approval === undefined ? {} : { approval_id: approval.id, ...(approval.decided_by === undefined ? {} : { via: approval.decided_by }) }),
    }),
  );
}
