import { parseRaw, rawToXno, xnoToRaw } from '../nano/index.js';

/**
 * An amount as a caller gives it: XNO (a decimal string) or raw (a whole
 * number). Every operation takes this one type at its door and works in raw.
 */
export type Amount = { xno: string } | { raw: bigint | string };

/** A price in another currency than XNO ("19.99" EUR): turned into XNO at the rate of the moment (ops/pricing). */
export interface FiatAmount {
  fiat: string;
  currency: string;
}

/** An amount a request is asked for: XNO unless another currency is named. */
export function askedAmount(amount: string, currency: string | undefined): Amount | FiatAmount {
  return currency === undefined || currency.toUpperCase() === 'XNO' ? { xno: amount } : { fiat: amount, currency };
}

export function rawOf(amount: Amount): bigint {
  if ('xno' in amount) return xnoToRaw(amount.xno);
  return typeof amount.raw === 'bigint' ? amount.raw : parseRaw(amount.raw);
}

/** An amount for a message about money: XNO for people, raw for exactness ("1.25 XNO (1250… raw)"). */
export function xnoAndRaw(raw: bigint): string {
  return `${rawToXno(raw)} XNO (${raw} raw)`;
}
