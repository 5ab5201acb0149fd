import { NanoPayError } from '../../errors.js';
import { rawToXno } from '../../nano/index.js';
import type { Limits } from '../../wallet/config.js';
import { profileKey } from '../../wallet/send-log.js';
import type { OpsContext } from '../context.js';

const DAY_MS = 24 * 60 * 60 * 1000;

type SpendingContext = Pick<OpsContext, 'sendLog' | 'journal' | 'lock' | 'profile' | 'now'>;

function exceeded(message: string): NanoPayError {
  return new NanoPayError('LIMIT_EXCEEDED', message, {
    hint: 'Limits are set per profile: nanopay config set limit-per-send|limit-per-day <XNO>.',
  });
}

/** Per-send limit: checked before anything else, whatever the flags. */
export function checkPerSend(limits: Limits | undefined, amountRaw: bigint): void {
  if (limits?.perSend !== undefined && amountRaw > BigInt(limits.perSend)) {
    throw exceeded(`The send of ${rawToXno(amountRaw)} XNO is over the per-send limit of ${rawToXno(BigInt(limits.perSend))} XNO`);
  }
}

/**
 * What the profile spent in the last 24 hours, all its accounts together: the
 * sends recorded as landed, and the sends signed and journaled but not yet
 * recorded (in flight: they may land at any moment). A send in flight under
 * `sendId` is left out: the payment being checked is that very send, run again.
 */
export async function spentToday(ctx: SpendingContext, sendId?: string): Promise<bigint> {
  const now = ctx.now();
  const recorded = await ctx.sendLog.spentWithin(ctx.profile, now);
  const inFlight = (await ctx.journal.all()).filter(
    (e) =>
      e.subtype === 'send' && e.profile === ctx.profile && e.amountRaw !== undefined && !recorded.has(e.hash) && now - Date.parse(e.createdAt) < DAY_MS && (sendId === undefined || e.sendId !== sendId),
  );
  return [...recorded.values(), ...inFlight.map((e) => BigInt(e.amountRaw as string))].reduce((sum, raw) => sum + raw, 0n);
}

/**
 * Runs `fn` holding the profile's spending lock (one lock for all its
 * accounts): the daily limit is checked and the send journaled in one hold, so
 * two accounts of the profile sending at once cannot both pass the same room.
 * Recording a landed spend takes it too.
 */
export function withSpendingLock<T>(ctx: Pick<OpsContext, 'lock' | 'profile'>, fn: () => Promise<T>): Promise<T> {
  return ctx.lock(`spending-${profileKey(ctx.profile)}`, fn);
}

/** Daily limit over the last 24 hours, checked while the profile's spending lock is held. */
export function checkPerDay(limits: Limits | undefined, spentRaw: bigint, amountRaw: bigint): void {
  if (limits?.perDay !== undefined && spentRaw + amountRaw > BigInt(limits.perDay)) {
    throw exceeded(
      `The send of ${rawToXno(amountRaw)} XNO would bring the last 24 hours to ${rawToXno(spentRaw + amountRaw)} XNO, over the daily limit of ${rawToXno(BigInt(limits.perDay))} XNO`,
    );
  }
}
