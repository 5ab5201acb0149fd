import { NanoPayError } from '../../errors.js';
import { hashBlock, signBlock, verifyBlock, type Account, type StateBlock } from '../../nano/index.js';
import type { Signer } from '../context.js';

/** Signs in this process with the account's private key (the key store unlocked with the password). */
export function keySigner(account: Account): Signer {
  return { address: account.address, sign: async (block) => signBlock(block, account) };
}

/**
 * Signs through the unlocked session: only the block's hash goes there, and the
 * key stays there. The signature is checked here against the account before it
 * is used. `signHash` gives undefined once the session has ended (expired,
 * locked): then `fallback`, the key store unlocked with the password, signs,
 * if it still holds the same account.
 */
export function sessionSigner(address: string, signHash: (hash: string) => Promise<string | undefined>, fallback: () => Promise<Signer>): Signer {
  return {
    address,
    sign: async (block: StateBlock) => {
      const signature = await signHash(hashBlock(block));
      if (signature === undefined) {
        const own = await fallback();
        if (own.address !== address) {
          throw new NanoPayError('CONFLICT', `The key store changed while this command ran: the wallet no longer holds ${address}. Nothing was signed.`, { hint: 'Run the command again.' });
        }
        return own.sign(block);
      }
      if (!verifyBlock(block, signature)) {
        throw new NanoPayError('INTERNAL_ERROR', `The unlocked session's signature does not verify for ${address}; nothing was signed`, { hint: 'End it with nanopay lock, then try again.' });
      }
      return signature;
    },
  };
}
