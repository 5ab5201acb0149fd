import { parseRaw, rawToXno, xnoToRaw } from '../nano/index.js';

/**
 * An amount as a caller gives it: XNO (a decimal string) or raw (a whole
 * number). Every operation takes this one type at its door and works in raw.
 */
export type Amount = { xno: string } | { raw: bigint | string };

export function rawOf(amount: Amount): bigint {
  if ('xno' in amount) return xnoToRaw(amount.xno);
  return typeof amount.raw === 'bigint' ? amount.raw : parseRaw(amount.raw);
}

/** An amount for a message about money: XNO for people, raw for exactness ("1.25 XNO (1250… raw)"). */
export function xnoAndRaw(raw: bigint): string {
  return `${rawToXno(raw)} XNO (${raw} raw)`;
}
