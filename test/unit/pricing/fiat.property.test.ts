import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fiatToRaw, formatDecimal, movedBeyond, parseFiatAmount, parsePercent, parseRate, type Decimal } from '../../../src/ops/pricing/fiat.js';

const RAW_PER_XNO = 10n ** 30n;
const MAX_RAW = 2n ** 128n - 1n;
const STEP = 10n ** 24n;

/** value · 10^scale as an exact fraction of the two decimals, in integers: a/10^as compared to b/10^bs. */
const scaled = (d: Decimal, scale: number): bigint => d.units * 10n ** BigInt(scale - d.scale);

describe('prices in another currency, in exact decimals', () => {
  it('XNO = price ÷ rate, rounded up to the next 0.000001 XNO: never less than the price, never a step more', () => {
    const amount = fc.tuple(fc.bigInt({ min: 0n, max: 10n ** 12n }), fc.integer({ min: 0, max: 8 })).filter(([u]) => u > 0n);
    const rate = fc.tuple(fc.bigInt({ min: 1n, max: 10n ** 20n }), fc.integer({ min: 0, max: 18 }));
    fc.assert(
      fc.property(amount, rate, ([au, as], [ru, rs]) => {
        const a: Decimal = { units: au, scale: as };
        const r: Decimal = { units: ru, scale: rs };
        // raw/10^30 XNO · r ≥ a, and (raw − step)/10^30 · r < a, all in integers at a common scale.
        const worth = (x: bigint): bigint => x * ru * 10n ** BigInt(as);
        const price = au * RAW_PER_XNO * 10n ** BigInt(rs);
        // Beyond the largest whole step under 2^128: refused.
        if (worth(MAX_RAW - (MAX_RAW % STEP)) < price) {
          expect(() => fiatToRaw(a, r)).toThrow(expect.objectContaining({ code: 'AMOUNT_TOO_LARGE' }));
          return;
        }
        const raw = fiatToRaw(a, r);
        expect(raw % STEP).toBe(0n);
        expect(worth(raw) >= price).toBe(true);
        expect(worth(raw - STEP) < price).toBe(true);
      }),
    );
  });

  it('reads a rate exactly as written, a JSON number\'s exponent included, and refuses what is not a bounded positive decimal', () => {
    expect(parseRate('0.93')).toEqual({ units: 93n, scale: 2 });
    expect(formatDecimal(parseRate('9.3e-1') as Decimal)).toBe('0.93');
    expect(formatDecimal(parseRate('1.5E+3') as Decimal)).toBe('1500');
    expect(formatDecimal(parseRate('0.9123456789012345678') as Decimal)).toBe('0.9123456789012345678');
    expect(formatDecimal(parseRate('12.500') as Decimal)).toBe('12.5');
    expect(formatDecimal(parseRate('7e-30') as Decimal)).toBe('0.000000000000000000000000000007');
    for (const bad of ['0', '0.000', '-1', '+1', '1,5', '.5', '5.', 'NaN', 'Infinity', '1e400', '1e-31', '1e16', '0x10', ' 1', '1234567890123456.1', '1.0000000000000000000000000000001']) {
      expect(parseRate(bad), bad).toBeUndefined();
    }
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 10n ** 15n - 1n }), fc.integer({ min: 0, max: 15 }), (units, scale) => {
        const d = parseRate(formatDecimal({ units, scale })) as Decimal;
        expect(scaled(d, 30)).toBe(scaled({ units, scale }, 30));
      }),
    );
  });

  it('a price is a plain positive decimal of at most 15 whole digits and 8 decimals', () => {
    expect(parseFiatAmount('19.99')).toEqual({ units: 1999n, scale: 2 });
    expect(parseFiatAmount('19.90')).toEqual({ units: 199n, scale: 1 });
    for (const bad of ['0', '0.00', '-1', '19,99', '1e3', '1.123456789', '1234567890123456', '', 'abc']) {
      expect(() => parseFiatAmount(bad), bad).toThrow(expect.objectContaining({ code: 'INVALID_NUMBER_FORMAT' }));
    }
  });

  it('a move beyond the bound, either way, exactly at the edge not', () => {
    const d = (text: string): Decimal => parseRate(text) as Decimal;
    const ten = parsePercent('10', 'rate-max-move');
    expect(movedBeyond(d('1'), d('1.1'), ten)).toBe(false);
    expect(movedBeyond(d('1'), d('0.9'), ten)).toBe(false);
    expect(movedBeyond(d('1'), d('1.1000000001'), ten)).toBe(true);
    expect(movedBeyond(d('1'), d('0.8999999999'), ten)).toBe(true);
    expect(movedBeyond(d('0.93'), d('1.03'), ten)).toBe(true);
    expect(movedBeyond(d('0.93'), d('1.02'), parsePercent('9.7', 'x'))).toBe(false);
    for (const bad of ['0', '-1', '1001', 'ten', '1.23456']) expect(() => parsePercent(bad, 'rate-max-move'), bad).toThrow();
  });
});
