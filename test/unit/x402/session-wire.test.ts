import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { deriveAccount } from '../../../src/nano/index.js';
import { signMessage } from '../../../src/nano/ed25519.js';
import { checkReceipt } from '../../../src/x402/sessions/receipts.js';
import {
  closeMessage,
  isSessionMessage,
  openMessage,
  receiptMessage,
  requestDigest,
  signWithSessionKey,
  toolDigest,
  verifyAccountSignature,
  verifySessionSignature,
  voucherMessage,
} from '../../../src/x402/sessions/wire.js';

const vectors = JSON.parse(readFileSync(new URL('../../fixtures/nano-session-vectors.json', import.meta.url), 'utf8'));
const spec = readFileSync(new URL('../../../docs/x402-sessions.md', import.meta.url), 'utf8');

describe('nano-session wire (docs/x402-sessions.md test vectors)', () => {
  it('the session key of the vectors is RFC 8032 test 1 (checked by OpenSSL), and signs the voucher and close as listed', () => {
    expect(vectors.session_key.public_key).toBe('D75A980182B10AB7D54BFED3C964073A0EE172F3DAA62325AF021A68F707511A');
    const voucher = voucherMessage(vectors.voucher);
    expect(voucher.toString('hex').toUpperCase()).toBe(vectors.voucher.message_hex);
    expect(signWithSessionKey(vectors.session_key.seed, voucher)).toBe(vectors.voucher.signature);
    expect(verifySessionSignature(vectors.session_key.public_key, voucher, vectors.voucher.signature)).toBe(true);
    expect(verifySessionSignature(vectors.session_key.public_key, voucherMessage({ ...vectors.voucher, counter: 2 }), vectors.voucher.signature)).toBe(false);
    expect(closeMessage(vectors.session).toString('hex').toUpperCase()).toBe(vectors.close.message_hex);
    expect(signWithSessionKey(vectors.session_key.seed, closeMessage(vectors.session))).toBe(vectors.close.signature);
  });

  it('the opening is signed by the payer account key (Nano Ed25519, BLAKE2b)', () => {
    expect(deriveAccount({ seed: '0'.repeat(64), index: 0 }).address).toBe(vectors.payer.address);
    const open = openMessage(vectors.network, vectors.seller.address, vectors.session, vectors.session_key.public_key);
    expect(open.toString('hex').toUpperCase()).toBe(vectors.open.message_hex);
    expect(signMessage(open, vectors.payer.private_key)).toBe(vectors.open.signature);
    expect(verifyAccountSignature(vectors.payer.address, open, vectors.open.signature)).toBe(true);
    expect(verifyAccountSignature(vectors.seller.address, open, vectors.open.signature)).toBe(false);
    // What an unlocked session agrees to sign: openings and receipts, never 32 bytes (a block hash).
    expect([isSessionMessage(open), isSessionMessage(receiptMessage({ a: 1 })), isSessionMessage(Buffer.alloc(32)), isSessionMessage(voucherMessage(vectors.voucher))]).toEqual([true, true, false, false]);
  });

  it('request digests', () => {
    expect(requestDigest('GET', '/v1/search?q=nano', undefined)).toBe(vectors.request_digests['GET /v1/search?q=nano (no body)']);
    expect(requestDigest('POST', '/v1/infer', Buffer.from('{"prompt":"hi"}'))).toBe(vectors.request_digests['POST /v1/infer {"prompt":"hi"}']);
    expect(toolDigest('get_weather', { city: 'Lisbon' })).toBe(vectors.request_digests['MCP get_weather {"city":"Lisbon"}']);
  });

  it('the spec lists every vector', () => {
    for (const value of [vectors.open.message_hex, vectors.open.signature, vectors.voucher.message_hex, vectors.voucher.signature, vectors.close.signature, ...Object.values(vectors.request_digests)]) {
      expect(spec).toContain(value as string);
    }
  });

  it('a receipt with a signature that does not hold, or sums that do not add up, is refused naming why', () => {
    const seller = deriveAccount({ seed: '0'.repeat(64), index: 1 });
    const unsigned = {
      scheme: 'nano-session' as const,
      network: vectors.network,
      session: vectors.session,
      payer: vectors.payer.address,
      pay_to: seller.address,
      session_key: vectors.session_key.public_key,
      open_signature: vectors.open.signature,
      deposits: [{ hash: vectors.session, amount_raw: '2000000000000000000000000' }],
      deposit_raw: '2000000000000000000000000',
      spent_raw: '1000000000000000000000000',
      refund_raw: '1000000000000000000000000',
      refund_block: null,
      final_voucher: { session: vectors.session, counter: 1, spent: vectors.voucher.spent, request: vectors.voucher.request, signature: vectors.voucher.signature },
      reason: 'closed by the buyer',
      closed_at: '2026-11-28T00:00:00.000Z',
    };
    const receipt = { ...unsigned, seller_signature: signMessage(receiptMessage(unsigned), seller.privateKey) };
    expect(checkReceipt(receipt)).toMatchObject({ valid: true, problems: [] });
    expect(checkReceipt({ ...receipt, spent_raw: '1500000000000000000000000', refund_raw: '500000000000000000000000' }).problems).toEqual([
      'seller_signature is not the signature of pay_to over the receipt',
      'spent_raw 1500000000000000000000000 is above what the final voucher allows (1000000000000000000000000)',
    ]);
    expect(checkReceipt({ ...receipt, session_key: '00'.repeat(32) }).problems).toContain("open_signature is not the payer's signature binding session_key to the session");
  });
});
