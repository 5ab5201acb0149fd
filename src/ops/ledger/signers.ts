import { NanoPayError } from '../../errors.js';
import { ZERO_HASH, signBlock, verifyBlock, type Account, type StateBlock } from '../../nano/index.js';
import type { SignContext, Signer } from '../context.js';
import { spendToWire } from '../spending/wire.js';

/** Signs in this process with the account's private key (the key store unlocked with the password). */
export function keySigner(account: Account): Signer {
  return { address: account.address, sign: async (block) => signBlock(block, account) };
}

/** What the unlocked session is shown with a block (unsigned fields; the block before it; the spend as the caller sees it). */
export interface Shown {
  previous?: StateBlock;
  spend?: Record<string, unknown>;
  own?: number;
}

/**
 * Signs through the unlocked session, which judges what it signs: it is shown
 * the block, the block before it (read from the ledger when the caller has not
 * got it: its hash is what the session checks) and the spend, and signs only
 * if the scope it was granted allows it, having recorded it (`context.judged`
 * says so to the caller). The signature is checked here against the account
 * before it is used. `signWith` gives undefined once the session has ended
 * (expired, locked): then `fallback`, the key store unlocked with the
 * password, signs, if it still holds the same account, and the caller judges.
 */
export function sessionSigner(
  address: string,
  keyRef: { wallet: string; index: number },
  signWith: (block: StateBlock, shown: Shown) => Promise<string | undefined>,
  fallback: () => Promise<Signer>,
  previousOf: (hash: string) => Promise<StateBlock>,
): Signer {
  return {
    address,
    keyRef,
    sign: async (block: StateBlock, context: SignContext = {}) => {
      const { signature: _signature, work: _work, ...fields } = block;
      const previous = context.previous ?? (block.previous.toUpperCase() === ZERO_HASH ? undefined : await previousOf(block.previous));
      const shown: Shown = {
        ...(previous === undefined ? {} : { previous: { type: 'state', account: previous.account, previous: previous.previous, representative: previous.representative, balance: previous.balance, link: previous.link } }),
        ...(context.spend === undefined ? {} : { spend: spendToWire(context.spend) }),
        ...(context.own === undefined ? {} : { own: context.own }),
      };
      const signature = await signWith(fields, shown);
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
      context.judged = true;
      return signature;
    },
  };
}
