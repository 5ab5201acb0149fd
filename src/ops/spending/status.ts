import { NanoPayError } from '../../errors.js';
import { rawToXno } from '../../nano/index.js';
import type { Session } from '../session.js';
import type { Judge } from './decide.js';
import type { SpendingStatus } from './request.js';
import { judgeOf } from './movement.js';
import { standing } from './policy.js';

const DAY = 24 * 60 * 60_000;

/** The status as `judge` sees it (this process's, or the unlocked session's own). */
export async function summarizeSpending(judge: Judge): Promise<SpendingStatus> {
  const now = judge.now();
  const sealed = await judge.sealKey().then(
    () => true,
    (error: unknown) => {
      if (error instanceof NanoPayError && error.code === 'POLICY_TAMPERED') return false;
      throw error;
    },
  );
  const counted = await judge.counted(now - 30 * DAY);
  const total = (ms: number): string => rawToXno(counted.filter((c) => c.at > now - ms).reduce((sum, c) => sum + c.amountRaw, 0n));
  const { policy } = judge;
  const rules = standing(policy, judge.frontEnd, counted, await judge.contacts(), now).map((r) => ({
    rule: r.rule,
    kind: r.kind,
    limit: rawToXno(r.limitRaw),
    ...(r.spentRaw === undefined ? {} : { spent: rawToXno(r.spentRaw) }),
    ...(r.remainingRaw === undefined ? {} : { remaining: rawToXno(r.remainingRaw) }),
    ...(r.roomBackAtMs === undefined ? {} : { room_back_at: new Date(r.roomBackAtMs).toISOString() }),
  }));
  const waiting = (await (await judge.store()).approvals.list(judge.profile, now)).filter((a) => a.state === 'pending');
  return {
    judged_as: judge.frontEnd,
    sealed,
    spent: { last_hour: total(60 * 60_000), last_24_hours: total(DAY), last_30_days: total(30 * DAY) },
    rules,
    lists: {
      deny_recipients: policy.deny?.recipients ?? [],
      allow_recipients: policy.allow?.recipients ?? [],
      deny_hosts: policy.deny?.hosts ?? [],
      allow_hosts: policy.allow?.hosts ?? [],
    },
    pending_approvals: waiting.map((a) => ({ id: a.id, amount: rawToXno(BigInt(a.amount_raw)), recipient: a.recipient, ...(a.host === undefined ? {} : { host: a.host }), rule: a.rule, expires_at: a.expires_at })),
  };
}

/** What this session's caller may still spend: judged by the unlocked session when the keys are there (its scope), else here. */
export async function spendingStatus(session: Session): Promise<SpendingStatus> {
  const ctx = await session.context();
  const authority = await ctx.authority();
  return authority === undefined ? summarizeSpending(judgeOf(ctx)) : authority.status();
}
