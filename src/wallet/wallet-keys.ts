import { NanoPayError } from '../errors.js';
import { deriveAccount, type Account } from '../nano/index.js';
import type { WalletKind } from './config.js';

export const WALLET_KINDS: readonly WalletKind[] = ['seed', 'mnemonic', 'legacy-mnemonic', 'private-key'];

/** A wallet's secret as the key store holds it, with the kind that says how accounts come from it. */
export interface WalletSecret {
  kind: WalletKind;
  secret: string;
  passphrase?: string;
}

/**
 * Account `index` of a wallet, derived the way its kind says: the one
 * derivation of the key store's path (wallet export, signing with the
 * password) and of the unlocked session's.
 */
export function walletAccount(wallet: WalletSecret, index: number): Account {
  if (wallet.kind === 'private-key') {
    if (index !== 0) throw new NanoPayError('INVALID_REQUEST', 'A wallet imported from a private key has only account 0');
    return deriveAccount({ privateKey: wallet.secret });
  }
  if (wallet.kind === 'seed') return deriveAccount({ seed: wallet.secret, index });
  return deriveAccount({ mnemonic: wallet.secret, passphrase: wallet.passphrase ?? '', legacy: wallet.kind === 'legacy-mnemonic', index });
}
