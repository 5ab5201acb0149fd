import { describe, expect, it } from 'vitest';
import { NanoPayError } from '../../../src/errors.js';
import { signWebhook, verifyWebhook } from '../../../src/index.js';

const SECRET = 'whsec_test_one';
const body = JSON.stringify({ id: 'evt_1', type: 'request.paid', data: { id: 'r1' } });
const now = 1_800_000_000;

function refused(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(NanoPayError);
    expect((error as NanoPayError).code).toBe('WEBHOOK_SIGNATURE_INVALID');
    return (error as Error).message;
  }
  throw new Error('accepted');
}

describe('webhook signatures', () => {
  it('accepts a signed body and returns the event', () => {
    const header = signWebhook([SECRET], body, now);
    expect(header).toMatch(/^t=1800000000,v1=[0-9a-f]{64}$/);
    expect(verifyWebhook(SECRET, header, body, { now })).toEqual(JSON.parse(body));
    expect(verifyWebhook(SECRET, header, Buffer.from(body), { now: now + 299 })).toEqual(JSON.parse(body));
  });

  it('refuses a tampered body, a wrong secret, a missing or malformed header', () => {
    const header = signWebhook([SECRET], body, now);
    expect(refused(() => verifyWebhook(SECRET, header, body.replace('r1', 'r2'), { now }))).toMatch(/no signature matches/);
    expect(refused(() => verifyWebhook('whsec_other', header, body, { now }))).toMatch(/no signature matches/);
    expect(refused(() => verifyWebhook(SECRET, undefined, body, { now }))).toMatch(/no Nanopay-Signature/);
    expect(refused(() => verifyWebhook(SECRET, `t=${now}`, body, { now }))).toMatch(/no v1/);
    expect(refused(() => verifyWebhook(SECRET, header.replace(/^t=\d+/, `t=${now + 1}`), body, { now }))).toMatch(/no signature matches/);
  });

  it('refuses an old (replayed) or future timestamp beyond the tolerance, which the receiver may set', () => {
    const header = signWebhook([SECRET], body, now - 301);
    expect(refused(() => verifyWebhook(SECRET, header, body, { now }))).toMatch(/tolerance of 300 s/);
    expect(refused(() => verifyWebhook(SECRET, signWebhook([SECRET], body, now + 400), body, { now }))).toMatch(/tolerance/);
    expect(verifyWebhook(SECRET, header, body, { now, toleranceSeconds: 600 })).toEqual(JSON.parse(body));
  });

  it('accepts any of several v1 (a secret being rotated)', () => {
    const header = signWebhook(['whsec_new', SECRET], body, now);
    expect(header.match(/v1=/g)).toHaveLength(2);
    expect(verifyWebhook(SECRET, header, body, { now })).toBeTruthy();
    expect(verifyWebhook('whsec_new', header, body, { now })).toBeTruthy();
    expect(refused(() => verifyWebhook('whsec_old', header, body, { now }))).toMatch(/no signature matches/);
  });
});
