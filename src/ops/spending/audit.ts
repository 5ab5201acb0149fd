import { NanoPayError } from '../../errors.js';
import type { AuditRecord, SpendFields } from '../../store/spending.js';
import type { Session } from '../session.js';
import { recordId } from './spend-log.js';

const PAGE = 1000;

/**
 * The profile's audit trail, oldest first, from `sinceMs`: every spending
 * decision (allowed, approved, denied, held for approval, declined) with its
 * front end, recipient or host, amount, rule and block. Read a page at a time
 * (keyset on the record's seq), so the whole trail is never held in memory.
 */
export async function* auditTrail(session: Session, options: { sinceMs?: number } = {}): AsyncGenerator<AuditRecord> {
  const store = await session.dataStore();
  let afterSeq = 0;
  for (;;) {
    const page = await store.audit.page({ profile: session.profileName, afterSeq, limit: PAGE, ...(options.sinceMs === undefined ? {} : { sinceMs: options.sinceMs }) });
    yield* page;
    if (page.length < PAGE) return;
    afterSeq = page.at(-1)?.seq as number;
  }
}

/** An act that only the key store password may do (change the policy, approve, unlock), as the trail keeps it. */
export interface PersonAct {
  /** policy, approval, or session (an unlock). */
  kind: 'policy' | 'approval' | 'session';
  decision: 'policy_changed' | 'denied';
  /** What was asked, as its command names it ("set day 1", "approve apr_…", "unlock --scope mcp"). */
  rule: string;
  message: string;
  via?: string;
  before?: Record<string, unknown>;
  after?: Record<string, unknown>;
  /** The spend an approval is for. */
  spend?: Omit<SpendFields, 'front_end' | 'kind'>;
  approval_id?: string;
}

/** Records an act of a person (or its refusal) in the profile's trail. */
export async function recordAct(session: Session, act: PersonAct): Promise<void> {
  const { spend, kind, ...rest } = act;
  await (await session.dataStore()).audit.add({
    id: recordId(),
    at: new Date().toISOString(),
    profile: session.profileName,
    front_end: session.frontEnd,
    account: '',
    recipient: '',
    amount_raw: '0',
    ...spend,
    kind,
    ...rest,
  });
}

/**
 * The key store opened with the password for an act only a person may do: a
 * refusal (no password, a wrong one) is recorded, then thrown. Never an
 * unlocked session: an agent holding one cannot do these acts.
 */
export async function withPasswordFor<T>(session: Session, act: Omit<PersonAct, 'decision' | 'message'>, open: () => Promise<T>): Promise<T> {
  try {
    return await open();
  } catch (error) {
    if (error instanceof NanoPayError) {
      await recordAct(session, { ...act, decision: 'denied', message: `${act.rule}: refused (${error.code}): only the key store password does this` });
    }
    throw error;
  }
}
