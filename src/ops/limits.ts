import { NanoPayError } from '../errors.js';
import { rawToXno } from '../nano/index.js';
import type { Limits } from '../wallet/config.js';

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

/** Daily limit over the last 24 hours, checked while the account is locked. */
export function checkPerDay(limits: Limits | undefined, spentRaw: bigint, amountRaw: bigint): void {
  if (limits?.perDay !== undefined && spentRaw + amountRaw > BigInt(limits.perDay)) {
    throw exceeded(
      `The send of ${rawToXno(amountRaw)} XNO would bring the last 24 hours to ${rawToXno(spentRaw + amountRaw)} XNO, over the daily limit of ${rawToXno(BigInt(limits.perDay))} XNO`,
    );
  }
}
