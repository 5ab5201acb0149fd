import fc from 'fast-check';
import * as reference from 'nanocurrency';
import { generateMnemonic as scureMnemonic, mnemonicToSeedSync } from '@scure/bip39';
import { wordlist } from '@scure/bip39/wordlists/english.js';
import { describe, expect, it } from 'vitest';
import { MAX_RAW, deriveAccount, hashBlock, publicKeyToAddress, signBlock, verifyBlock, type StateBlock } from '../../../src/nano/index.js';

/** nanocurrency-js is an independent implementation: ours must agree with it on random inputs. */
const hex32 = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString('hex').toUpperCase());

describe('agreement with nanocurrency-js', () => {
  it('derives the same keys and addresses from a seed and index', () => {
    fc.assert(
      fc.property(hex32, fc.integer({ min: 0, max: 0xffffffff }), (seed, index) => {
        const ours = deriveAccount({ seed, index });
        const secretKey = reference.deriveSecretKey(seed, index);
        const publicKey = reference.derivePublicKey(secretKey);
        expect(ours.privateKey).toBe(secretKey.toUpperCase());
        expect(ours.publicKey).toBe(publicKey.toUpperCase());
        expect(ours.address).toBe(reference.deriveAddress(publicKey, { useNanoPrefix: true }));
      }),
      { numRuns: 50 },
    );
  });

  it('derives the same BIP39 keys as @scure/bip39\'s seed, with any passphrase (Unicode too)', () => {
    fc.assert(
      fc.property(fc.constantFrom(128, 256), fc.string({ unit: 'grapheme', maxLength: 12 }), fc.integer({ min: 0, max: 3 }), (bits, passphrase, index) => {
        const mnemonic = scureMnemonic(wordlist, bits);
        const seed = Buffer.from(mnemonicToSeedSync(mnemonic, passphrase)).toString('hex');
        expect(deriveAccount({ mnemonic, passphrase, index })).toEqual(deriveAccount({ seed, index }));
      }),
      { numRuns: 10 },
    );
  });

  it('hashes, signs and verifies state blocks the same way', () => {
    fc.assert(
      fc.property(hex32, hex32, hex32, hex32, fc.bigInt({ min: 0n, max: MAX_RAW }), (key, previous, rep, link, balance) => {
        const account = deriveAccount({ privateKey: key });
        const block: StateBlock = {
          type: 'state',
          account: account.address,
          previous,
          representative: publicKeyToAddress(rep),
          balance: balance.toString(),
          link,
        };
        const hash = reference.hashBlock({ account: block.account, previous, representative: block.representative, balance: block.balance, link });
        expect(hashBlock(block)).toBe(hash.toUpperCase());
        const signature = signBlock(block, key);
        expect(signature).toBe(reference.signBlock({ hash, secretKey: key }).toUpperCase());
        expect(verifyBlock(block, signature)).toBe(true);
      }),
      { numRuns: 30 },
    );
  });
});
