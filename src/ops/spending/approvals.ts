import { createHash, randomBytes } from 'node:crypto';
import { NanoPayError } from '../../errors.js';
import { rawToXno } from '../../nano/index.js';
import type { ApprovalRecord, SpendFields } from '../../store/spending.js';
import type { Session } from '../session.js';
import { withPasswordFor } from './audit.js';
import { approve, describeApproval } from './decide.js';

/** An approval as `approvals list` shows it. */
export interface ApprovalShown extends SpendFields {
  id: string;
  state: ApprovalRecord['state'] | 'expired';
  amount: string;
  rule: string;
  message: string;
  created_at: string;
  expires_at: string;
  decided_at?: string;
  decided_by?: string;
  used_hash?: string;
  /** In words: what it pays, to whom, from which account, asked by which front end. */
  description: string;
}

function shown(a: ApprovalRecord, now: number): ApprovalShown {
  const expired = (a.state === 'pending' || a.state === 'approved') && Date.parse(a.expires_at) <= now;
  return {
    id: a.id,
    state: expired ? 'expired' : a.state,
    front_end: a.front_end,
    kind: a.kind,
    account: a.account,
    recipient: a.recipient,
    ...(a.contact === undefined ? {} : { contact: a.contact }),
    ...(a.host === undefined ? {} : { host: a.host }),
    amount: rawToXno(BigInt(a.amount_raw)),
    amount_raw: a.amount_raw,
    rule: a.rule,
    message: a.message,
    created_at: a.created_at,
    expires_at: a.expires_at,
    ...(a.decided_at === undefined ? {} : { decided_at: a.decided_at }),
    ...(a.decided_by === undefined ? {} : { decided_by: a.decided_by }),
    ...(a.used_hash === undefined ? {} : { used_hash: a.used_hash }),
    description: describeApproval(a),
  };
}

/** The profile's approvals waiting for an answer or a use (`all`: every one, newest first). */
/**
 * Whether a spend held under approval `id` still waits for a person: pending and unexpired. A job that runs
 * by itself (a server's refunds, a sweep) then leaves it, rather than ask the policy again for nothing.
 */
export async function awaitsAnswer(session: Session, id: string): Promise<boolean> {
  const approval = await (await session.dataStore()).approvals.get(session.profileName, id);
  return approval !== undefined && approval.state === 'pending' && Date.parse(approval.expires_at) > Date.now();
}

export async function listApprovals(session: Session, options: { all?: boolean } = {}): Promise<ApprovalShown[]> {
  const now = Date.now();
  return (await (await session.dataStore()).approvals.list(session.profileName, now, options.all === true)).map((a) => shown(a, now));
}

/** The approval `id` of the profile, to show before it is answered. */
export async function getApproval(session: Session, id: string): Promise<ApprovalShown> {
  const found = await (await session.dataStore()).approvals.get(session.profileName, id);
  if (found === undefined) throw new NanoPayError('NOT_FOUND', `There is no approval ${id.slice(0, 80)} in profile "${session.profileName}"`, { hint: 'nanopay approvals list shows the waiting ones.' });
  return shown(found, Date.now());
}

/**
 * A person's answer to a pending approval: approved (the spend it is bound to
 * may then run once, when its caller runs it again with the id) or denied.
 * Only with the key store password (asked for here, never taken from an
 * unlocked session): its seal key seals the yes, and a yes without that seal
 * pays nothing. `by` says how the person gave it, for the audit trail.
 */
export async function answerApproval(session: Session, id: string, answer: 'approve' | 'deny', by: string): Promise<ApprovalShown> {
  const store = await session.dataStore();
  const approval = await store.approvals.get(session.profileName, id);
  if (approval === undefined) throw new NanoPayError('NOT_FOUND', `There is no approval ${id.slice(0, 80)} in profile "${session.profileName}"`);
  const { account, recipient, contact, host, amount_raw } = approval;
  const spend = { account, recipient, amount_raw, ...(contact === undefined ? {} : { contact }), ...(host === undefined ? {} : { host }) };
  const keystore = await withPasswordFor(session, { kind: 'approval', rule: `${answer} ${id}`, spend, approval_id: id }, () => session.keystore());
  return answered(session, keystore.sealKey(), approval, answer, by);
}

async function answered(session: Session, key: Buffer, approval: ApprovalRecord, answer: 'approve' | 'deny', by: string): Promise<ApprovalShown> {
  const now = Date.now();
  if (approval.state !== 'pending') throw new NanoPayError('APPROVAL_INVALID', `The approval ${approval.id} was already answered (${approval.state}${approval.decided_by === undefined ? '' : `, ${approval.decided_by}`})`);
  if (Date.parse(approval.expires_at) <= now) throw new NanoPayError('APPROVAL_INVALID', `The approval ${approval.id} expired at ${approval.expires_at}; nothing was approved`, { hint: 'Run the payment again to ask anew.' });
  const next: ApprovalRecord = answer === 'approve' ? approve(key, approval, by, now) : { ...approval, state: 'denied', decided_at: new Date(now).toISOString(), decided_by: by };
  if (!(await (await session.dataStore()).approvals.change('pending', next))) throw new NanoPayError('APPROVAL_INVALID', `The approval ${approval.id} was answered meanwhile`);
  return shown(next, now);
}

const digest = (token: string): string => createHash('sha256').update(token).digest('hex');

/**
 * The agent's chat holds a tool call under a pending approval: a token for
 * the chat's user (never shown to the model) is bound to it, and the call is
 * kept with it, so the user's confirmation carries out exactly that call,
 * once, even after a restart.
 */
export async function holdInChat(session: Session, approvalId: string, call: { name: string; arguments: Record<string, unknown> }): Promise<string> {
  const store = await session.dataStore();
  const approval = await store.approvals.get(session.profileName, approvalId);
  if (approval === undefined) throw new NanoPayError('NOT_FOUND', `There is no approval ${approvalId}`);
  const token = randomBytes(18).toString('base64url');
  await store.approvals.change(approval.state, { ...approval, call });
  await store.approvals.setChatToken(session.profileName, approvalId, digest(token));
  return token;
}

/**
 * The chat's user answers a call it held: approved (the call then runs once,
 * with the approval) or denied. Only where the agent's operator turned chat
 * confirmations on (agent --chat-confirms), and sealed with the key store the
 * agent unlocked with the password: the audit trail says the chat gave it.
 */
export async function answerInChat(session: Session, token: string, answer: 'approve' | 'deny'): Promise<{ approval: ApprovalShown; call?: { name: string; arguments: Record<string, unknown> } }> {
  const approval = await (await session.dataStore()).approvals.byChatToken(session.profileName, digest(token));
  if (approval === undefined) throw new NanoPayError('INVALID_REQUEST', 'That confirmation token is unknown, already used or expired; nothing was sent');
  if (approval.state !== 'pending' || Date.parse(approval.expires_at) <= Date.now()) {
    throw new NanoPayError('INVALID_REQUEST', 'That confirmation token is unknown, already used or expired; nothing was sent');
  }
  const key = (await session.keystore()).sealKey();
  return { approval: await answered(session, key, approval, answer, 'agent chat (--chat-confirms)'), ...(approval.call === undefined ? {} : { call: approval.call }) };
}
