import { describe, expect, it } from 'vitest';
import {
  addressToPublicKey,
  buildNanoUri,
  deriveAccount,
  hashBlock,
  isValidAddress,
  parseNanoUri,
  parseRaw,
  publicKeyToAddress,
  rawToXno,
  seedToLegacyMnemonic,
  signBlock,
  verifyBlock,
  workRoot,
  xnoToRaw,
  type StateBlock,
} from '../../../src/nano/index.js';
import { NanoPayError } from '../../../src/errors.js';
import { verifyMessage } from '../../../src/nano/ed25519.js';
import { vectors } from '../../helpers/ledger/vectors.js';

type Vec = Record<string, any>;
const list = (name: string): Vec[] => vectors[name] as Vec[];

describe('key vectors', () => {
  it.each(list('keys').map((v) => [v.id, v]))('%s', (_id, v: Vec) => {
    const account =
      v.seed !== undefined ? deriveAccount({ seed: v.seed, index: v.index }) : deriveAccount({ privateKey: v.private_key });
    expect(account.privateKey).toBe(v.private_key.toUpperCase());
    expect(account.publicKey).toBe(v.public_key.toUpperCase());
    expect(account.address).toBe(v.address);
    if (v.address_as_published !== undefined) {
      expect(addressToPublicKey(v.address_as_published)).toBe(account.publicKey);
    }
    if (v.wrong_sha512_public_key !== undefined) {
      expect(account.publicKey).not.toBe(v.wrong_sha512_public_key.toUpperCase());
    }
  });
});

describe('address vectors', () => {
  it.each(list('addresses').map((v) => [v.id, v]))('%s', (_id, v: Vec) => {
    expect(publicKeyToAddress(v.public_key)).toBe(v.address);
    expect(addressToPublicKey(v.address)).toBe(v.public_key.toUpperCase());
    if (v.address_as_published !== undefined) {
      expect(publicKeyToAddress(v.public_key, 'xrb_')).toBe(v.address_as_published);
    }
  });

  it.each(list('address_validation').map((v) => [v.address, v]))('%s', (_a, v: Vec) => {
    expect(isValidAddress(v.address)).toBe(v.valid);
    if (!v.valid) {
      expect(() => addressToPublicKey(v.address)).toThrow(expect.objectContaining({ code: 'INVALID_ADDRESS' }));
    }
  });
});

describe('state block vectors', () => {
  it.each(list('state_blocks').map((v) => [v.id, v]))('%s', (_id, v: Vec) => {
    const block = v.block as StateBlock;
    expect(hashBlock(block)).toBe(v.hash.toUpperCase());
    if (v.work_root !== undefined) expect(workRoot(block)).toBe(v.work_root.toUpperCase());
    if (v.signer_note !== undefined) {
      // Signed by a key other than the block account's: valid for that key only.
      const signer = deriveAccount({ privateKey: v.private_key_if_known });
      const hash = Buffer.from(hashBlock(block), 'hex');
      expect(verifyBlock(block)).toBe(false);
      expect(verifyMessage(hash, block.signature as string, signer.publicKey)).toBe(true);
      expect(signBlock(block, v.private_key_if_known)).toBe((block.signature as string).toUpperCase());
    } else if (block.signature !== undefined) {
      expect(verifyBlock(block)).toBe(true);
      // A flipped bit in the signature or in the block must fail verification.
      const flipped = (block.signature[0] === '0' ? '1' : '0') + block.signature.slice(1);
      expect(verifyBlock(block, flipped)).toBe(false);
      expect(verifyBlock({ ...block, balance: (BigInt(block.balance) + 1n).toString() })).toBe(false);
      if (v.private_key_if_known && v.signature_deterministic) {
        expect(signBlock(block, v.private_key_if_known)).toBe(block.signature.toUpperCase());
      }
    }
  });
});

describe('genesis vectors', () => {
  it('the live genesis account and key match', () => {
    const g = vectors.genesis as Vec;
    expect(addressToPublicKey(g.block.account)).toBe(g.account_public_key);
    expect(publicKeyToAddress(g.account_public_key)).toBe(g.account_nano_prefix);
    expect(parseRaw(g.balance_raw)).toBe(2n ** 128n - 1n);
  });

  it('the dev genesis private key gives its account', () => {
    for (const g of list('other_genesis')) {
      if (g.private_key === undefined) continue;
      const account = deriveAccount({ privateKey: g.private_key });
      expect(account.publicKey).toBe(addressToPublicKey(g.block.account));
    }
  });
});

describe('mnemonic vectors', () => {
  it.each(list('mnemonic').map((v) => [v.id, v]))('%s', (_id, v: Vec) => {
    if (v.legacy_seed !== undefined) {
      expect(seedToLegacyMnemonic(v.legacy_seed)).toBe(v.mnemonic);
      const fromWords = deriveAccount({ mnemonic: v.mnemonic, legacy: true, index: 0 });
      expect(fromWords).toEqual(deriveAccount({ seed: v.legacy_seed, index: 0 }));
    }
    for (const a of (v.accounts ?? []) as Vec[]) {
      const fromMnemonic = deriveAccount({ mnemonic: v.mnemonic, passphrase: v.passphrase, index: a.index });
      expect(fromMnemonic.privateKey).toBe(a.private_key.toUpperCase());
      expect(fromMnemonic.publicKey).toBe(a.public_key.toUpperCase());
      expect(fromMnemonic.address).toBe(a.address);
      if (v.bip39_seed !== undefined) {
        expect(deriveAccount({ seed: v.bip39_seed, index: a.index })).toEqual(fromMnemonic);
      }
    }
  });

  it('rejects unknown words and bad checksums with INVALID_MNEMONIC', () => {
    const good = (list('mnemonic')[0] as Vec).mnemonic as string;
    const words = good.split(' ');
    const typo = [...words.slice(0, -1), 'notaword'].join(' ');
    const swapped = [words[1], words[0], ...words.slice(2)].join(' ');
    for (const m of [typo, swapped, words.slice(0, 11).join(' ')]) {
      expect(() => deriveAccount({ mnemonic: m })).toThrow(expect.objectContaining({ code: 'INVALID_MNEMONIC' }));
    }
  });

  it('a legacy mnemonic must have 24 words', () => {
    expect(() => deriveAccount({ mnemonic: 'abandon '.repeat(11) + 'about', legacy: true })).toThrow(NanoPayError);
  });
});

describe('unit vectors', () => {
  it.each(list('units').map((v) => [v.id, v]))('%s', (_id, v: Vec) => {
    if (v.direction === 'xno_to_raw') {
      if (v.valid === false) expect(() => xnoToRaw(v.xno)).toThrow(NanoPayError);
      else expect(xnoToRaw(v.xno)).toBe(BigInt(v.raw));
    } else if (v.direction === 'raw_to_xno') {
      expect(rawToXno(BigInt(v.raw))).toBe(v.xno);
      expect(xnoToRaw(v.xno)).toBe(BigInt(v.raw));
    } else if (v.direction === 'raw_parse') {
      expect(parseRaw(v.raw_input)).toBe(BigInt(v.raw));
    }
  });
});

describe('URI vectors', () => {
  it.each(list('uri').map((v) => [v.uri, v]))('%s', (_u, v: Vec) => {
    const parsed = parseNanoUri(v.uri);
    expect(parsed.scheme).toBe(v.expected.scheme);
    expect(parsed.address).toBe(v.expected.address);
    expect(parsed.label).toBe(v.expected.label);
    expect(parsed.message).toBe(v.expected.message);
    if (v.expected.amount !== undefined) expect(parsed.amountRaw).toBe(BigInt(v.expected.amount));
  });

  it('builds the standard payment URI with a raw amount', () => {
    const address = 'nano_1111111111111111111111111111111111111111111111111111hifc8npp';
    expect(buildNanoUri({ address, amountRaw: 10n ** 30n })).toBe(`nano:${address}?amount=1000000000000000000000000000000`);
    expect(parseNanoUri(`nano://${address}?amount=5`)).toEqual({ scheme: 'nano', address, amountRaw: 5n });
  });
});
