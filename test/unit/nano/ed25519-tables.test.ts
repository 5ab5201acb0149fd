import { describe, expect, it } from 'vitest';
import { addressToPublicKey, deriveAccount, signBlock, verifyBlock, type StateBlock } from '../../../src/nano/index.js';
import { vectors } from '../../helpers/ledger/vectors.js';

type Vec = Record<string, any>;

// vitest gives each test file a fresh module, so the curve here starts as a command's does: the base
// point without precomputed tables, which it gets after 24 keys, signatures and verifications.
describe('the base point before and after its precomputed tables', () => {
  it('derives keys, signs and verifies the vectors alike on both sides of the switch', () => {
    const blocks = (vectors.state_blocks as Vec[]).filter((v) => v.signature_deterministic === true && v.signer_note === undefined);
    // Four uses a block: the first six blocks come before the tables, the rest after.
    expect(blocks.length * 4).toBeGreaterThan(2 * 24);
    for (const v of blocks) {
      const block = v.block as StateBlock;
      const signature = (block.signature as string).toUpperCase();
      expect(deriveAccount({ privateKey: v.private_key_if_known }).publicKey).toBe(addressToPublicKey(block.account));
      expect(signBlock(block, v.private_key_if_known)).toBe(signature);
      expect(verifyBlock(block)).toBe(true);
      const flipped = (signature[0] === '0' ? '1' : '0') + signature.slice(1);
      expect(verifyBlock(block, flipped)).toBe(false);
    }
  });
});
