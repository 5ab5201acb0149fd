import { NanoPayError } from '../errors.js';
import { quote } from './quote.js';

/** 1 XNO = 10^30 raw. */
export const RAW_PER_XNO = 10n ** 30n;
/** The supply, and the largest balance a 128-bit field can hold. */
export const MAX_RAW = 2n ** 128n - 1n;
const DECIMALS = 30;

function fail(code: string, message: string): never {
  throw new NanoPayError(code, message);
}

/**
 * Parses a decimal XNO amount ("1", "0.5", "1.000001") into raw, exactly.
 * Rejects everything a human might mistype rather than guessing.
 */
export function xnoToRaw(input: string): bigint {
  if (typeof input !== 'string') fail('INVALID_NUMBER_FORMAT', 'Amount must be a string');
  const s = input.trim();
  if (s === '') fail('INVALID_NUMBER_FORMAT', 'Amount is empty');
  if (s.startsWith('-')) {
    if (/^-\d*\.?\d*$/.test(s) && /\d/.test(s)) fail('INVALID_NEGATIVE_AMOUNT', 'Amount must not be negative');
    fail('INVALID_NUMBER_FORMAT', `Amount ${quote(input, '(value not shown)')} is not a number`);
  }
  if (!/^[0-9.]+$/.test(s)) fail('INVALID_NUMBER_FORMAT', `Amount ${quote(input, '(value not shown)')} is not a plain decimal number`);
  const parts = s.split('.');
  if (parts.length > 2) fail('INVALID_NUMBER_FORMAT', `Amount ${quote(input, '(value not shown)')} has more than one decimal point`);
  const [whole = '', fraction] = parts;
  if (whole === '') fail('INVALID_WHOLE_NUMBER', `Amount ${quote(input, '(value not shown)')} needs a whole part (write 0${s})`);
  if (fraction !== undefined) {
    if (fraction === '') fail('INVALID_FRACTIONAL_PART', `Amount ${quote(input, '(value not shown)')} ends with a decimal point`);
    if (fraction.length > DECIMALS) {
      fail('TOO_MANY_DECIMAL_PLACES', `Amount ${quote(input, '(value not shown)')} has more than ${DECIMALS} decimal places`);
    }
  }
  const raw = BigInt(whole) * RAW_PER_XNO + BigInt((fraction ?? '').padEnd(DECIMALS, '0') || '0');
  if (raw > MAX_RAW) fail('AMOUNT_TOO_LARGE', `Amount ${quote(input, '(value not shown)')} exceeds the maximum of 2^128-1 raw`);
  return raw;
}

/** Formats raw as an exact XNO decimal without trailing zeros ("1.5", "0", "0.000001"). */
export function rawToXno(raw: bigint | string): string {
  const value = typeof raw === 'bigint' ? raw : parseRaw(raw);
  if (value < 0n) fail('INVALID_NEGATIVE_AMOUNT', 'Amount must not be negative');
  const whole = value / RAW_PER_XNO;
  const fraction = (value % RAW_PER_XNO).toString().padStart(DECIMALS, '0').replace(/0+$/, '');
  return fraction === '' ? whole.toString() : `${whole}.${fraction}`;
}

/** Parses a raw amount: a decimal integer string in 0..2^128-1. */
export function parseRaw(input: string): bigint {
  if (typeof input !== 'string') fail('INVALID_NUMBER_FORMAT', 'Raw amount must be a string');
  const s = input.trim();
  if (s.startsWith('-') && /^-\d+$/.test(s)) fail('INVALID_NEGATIVE_AMOUNT', 'Amount must not be negative');
  if (!/^\d+$/.test(s)) fail('INVALID_NUMBER_FORMAT', `Raw amount ${quote(input, '(value not shown)')} must be a whole number of raw`);
  const raw = BigInt(s);
  if (raw > MAX_RAW) fail('AMOUNT_TOO_LARGE', `Raw amount ${quote(input, '(value not shown)')} exceeds the maximum of 2^128-1`);
  return raw;
}
