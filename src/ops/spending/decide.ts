import { createHash, randomBytes } from 'node:crypto';
import { NanoPayError } from '../../errors.js';
import { rawToXno } from '../../nano/index.js';
import type { ApprovalRecord, AuditRecord, Decision, SpendFields } from '../../store/spending.js';
import type { OpsContext } from '../context.js';
import { evaluate, lookback, type SpendKind, type Verdict } from './policy.js';
import { countedSpends, recordId } from './spend-log.js';

export { withSpendingLock } from './spend-log.js';

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
}

export interface SpendDecision {
  verdict: Verdict;
  /** The approval that lifts the "ask above" rule: approved, unexpired, bound to this spend. */
  approval?: ApprovalRecord;
}

/** How long an approval waits to be answered and used, unless the policy says (approval-ttl). */
const DEFAULT_APPROVAL_TTL_S = 60 * 60;

/** The digest of exactly what an approval lets run: front end, kind, account, recipient, host, amount, requirement. */
function bindingOf(frontEnd: string, spend: Pick<SpendRequest, 'kind' | 'account' | 'payer' | 'to' | 'host' | 'amountRaw' | 'requirement'>): string {
  const canonical = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(canonical)
      : typeof value === 'object' && value !== null
        ? Object.fromEntries(Object.keys(value).sort().map((k) => [k, canonical((value as Record<string, unknown>)[k])]))
        : value;
  const bound = [frontEnd, spend.kind, spend.payer ?? spend.account, spend.to, spend.host ?? null, spend.amountRaw.toString(), canonical(spend.requirement ?? null)];
  return createHash('sha256').update(JSON.stringify(bound)).digest('hex');
}

/** An approval id: 128 random bits. */
const approvalId = (): string => `apr_${randomBytes(16).toString('base64url')}`;

function invalid(id: string, why: string): NanoPayError {
  return new NanoPayError('APPROVAL_INVALID', `The approval ${id} ${why}; nothing was signed`, { hint: 'Run the payment again without it to ask for a new approval.' });
}

/** The approval named by the caller, if it may pay this spend: approved, unexpired, unused, bound to exactly this spend. Pending: still waiting. */
async function approvalFor(ctx: OpsContext, spend: SpendRequest): Promise<ApprovalRecord | 'pending'> {
  const id = spend.approvalId as string;
  const approval = await (await ctx.store()).approvals.get(ctx.profile, id);
  if (approval === undefined) throw invalid(id, 'is unknown to this profile');
  if (Date.parse(approval.expires_at) <= ctx.now() && approval.state !== 'used' && approval.state !== 'denied') throw invalid(id, `expired at ${approval.expires_at}`);
  if (approval.state === 'denied') throw invalid(id, `was denied${approval.decided_by === undefined ? '' : ` (${approval.decided_by})`}`);
  if (approval.state === 'used') throw invalid(id, `was used already, by block ${approval.used_hash ?? '?'}: an approval pays one spend once`);
  if (bindingOf(approval.front_end, { ...approvalSpend(approval), requirement: approval.requirement }) !== bindingOf(ctx.frontEnd, spend)) {
    throw invalid(id, `is for ${describeApproval(approval)}, not this spend (${spend.kind} of ${rawToXno(spend.amountRaw)} XNO to ${spend.host ?? spend.to} by ${ctx.frontEnd})`);
  }
  return approval.state === 'pending' ? 'pending' : approval;
}

function approvalSpend(a: ApprovalRecord): Pick<SpendRequest, 'kind' | 'account' | 'to' | 'host' | 'amountRaw'> {
  return { kind: a.kind as SpendKind, account: a.account, to: a.recipient, ...(a.host === undefined ? {} : { host: a.host }), amountRaw: BigInt(a.amount_raw) };
}

/** An approval in words: what it pays, to whom, from which account, asked by which front end. */
export function describeApproval(a: ApprovalRecord): string {
  const to = a.host === undefined ? `${a.contact === undefined ? '' : `@${a.contact} `}${a.recipient}` : `${a.host} (${a.recipient})`;
  return `a ${a.kind} of ${rawToXno(BigInt(a.amount_raw))} XNO to ${to} from ${a.account}, asked by ${a.front_end}`;
}

/**
 * Decides a spend: the one place every spend of every front end is judged
 * (the CLI, the toolset, MCP, the agent, the SDK, x402). It reads the policy
 * in force and the spends that count (the profile's, every account, landed or
 * in flight), and records nothing: a dry run or a plan calls it as it is.
 * An "ask above" rule is lifted by a person's yes: `attended` (the terminal
 * said yes), or the approval the caller names when it fits this very spend.
 */
export async function decideSpend(ctx: OpsContext, spend: SpendRequest, options: { attended?: boolean } = {}): Promise<SpendDecision> {
  const at = ctx.now();
  const back = lookback(ctx.policy);
  const counted = back === 0 ? [] : await countedSpends(ctx, at - back);
  const contacts = ctx.policy.recipients !== undefined || ctx.policy.allow !== undefined || ctx.policy.deny !== undefined ? await ctx.contacts() : {};
  const verdict = evaluate(ctx.policy, { frontEnd: ctx.frontEnd, kind: spend.kind, to: spend.to, ...(spend.host === undefined ? {} : { host: spend.host }), amountRaw: spend.amountRaw, at }, counted, contacts);
  if (verdict.outcome !== 'ask' || options.attended === true || spend.approvalId === undefined) return { verdict };
  const approval = await approvalFor(ctx, spend);
  return approval === 'pending' ? { verdict } : { verdict, approval };
}

/** The spend as its records keep it. */
function spendFields(ctx: OpsContext, spend: SpendRequest): SpendFields {
  return {
    front_end: ctx.frontEnd,
    kind: spend.kind,
    account: spend.account,
    recipient: spend.to,
    ...(spend.contact === undefined ? {} : { contact: spend.contact }),
    ...(spend.host === undefined ? {} : { host: spend.host }),
    amount_raw: spend.amountRaw.toString(),
  };
}

/** The audit record of a decision. */
function auditOf(ctx: OpsContext, spend: SpendRequest, decision: Decision, verdict: Verdict | undefined, extra: Partial<AuditRecord> = {}): AuditRecord {
  return {
    id: recordId(),
    at: new Date(ctx.now()).toISOString(),
    profile: ctx.profile,
    ...spendFields(ctx, spend),
    decision,
    rule: verdict?.rule ?? null,
    ...(verdict?.message === undefined ? {} : { message: verdict.message }),
    ...extra,
  };
}

/** A refusal: recorded, then thrown (see denial). */
async function deny(ctx: OpsContext, spend: SpendRequest, verdict: Verdict): Promise<never> {
  await (await ctx.store()).audit.add(auditOf(ctx, spend, 'denied', verdict));
  throw denial(verdict);
}

/** POLICY_DENIED, naming the rule and what it leaves (its remainder, in `details` for programs). */
export function denial(verdict: Verdict): NanoPayError {
  const remaining = verdict.remainingRaw ?? 0n;
  return new NanoPayError('POLICY_DENIED', `${verdict.message ?? 'The spending policy refuses this spend'} (rule: ${verdict.rule}); nothing was signed`, {
    hint: `The policy is the profile's: nanopay policy show; nanopay policy set ${verdict.rule} <XNO> changes this rule.`,
    details: { rule: verdict.rule, remaining: rawToXno(remaining), remaining_raw: remaining.toString(), ...(verdict.limitRaw === undefined ? {} : { limit: rawToXno(verdict.limitRaw) }) },
  });
}

/** The error that tells the caller its spend waits for a person, and under which id. */
function approvalRequired(approval: ApprovalRecord): NanoPayError {
  return new NanoPayError(
    'APPROVAL_REQUIRED',
    `${approval.message} (rule: ${approval.rule}): it waits for a person's approval as ${approval.id}, until ${approval.expires_at}; nothing was signed`,
    {
      hint: `A person approves it with: nanopay approvals approve ${approval.id} (or denies it); then run the same payment again with the approval id (--approval, approval_id).`,
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
async function hold(ctx: OpsContext, spend: SpendRequest, verdict: Verdict): Promise<never> {
  const store = await ctx.store();
  const binding = bindingOf(ctx.frontEnd, spend);
  let approval = await store.approvals.pendingFor(ctx.profile, binding, ctx.now());
  if (approval === undefined) {
    const now = ctx.now();
    approval = {
      id: approvalId(),
      profile: ctx.profile,
      state: 'pending',
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + (ctx.policy.approvalTtlS ?? DEFAULT_APPROVAL_TTL_S) * 1000).toISOString(),
      ...spendFields(ctx, spend),
      account: spend.payer ?? spend.account,
      ...(spend.requirement === undefined ? {} : { requirement: spend.requirement }),
      rule: verdict.rule as string,
      message: verdict.message as string,
    };
    await store.approvals.create(approval, binding);
  }
  await store.audit.add(auditOf(ctx, spend, 'approval_required', verdict, { approval_id: approval.id }));
  throw approvalRequired(approval);
}

/**
 * Judges a spend before anything is asked or signed: refused (recorded,
 * POLICY_DENIED), or above an "ask above" rule with no yes: asked at the
 * terminal when there is one (a no is DECLINED), else held for approval
 * (APPROVAL_REQUIRED). Returns whether the person at the terminal said yes
 * (an approval is checked again, and used, when the block is admitted).
 */
export async function screenSpend(ctx: OpsContext, spend: SpendRequest): Promise<{ attended: boolean }> {
  const { verdict, approval } = await decideSpend(ctx, spend).catch(async (error: unknown) => {
    // An approval that cannot pay this spend is a refusal too: recorded as one.
    if (error instanceof NanoPayError && error.code === 'APPROVAL_INVALID') {
      await (await ctx.store()).audit.add(auditOf(ctx, spend, 'denied', { outcome: 'deny', rule: 'approval', message: error.message }, { approval_id: spend.approvalId as string }));
    }
    throw error;
  });
  if (verdict.outcome === 'deny') return deny(ctx, spend, verdict);
  if (verdict.outcome === 'allow' || approval !== undefined) return { attended: false };
  if (ctx.askPerson !== undefined) {
    if (await ctx.askPerson(`${verdict.message} (rule: ${verdict.rule}). Pay it?`)) return { attended: true };
    await (await ctx.store()).audit.add(auditOf(ctx, spend, 'declined', verdict));
    throw new NanoPayError('DECLINED', 'Declined; nothing was signed');
  }
  return hold(ctx, spend, verdict);
}

/**
 * The decision that lets a signed block leave, made holding the profile's
 * spending lock with the block's hash known: judged again on what counts now,
 * recorded as in flight (so it counts at once), and its approval used (once:
 * another spend racing with the same approval finds it used). A refusal or a
 * hold here throws before the block is journaled, so it never leaves.
 * `attended`: the person at the terminal said yes to this spend.
 */
export async function admitSpend(ctx: OpsContext, spend: SpendRequest, hash: string, attended: boolean): Promise<void> {
  const { verdict, approval } = await decideSpend(ctx, spend, { attended });
  if (verdict.outcome === 'deny') return deny(ctx, spend, verdict);
  if (verdict.outcome === 'ask' && !attended && approval === undefined) return hold(ctx, spend, verdict);
  const store = await ctx.store();
  const at = new Date(ctx.now()).toISOString();
  if (approval !== undefined && !(await store.approvals.change('approved', { ...approval, state: 'used', used_hash: hash }))) {
    throw invalid(approval.id, 'was used already by another spend: an approval pays one spend once');
  }
  const approved = verdict.outcome === 'ask' || approval !== undefined;
  await store.audit.add(auditOf(ctx, spend, approved ? 'approved' : 'allowed', verdict.outcome === 'ask' ? verdict : undefined, { hash, status: 'in_flight', settled_at: at, ...(approval === undefined ? {} : { approval_id: approval.id }) }));
}
