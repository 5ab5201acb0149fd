import Conf from 'conf';
import { NanoPayError } from '../errors.js';
import { ensurePrivateDirSync } from './secure-fs.js';

/** How a wallet's secret was given; it decides how accounts are derived. */
export type WalletKind = 'seed' | 'mnemonic' | 'legacy-mnemonic' | 'private-key';

/** What is known of a wallet without its secret: never anything that can spend. */
export interface WalletRecord {
  kind: WalletKind;
  createdAt: string;
  /** Derived account addresses by index (a private-key wallet has only index 0). */
  accounts: Record<string, string>;
  /** Made by the remote service (POST /wallet/create) rather than locally. */
  remote?: boolean;
}

export interface Limits {
  /** Raw, as decimal strings: JSON has no bigint. */
  perSend?: string;
  perDay?: string;
}

export interface ProfileRecord {
  apiUrl?: string;
  activeWallet?: string;
  activeAccount?: number;
  limits?: Limits;
  receiveMinimum?: string;
  workMode?: 'auto' | 'cpu' | 'remote';
  workServers?: string;
  wallets: Record<string, WalletRecord>;
}

interface ConfigShape {
  version: 1;
  profiles: Record<string, ProfileRecord>;
}

/**
 * Plain settings in `config.json` (0600) via conf. Only names, addresses and
 * settings live here; every secret is in the encrypted key store.
 */
export class ConfigStore {
  private readonly conf: Conf<ConfigShape>;

  constructor(readonly dir: string) {
    ensurePrivateDirSync(dir);
    try {
      this.conf = new Conf<ConfigShape>({
        cwd: dir,
        configName: 'config',
        configFileMode: 0o600,
        clearInvalidConfig: false,
        accessPropertiesByDotNotation: false,
        defaults: { version: 1, profiles: {} },
      });
    } catch (error) {
      throw new NanoPayError('STORE_CORRUPT', `The settings file in ${dir} is damaged; it was left untouched`, {
        hint: 'Fix or move away config.json; your keys are in keystore.json and were not affected.',
        cause: error,
      });
    }
  }

  profile(name: string): ProfileRecord {
    return this.conf.get('profiles')[name] ?? { wallets: {} };
  }

  profileNames(): string[] {
    return Object.keys(this.conf.get('profiles'));
  }

  updateProfile(name: string, change: (profile: ProfileRecord) => ProfileRecord): ProfileRecord {
    const profiles = this.conf.get('profiles');
    const next = change(structuredClone(profiles[name] ?? { wallets: {} }));
    this.conf.set('profiles', { ...profiles, [name]: next });
    return next;
  }
}
