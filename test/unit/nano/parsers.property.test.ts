import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NanoPayError } from '../../../src/errors.js';
import {
  MAX_RAW,
  addressToPublicKey,
  buildNanoUri,
  parseNanoUri,
  parseRaw,
  publicKeyToAddress,
  rawToXno,
  xnoToRaw,
} from '../../../src/nano/index.js';

const raw = fc.bigInt({ min: 0n, max: MAX_RAW });
const publicKey = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString('hex').toUpperCase());

/** Anything thrown must be a NanoPayError carrying a code. */
function throwsOnlyCoded(fn: () => unknown): void {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(NanoPayError);
    expect((error as NanoPayError).code).toMatch(/^[A-Z_]+$/);
  }
}

describe('amount parser', () => {
  it('raw -> XNO -> raw round-trips for every value up to 2^128-1', () => {
    fc.assert(fc.property(raw, (r) => xnoToRaw(rawToXno(r)) === r));
  });

  it('raw strings round-trip', () => {
    fc.assert(fc.property(raw, (r) => parseRaw(r.toString()) === r));
  });

  it('never throws anything but a coded NanoPayError', () => {
    fc.assert(fc.property(fc.string(), (s) => throwsOnlyCoded(() => xnoToRaw(s))));
    fc.assert(fc.property(fc.string({ unit: fc.constantFrom(...'0123456789.-e+ ,') }), (s) => throwsOnlyCoded(() => xnoToRaw(s))));
    fc.assert(fc.property(fc.string(), (s) => throwsOnlyCoded(() => parseRaw(s))));
  });

  it.each([
    ['', 'INVALID_NUMBER_FORMAT'],
    ['abc', 'INVALID_NUMBER_FORMAT'],
    ['1.2.3', 'INVALID_NUMBER_FORMAT'],
    ['1e5', 'INVALID_NUMBER_FORMAT'],
    ['1 000', 'INVALID_NUMBER_FORMAT'],
    ['0x10', 'INVALID_NUMBER_FORMAT'],
    ['-1', 'INVALID_NEGATIVE_AMOUNT'],
    ['-0.5', 'INVALID_NEGATIVE_AMOUNT'],
    [`0.${'1'.repeat(31)}`, 'TOO_MANY_DECIMAL_PLACES'],
    ['1.', 'INVALID_FRACTIONAL_PART'],
    ['.5', 'INVALID_WHOLE_NUMBER'],
    ['340282367', 'AMOUNT_TOO_LARGE'],
  ])('xnoToRaw(%j) fails with %s', (input, code) => {
    expect(() => xnoToRaw(input)).toThrow(expect.objectContaining({ code }));
  });

  it('accepts exactly 30 decimals and the maximum', () => {
    expect(xnoToRaw(`0.${'0'.repeat(29)}1`)).toBe(1n);
    expect(xnoToRaw('340282366.920938463463374607431768211455')).toBe(MAX_RAW);
    expect(() => parseRaw((MAX_RAW + 1n).toString())).toThrow(expect.objectContaining({ code: 'AMOUNT_TOO_LARGE' }));
  });
});

describe('address codec', () => {
  it('public key -> address -> public key round-trips in both prefixes', () => {
    fc.assert(
      fc.property(publicKey, fc.constantFrom('nano_' as const, 'xrb_' as const), (key, prefix) => {
        return addressToPublicKey(publicKeyToAddress(key, prefix)) === key;
      }),
    );
  });

  it('a single changed character is caught', () => {
    fc.assert(
      fc.property(publicKey, fc.integer({ min: 6, max: 64 }), (key, at) => {
        const address = publicKeyToAddress(key);
        const replacement = address[at] === '3' ? '4' : '3';
        const mutated = address.slice(0, at) + replacement + address.slice(at + 1);
        expect(() => addressToPublicKey(mutated)).toThrow(expect.objectContaining({ code: 'INVALID_ADDRESS' }));
      }),
    );
  });

  it('never throws anything but a coded NanoPayError', () => {
    fc.assert(fc.property(fc.string(), (s) => throwsOnlyCoded(() => addressToPublicKey(s))));
    fc.assert(fc.property(fc.string(), (s) => throwsOnlyCoded(() => addressToPublicKey(`nano_${s}`))));
  });
});

describe('URI codec', () => {
  it('build -> parse round-trips', () => {
    fc.assert(
      fc.property(publicKey, fc.option(raw, { nil: undefined }), fc.option(fc.string(), { nil: undefined }), fc.option(fc.string(), { nil: undefined }), (key, amountRaw, label, message) => {
        const address = publicKeyToAddress(key);
        const parsed = parseNanoUri(buildNanoUri({ address, amountRaw, label, message }));
        expect(parsed).toEqual({
          scheme: 'nano',
          address,
          ...(amountRaw === undefined ? {} : { amountRaw }),
          ...(label === undefined ? {} : { label }),
          ...(message === undefined ? {} : { message }),
        });
      }),
    );
  });

  it('never throws anything but a coded NanoPayError', () => {
    fc.assert(fc.property(fc.string(), (s) => throwsOnlyCoded(() => parseNanoUri(s))));
    fc.assert(fc.property(fc.string(), (s) => throwsOnlyCoded(() => parseNanoUri(`nano:nano_1111111111111111111111111111111111111111111111111111hifc8npp?${s}`))));
  });
});

describe('errors never echo what may be a secret', () => {
  const seed = 'C0CB015BCA0834AC827B6259B48C052F7D62692DA1FA21DCDF755CFD27ACBE43';
  const words = 'hole kiss mouse jacket also board click series citizen slight kite smoke desk diary rent mercy inflict antique edge invite slush athlete total brain';

  it.each([seed, words, seed + seed])('%#: a secret pasted as an address or an amount stays out of the message', (secret) => {
    for (const parse of [() => addressToPublicKey(secret), () => xnoToRaw(secret), () => parseRaw(secret)]) {
      try {
        parse();
        expect.unreachable();
      } catch (error) {
        expect((error as NanoPayError).message).not.toContain(secret.slice(0, 16));
      }
    }
  });

  it('ordinary mistakes are quoted back', () => {
    expect(() => xnoToRaw('1,5')).toThrow('"1,5"');
    expect(() => addressToPublicKey('nano_123')).toThrow('"nano_123"');
  });
});
