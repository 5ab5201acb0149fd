import fc from 'fast-check';
import * as reference from 'nanocurrency';
import { describe, expect, it } from 'vitest';
import { addressToPublicKey, buildSendBlock, deriveAccount, hashBlock, signBlock, verifyBlock, type StateBlock } from '../../../src/nano/index.js';

// Passed verifications are remembered (a paywall checks each payer's frontier, the block it verified as the last
// payment), and points decode by the ed25519 square root: both must answer exactly what a full verification does.

const hex32 = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString('hex').toUpperCase());

function signedSend(seed: string, to: string, amount: bigint): { block: StateBlock; signature: string; publicKey: string } {
  const account = deriveAccount({ seed, index: 0 });
  const unsigned = buildSendBlock({ address: account.address, frontier: seed, balance: 10n ** 30n, representative: account.address }, { to, amount });
  const signature = signBlock(unsigned, account.privateKey);
  return { block: { ...unsigned, signature }, signature, publicKey: account.publicKey };
}

const flip = (hex: string, at: number, by: number): string => `${hex.slice(0, at)}${(parseInt(hex[at] as string, 16) ^ by).toString(16).toUpperCase()}${hex.slice(at + 1)}`;

describe('a remembered verification', () => {
  it('answers only for the same key, signature and block: a changed signature, amount or signer is refused after the block passed', () => {
    const to = deriveAccount({ seed: 'B'.repeat(64), index: 0 }).address;
    const { block, signature } = signedSend('A'.repeat(64), to, 5n);
    expect(verifyBlock(block)).toBe(true);
    expect(verifyBlock(block)).toBe(true);
    // R, then S, changed by one bit.
    expect(verifyBlock(block, flip(signature, 10, 1))).toBe(false);
    expect(verifyBlock(block, flip(signature, 100, 1))).toBe(false);
    expect(verifyBlock({ ...block, balance: (BigInt(block.balance) - 1n).toString() })).toBe(false);
    const other = deriveAccount({ seed: 'C'.repeat(64), index: 0 }).address;
    expect(verifyBlock({ ...block, account: other })).toBe(false);
    expect(verifyBlock({ ...block, link: addressToPublicKey(other) })).toBe(false);
    expect(verifyBlock(block)).toBe(true);
  });

  it("remembers a signature this process made only under the signer's own key: a block claiming another account is refused", () => {
    const signer = deriveAccount({ seed: '1'.repeat(64), index: 0 });
    const other = deriveAccount({ seed: '2'.repeat(64), index: 0 });
    const to = deriveAccount({ seed: '3'.repeat(64), index: 0 }).address;
    const own = buildSendBlock({ address: signer.address, frontier: 'A'.repeat(64), balance: 10n ** 30n, representative: signer.address }, { to, amount: 7n });
    const ownSigned = { ...own, signature: signBlock(own, signer.privateKey) };
    expect(verifyBlock(ownSigned)).toBe(true);
    expect(reference.verifyBlock({ hash: hashBlock(ownSigned), signature: ownSigned.signature, publicKey: signer.publicKey })).toBe(true);
    // Signed with the signer's key, but naming another account: no verification answers for it.
    const claimed = buildSendBlock({ address: other.address, frontier: 'A'.repeat(64), balance: 10n ** 30n, representative: other.address }, { to, amount: 7n });
    const wrongKey = { ...claimed, signature: signBlock(claimed, signer.privateKey) };
    expect(verifyBlock(wrongKey)).toBe(false);
    expect(verifyBlock(wrongKey)).toBe(false);
    // In full (as the sandbox's ledger checks each block): the same answers.
    expect(verifyBlock(ownSigned, ownSigned.signature, { remembered: false })).toBe(true);
    expect(verifyBlock(wrongKey, wrongKey.signature, { remembered: false })).toBe(false);
  });

  it('agrees with nanocurrency-js on valid signatures and on any one changed character of R, S or the key, asked twice', () => {
    fc.assert(
      fc.property(hex32, hex32, fc.integer({ min: 0, max: 191 }), fc.integer({ min: 1, max: 15 }), (seed, toKey, at, by) => {
        const to = deriveAccount({ seed: toKey, index: 0 }).address;
        const { block, signature, publicKey } = signedSend(seed, to, 1n);
        const hash = hashBlock(block);
        expect(verifyBlock(block)).toBe(reference.verifyBlock({ hash, signature, publicKey }));
        // A character of the signature (R or S), or of the key.
        const changedSignature = at < 128 ? flip(signature, at, by) : signature;
        const changedKey = at < 128 ? publicKey : flip(publicKey, at - 128, by);
        const expected = reference.verifyBlock({ hash, signature: changedSignature, publicKey: changedKey });
        const verifies = (): boolean => {
          try {
            const account = deriveAccount({ seed, index: 0 }).publicKey === changedKey ? block.account : addressFor(changedKey);
            return verifyBlock({ ...block, account }, changedSignature);
          } catch {
            return false;
          }
        };
        expect(verifies()).toBe(expected);
        expect(verifies()).toBe(expected);
      }),
      { numRuns: 60 },
    );
  });
});

describe("a key's own table (built on its eighth verification)", () => {
  it('agrees with nanocurrency-js for one payer verified again and again, valid or with a changed character of R or S', () => {
    const seed = 'D'.repeat(64);
    fc.assert(
      fc.property(hex32, fc.bigInt({ min: 1n, max: 10n ** 29n }), fc.integer({ min: 0, max: 127 }), fc.integer({ min: 1, max: 15 }), (toKey, amount, at, by) => {
        const to = deriveAccount({ seed: toKey, index: 0 }).address;
        const { block, signature, publicKey } = signedSend(seed, to, amount);
        const hash = hashBlock(block);
        expect(verifyBlock(block)).toBe(true);
        const changed = flip(signature, at, by);
        expect(verifyBlock(block, changed)).toBe(reference.verifyBlock({ hash, signature: changed, publicKey }));
      }),
      { numRuns: 40 },
    );
  });

  it('refuses a key of small order every time, as a verification without a table does', () => {
    // The identity point's encoding: a "key" that any signature with R = S·B would satisfy, refused by the strict check.
    const identity = `01${'0'.repeat(62)}`;
    const account = addressFor(identity);
    const block: StateBlock = { type: 'state', account, previous: 'E'.repeat(64), representative: account, balance: '1', link: 'F'.repeat(64) };
    for (let i = 0; i < 10; i++) expect(verifyBlock(block, `${'0'.repeat(127)}${i}`)).toBe(false);
  });
});

function addressFor(publicKey: string): string {
  return reference.deriveAddress(publicKey, { useNanoPrefix: true });
}
