import { ApiClient } from '../api/client.js';
import { NanoPayError } from '../errors.js';
import { deriveAccount, type Account } from '../nano/index.js';
import { providerSettings, workProvider, type WorkObserver } from '../work/index.js';
import { ConfigStore, type ProfileRecord, type WalletRecord } from '../wallet/config.js';
import { Journal } from '../wallet/journal.js';
import { KeyStore } from '../wallet/keystore.js';
import { withAccountLock } from '../wallet/lock.js';
import { SendLog } from '../wallet/send-log.js';
import { WorkStore } from '../wallet/work-store.js';
import { configDir, keystorePath, stateDir } from '../wallet/paths.js';
import { type AccountHead, readAccountHead } from './chain.js';
import type { OpsContext, Signer, WorkProvider } from './context.js';
import { settleJournal, type Settlement } from './recovery.js';

/** Asks for the key store password; `purpose` says why (for a prompt). */
export type PasswordSource = (purpose: 'unlock' | 'create') => Promise<string>;

export interface SessionOptions {
  password: PasswordSource;
  env?: NodeJS.ProcessEnv;
  configDir?: string;
  profile?: string;
  work?: WorkProvider;
  /** Per-attempt timeout for the remote service. */
  timeoutMs?: number;
  /** Follows local proof-of-work searches (for a spinner). */
  workObserver?: WorkObserver;
}

/** The service a fresh profile talks to: the sandbox's default address. */
export const DEFAULT_API_URL = 'http://127.0.0.1:7076';

export const secretIds = {
  apiKey: (profile: string) => `profile/${profile}/api-key`,
  wallet: (profile: string, wallet: string) => `profile/${profile}/wallet/${wallet}/secret`,
  passphrase: (profile: string, wallet: string) => `profile/${profile}/wallet/${wallet}/passphrase`,
};

export interface ActiveAccount extends Signer {
  wallet: string;
  index: number;
}

/**
 * Everything an operation needs, configured like the CLI: config dir and
 * profile (with the NANOPAY_* variables on top), the key store (unlocked once,
 * on first need), the API client, proof of work, locks and the journal.
 */
export class Session {
  readonly env: NodeJS.ProcessEnv;
  readonly dir: string;
  readonly profileName: string;
  readonly config: ConfigStore;
  readonly journal: Journal;
  readonly sendLog: SendLog;
  readonly workStore: WorkStore;
  private store: Promise<KeyStore> | undefined;

  constructor(private readonly options: SessionOptions) {
    this.env = options.env ?? process.env;
    this.dir = options.configDir ?? configDir(this.env);
    this.profileName = options.profile ?? this.env.NANOPAY_PROFILE ?? 'default';
    this.config = new ConfigStore(this.dir);
    this.journal = new Journal(stateDir(this.dir, 'journal'));
    this.sendLog = new SendLog(stateDir(this.dir, 'sends'));
    this.workStore = new WorkStore(this.dir);
  }

  profile(): ProfileRecord {
    return this.config.profile(this.profileName);
  }

  updateProfile(change: (p: ProfileRecord) => ProfileRecord): ProfileRecord {
    return this.config.updateProfile(this.profileName, change);
  }

  apiUrl(): string {
    return this.env.NANOPAY_API_URL || this.profile().apiUrl || DEFAULT_API_URL;
  }

  /** Unlocks the key store once; `create` makes a new one when there is none. */
  async keystore(mode: 'open' | 'create' = 'open'): Promise<KeyStore> {
    this.store ??= (async () => {
      const path = keystorePath(this.dir);
      if (await KeyStore.exists(path)) return KeyStore.open(path, await this.options.password('unlock'));
      if (mode === 'open') {
        throw new NanoPayError('NOT_FOUND', 'There is no wallet yet', { hint: 'Create one with: nanopay wallet create' });
      }
      return KeyStore.create(path, await this.options.password('create'));
    })();
    try {
      return await this.store;
    } catch (error) {
      this.store = undefined;
      throw error;
    }
  }

  hasKeystore(): Promise<boolean> {
    return KeyStore.exists(keystorePath(this.dir));
  }

  async apiKey(): Promise<string | undefined> {
    if (this.env.NANOPAY_API_KEY) return this.env.NANOPAY_API_KEY;
    if (!(await this.hasKeystore())) return undefined;
    return (await this.keystore()).get(secretIds.apiKey(this.profileName));
  }

  /** The API client without a key (for public calls such as /wallet/create). */
  anonymousApi(): ApiClient {
    return new ApiClient({ baseUrl: this.apiUrl(), timeoutMs: this.options.timeoutMs ?? timeoutFromEnv(this.env) });
  }

  async api(): Promise<ApiClient> {
    const apiKey = await this.apiKey();
    if (apiKey === undefined) {
      throw new NanoPayError('MISSING_API_KEY', `No API key for profile "${this.profileName}"`, {
        hint: 'Set NANOPAY_API_KEY, run nanopay config set api-key --stdin, or create a wallet with --remote.',
      });
    }
    return this.anonymousApi().withApiKey(apiKey);
  }

  /** Work made ahead if there is some for the root, else the configured provider (NANO_WORK_MODE…). */
  work(): WorkProvider {
    if (this.options.work !== undefined) return this.options.work;
    const settings = providerSettings(this.env, this.profile());
    const provide = workProvider({ ...settings, ...(this.options.workObserver === undefined ? {} : { observer: this.options.workObserver }) });
    return async (root, threshold, signal) => (await this.workStore.take(root, threshold)) ?? provide(root, threshold, signal);
  }

  async context(signal?: AbortSignal): Promise<OpsContext> {
    return { api: await this.api(), work: this.work(), journal: this.journal, ...(signal === undefined ? {} : { signal }) };
  }

  /** The wallet and account a command acts on: the active ones unless named. */
  async account(walletName?: string, index?: number): Promise<ActiveAccount> {
    const profile = this.profile();
    const wallet = walletName ?? profile.activeWallet;
    if (wallet === undefined) {
      throw new NanoPayError('NOT_FOUND', 'No active wallet', { hint: 'Create one (nanopay wallet create) or pick one (nanopay wallet use NAME).' });
    }
    const record = profile.wallets[wallet];
    if (record === undefined) throw new NanoPayError('NOT_FOUND', `No wallet named "${wallet}" in profile "${this.profileName}"`);
    const accountIndex = index ?? (walletName === undefined ? profile.activeAccount : undefined) ?? 0;
    const derived = await this.derive(wallet, record, accountIndex);
    return { wallet, index: accountIndex, address: derived.address, privateKey: derived.privateKey };
  }

  /** The address of an account without unlocking, when it was derived before. */
  knownAddress(wallet: string, index: number): string | undefined {
    return this.profile().wallets[wallet]?.accounts[String(index)];
  }

  async derive(wallet: string, record: WalletRecord, index: number): Promise<Account> {
    const store = await this.keystore();
    const secret = store.get(secretIds.wallet(this.profileName, wallet));
    if (secret === undefined) throw new NanoPayError('STORE_CORRUPT', `The secret of wallet "${wallet}" is missing from the key store`);
    if (record.kind === 'private-key') {
      if (index !== 0) throw new NanoPayError('INVALID_REQUEST', 'A wallet imported from a private key has only account 0');
      return deriveAccount({ privateKey: secret });
    }
    if (record.kind === 'seed') return deriveAccount({ seed: secret, index });
    const passphrase = store.get(secretIds.passphrase(this.profileName, wallet)) ?? '';
    return deriveAccount({ mnemonic: secret, passphrase, legacy: record.kind === 'legacy-mnemonic', index });
  }

  /**
   * Runs `fn` holding the account's lock, after settling any block a previous
   * run signed but may not have published. Every write to an account goes here.
   */
  async withAccount<T>(ctx: OpsContext, signer: Signer, fn: (head: AccountHead, settled: Settlement) => Promise<T>): Promise<T> {
    return withAccountLock(
      stateDir(this.dir, 'locks'),
      signer.address,
      async () => {
        const settled = await settleJournal(this, ctx, signer.address);
        return fn(await readAccountHead(ctx, signer.address), settled);
      },
      ctx.signal === undefined ? {} : { signal: ctx.signal },
    );
  }
}

function timeoutFromEnv(env: NodeJS.ProcessEnv): number | undefined {
  const ms = Number(env.NANOPAY_TIMEOUT_MS);
  return Number.isInteger(ms) && ms > 0 ? ms : undefined;
}
