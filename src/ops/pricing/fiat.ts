import { NanoPayError } from '../../errors.js';
import { MAX_RAW, RAW_PER_XNO } from '../../nano/index.js';

/**
 * Prices in the shop's own currency, exactly: decimals are bigint units with
 * a scale (never a float), and XNO = fiat ÷ rate is rounded up to the next
 * 0.000001 XNO, so the shop never asks for less than its price and the amount
 * stays readable. The per-request offset (node) or the service's adjustment is
 * added on top of that, as for any request.
 */

/** A decimal number, exactly: `units` / 10^`scale`. */
export interface Decimal {
  units: bigint;
  scale: number;
}

/** What the XNO amount of a fiat price is rounded up to: 10^24 raw, 0.000001 XNO. */
const FIAT_ROUNDING_RAW = 10n ** 24n;

/** Bounds of a rate (currency per XNO): a source sending more digits than this is not sending a price. */
const RATE_MAX_SIGNIFICANT = 30;
const RATE_MAX_SCALE = 30;
const RATE_MAX_WHOLE_DIGITS = 15;

/** Bounds of a price: whole units up to 15 digits, at most 8 decimals. */
const AMOUNT = /^(\d{1,15})(?:\.(\d{1,8}))?$/;
const CURRENCY = /^[A-Za-z]{3}$/;
/** A rate as a source writes it: a decimal, or a JSON number's text (an exponent included). */
const RATE = /^(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d{1,3}))?$/;

function normalized(units: bigint, scale: number): Decimal {
  let u = units;
  let s = scale;
  while (s > 0 && u % 10n === 0n) {
    u /= 10n;
    s--;
  }
  return { units: u, scale: s };
}

/** A decimal as plain text, without an exponent or trailing zeros ("0.00000093", "12.5"). */
export function formatDecimal(d: Decimal): string {
  const text = d.units.toString().padStart(d.scale + 1, '0');
  if (d.scale === 0) return text;
  return `${text.slice(0, -d.scale)}.${text.slice(-d.scale)}`.replace(/\.?0+$/, '');
}

/** An ISO 4217 code, upper case ("eur" → "EUR"). */
export function parseCurrency(text: string): string {
  if (!CURRENCY.test(text)) throw new NanoPayError('INVALID_REQUEST', `"${text.slice(0, 20)}" is not a currency code: give three letters (ISO 4217), e.g. EUR or USD`);
  return text.toUpperCase();
}

/** A price in a currency: a plain positive decimal ("19.99"), at most 15 whole digits and 8 decimals. */
export function parseFiatAmount(text: string): Decimal {
  const match = AMOUNT.exec(text.trim());
  if (match === null) {
    throw new NanoPayError('INVALID_NUMBER_FORMAT', `"${text.slice(0, 40)}" is not a price: write a plain decimal such as 19.99 (at most 15 whole digits and 8 decimals)`);
  }
  const [, whole = '', fraction = ''] = match;
  const amount = normalized(BigInt(whole + fraction), fraction.length);
  if (amount.units === 0n) throw new NanoPayError('INVALID_NUMBER_FORMAT', 'The price must be greater than zero');
  return amount;
}

/**
 * A rate as a source gives it, exactly (a JSON number's text is read as written, never through a float);
 * undefined when it is not a positive decimal within the bounds.
 */
export function parseRate(text: string): Decimal | undefined {
  const match = RATE.exec(text);
  if (match === null) return undefined;
  const [, whole = '', fraction = '', exponent = '0'] = match;
  let scale = fraction.length - Number(exponent);
  let units = BigInt(whole + fraction);
  if (scale < 0) {
    if (-scale > RATE_MAX_WHOLE_DIGITS) return undefined;
    units *= 10n ** BigInt(-scale);
    scale = 0;
  }
  const rate = normalized(units, scale);
  const digits = rate.units.toString().length;
  if (rate.units === 0n || rate.scale > RATE_MAX_SCALE || digits > RATE_MAX_SIGNIFICANT || digits - rate.scale > RATE_MAX_WHOLE_DIGITS) return undefined;
  return rate;
}

/** A percentage setting ("10", "2.5"): above 0, at most 1000. */
export function parsePercent(text: string, what: string): Decimal {
  const match = /^(\d{1,4})(?:\.(\d{1,4}))?$/.exec(text.trim());
  const value = match === null ? undefined : normalized(BigInt((match[1] ?? '') + (match[2] ?? '')), (match[2] ?? '').length);
  if (value === undefined || value.units === 0n || value.units > 1000n * 10n ** BigInt(value.scale)) {
    throw new NanoPayError('INVALID_REQUEST', `${what} is a percentage above 0 and at most 1000 (e.g. 10 or 2.5), not "${text.slice(0, 20)}"`);
  }
  return value;
}

/** Raw XNO for `amount` at `rate` (currency per XNO): amount ÷ rate, rounded up to FIAT_ROUNDING_RAW. */
export function fiatToRaw(amount: Decimal, rate: Decimal): bigint {
  // (a / 10^as) / (r / 10^rs) XNO = a·10^rs / (r·10^as) XNO; counted in steps of 10^-6 XNO, rounded up.
  const numerator = amount.units * 10n ** BigInt(rate.scale) * (RAW_PER_XNO / FIAT_ROUNDING_RAW);
  const denominator = rate.units * 10n ** BigInt(amount.scale);
  const raw = ((numerator + denominator - 1n) / denominator) * FIAT_ROUNDING_RAW;
  if (raw > MAX_RAW) throw new NanoPayError('AMOUNT_TOO_LARGE', 'The price comes to more XNO than there can be (2^128-1 raw)');
  return raw;
}

/** Whether `a` is greater than `b`. */
export function greaterThan(a: Decimal, b: Decimal): boolean {
  const scale = Math.max(a.scale, b.scale);
  return a.units * 10n ** BigInt(scale - a.scale) > b.units * 10n ** BigInt(scale - b.scale);
}

/** Whether `next` is more than `percent` % away from `last`. */
export function movedBeyond(last: Decimal, next: Decimal, percent: Decimal): boolean {
  const scale = Math.max(last.scale, next.scale);
  const l = last.units * 10n ** BigInt(scale - last.scale);
  const n = next.units * 10n ** BigInt(scale - next.scale);
  const difference = n > l ? n - l : l - n;
  // difference / l > p / (100 · 10^ps)
  return difference * 100n * 10n ** BigInt(percent.scale) > l * percent.units;
}
