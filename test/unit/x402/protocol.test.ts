import { describe, expect, it } from 'vitest';
import { decodeHeader, encodeHeader, parsePaymentPayload, parsePaymentRequired, parseSettleResponse } from '../../../src/x402/protocol.js';
import { nanoRequirement } from '../../../src/x402/nano-exact.js';

const payTo = 'nano_1pu7p5n3ghq1i1p4rhmek41f5add1uh34xpb94nkbxe8g4a6x1p69emk8y1d';

describe('x402 headers', () => {
  it('encodes standard base64 of UTF-8 JSON and reads it back', () => {
    const value = { x402Version: 2, note: 'é ünïcode ✓', long: '?'.repeat(100) };
    const header = encodeHeader(value);
    expect(header).toBe(Buffer.from(JSON.stringify(value), 'utf8').toString('base64'));
    expect(decodeHeader(header, 'PAYMENT-SIGNATURE')).toEqual(value);
  });

  it('refuses base64url, whitespace and non-objects', () => {
    const value = { x402Version: 2, q: '??>>??>>' };
    const standard = encodeHeader(value);
    expect(standard).toMatch(/[+/]/);
    const url = Buffer.from(JSON.stringify(value)).toString('base64url');
    expect(() => decodeHeader(url, 'PAYMENT-SIGNATURE')).toThrow(/standard base64/);
    expect(() => decodeHeader(` ${standard}`, 'PAYMENT-SIGNATURE')).toThrow(/standard base64/);
    expect(() => decodeHeader(encodeHeader([1]), 'PAYMENT-SIGNATURE')).toThrow(/object/);
    expect(() => decodeHeader(Buffer.from('not json').toString('base64'), 'PAYMENT-SIGNATURE')).toThrow(/JSON/);
  });
});

describe('x402 shapes', () => {
  const requirement = nanoRequirement(payTo, 1000n, 'nano:mainnet', 'ffc0000000000000');

  it('emits the Nano exact requirement with exactly the reference keys', () => {
    expect(Object.keys(requirement).sort()).toEqual(['amount', 'asset', 'extra', 'maxTimeoutSeconds', 'network', 'payTo', 'scheme']);
    expect(requirement).toMatchObject({ scheme: 'exact', network: 'nano:mainnet', asset: 'XNO', amount: '1000', maxTimeoutSeconds: 300 });
  });

  it('keeps each offered requirement verbatim (extra included) so it can be echoed', () => {
    const offered = { ...requirement, extra: { ...requirement.extra, vendorKey: { nested: true } } };
    const parsed = parsePaymentRequired({ x402Version: 2, resource: { url: 'http://x/' }, accepts: [offered] });
    expect(parsed.accepts[0]).toBe(offered);
  });

  it('refuses a v1 payload and a v1 402 body', () => {
    expect(() => parsePaymentPayload({ x402Version: 1, scheme: 'exact', network: 'nano:mainnet', payload: {} })).toThrow(/version 2/);
    expect(() => parsePaymentRequired({ x402Version: 1, accepts: [{ maxAmountRequired: '1' }] })).toThrow(/version 2/);
  });

  it('reads a payload with extra top-level scheme/network keys as peers send it', () => {
    const payload = parsePaymentPayload({ x402Version: 2, scheme: 'exact', network: 'nano:mainnet', accepted: requirement, payload: { block: {} } });
    expect(payload.accepted).toEqual(requirement);
    expect(Object.keys(payload).sort()).toEqual(['accepted', 'payload', 'x402Version']);
  });

  it('reads a settlement naming the block as hash instead of transaction', () => {
    expect(parseSettleResponse({ success: true, hash: 'AB', network: 'nano:mainnet' }).transaction).toBe('AB');
    expect(parseSettleResponse({ success: true, transaction: 'CD', hash: 'AB', network: 'nano:mainnet' }).transaction).toBe('CD');
  });
});
