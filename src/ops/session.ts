import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { BackendKind, LedgerBackend } from '../api/backend.js';
import { ApiClient } from '../api/client.js';
import { NodeClient } from '../api/node-client.js';
import { NanoPayError } from '../errors.js';
import { signMessage } from '../nano/ed25519.js';
import { DEFAULT_REPRESENTATIVE, isStateBlock, isValidAddress, normalizeAddress, type Account } from '../nano/index.js';
import { CHOICE_FILE, WorkCache, kernelPicker, providerSettings, workProvider, type WorkObserver } from '../work/index.js';
import { ConfigStore, refuseLaneIndex, type ProfileRecord, type WalletRecord } from '../wallet/config.js';
import { ContactStore } from '../wallet/contacts.js';
import { HistoryLog } from '../wallet/history-log.js';
import { Journal } from '../wallet/journal.js';
import { KeyStore, MIN_PASSWORD_LENGTH } from '../wallet/keystore.js';
import { withAccountLock } from '../wallet/lock.js';
import { SendLog } from '../wallet/send-log.js';
import { openUnlocked, stopAllAgents, type CredentialName, type UnlockedKeys } from '../wallet/unlocked.js';
import { walletAccount } from '../wallet/wallet-keys.js';
import { WorkStore } from '../wallet/work-store.js';
import { configDir, keystorePath, stateDir } from '../wallet/paths.js';
import type { OpsContext, Signer, WorkProvider } from './context.js';
import { keySigner, sessionSigner } from './ledger/signers.js';
import { openStore, sqlitePath } from '../store/open.js';
import { checkDatabaseUrl } from '../store/url.js';
import type { Store } from '../store/store.js';
import type { SpendingPolicy } from '../wallet/config.js';
import { profilePolicy, stricter, type FrontEnd } from './spending/policy.js';
import type { SpendAuthority, SpendingStatus } from './spending/request.js';
import { canonicalJson, policySealHolds, policyTampered, sealProfile } from './spending/seal.js';
import { spendToWire, verdictFromWire } from './spending/wire.js';

/** The profile used when none is named. */
export const DEFAULT_PROFILE = 'default';

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
  /** Bound of one call to the service or the node, retries included (--timeout); else NANOPAY_TIMEOUT, else 60 s. */
  deadlineMs?: number;
  /** Follows local proof-of-work searches (for a spinner). */
  workObserver?: WorkObserver;
  /** Opens the existing key store instead of KeyStore.open with `password` (the CLI: an unlocked session, or prompts with retries). */
  unlock?: (path: string) => Promise<KeyStore>;
  /** How `password` gets the password ("the password file", "the password typed at a prompt"…), for the audit trail. */
  passwordVia?: string;
  /** Which front end this session serves (the spending policy's rules by front end, the audit trail); 'sdk' unless the process says. */
  frontEnd?: FrontEnd;
  /** Rules this process adds to the profile's policy (the agent's --confirm-above): stricter only, never lifting one. */
  policy?: SpendingPolicy;
  /**
   * Asks the person at the terminal about a held spend and answers its
   * approval (the CLI on a terminal only): yes needs the key store password.
   */
  askPerson?: (question: string, approvalId: string, session: Session) => Promise<boolean>;
}

/** The service a fresh profile talks to: the sandbox's default address. */
export const DEFAULT_API_URL = 'http://127.0.0.1:7076';

const credentialId = (profile: string, name: CredentialName): string => `profile/${profile}/${name}`;

export const secretIds = {
  apiKey: (profile: string) => credentialId(profile, 'api-key'),
  nodeAuth: (profile: string) => credentialId(profile, 'node-auth'),
  credential: credentialId,
  wallet: (profile: string, wallet: string) => `profile/${profile}/wallet/${wallet}/secret`,
  passphrase: (profile: string, wallet: string) => `profile/${profile}/wallet/${wallet}/passphrase`,
};

/** Where a command's keys are: the key store unlocked with the password, or the profile's unlocked session. */
type Keys = { store: KeyStore } | { unlocked: UnlockedKeys };

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
  readonly historyLog: HistoryLog;
  readonly workStore: WorkStore;
  private opened: Promise<Store> | undefined;
  /** The database URL the opened store was opened with (null: the SQLite file). */
  private openedWith: string | null | undefined;
  /** Names for addresses (send @NAME). */
  readonly contacts: ContactStore;
  private store: Promise<KeyStore> | undefined;
  /**
   * Accounts derived from the key store's secrets, by the secret they come
   * from (so a wallet made anew under the same name derives anew): a lane pays
   * every few milliseconds, and each derivation is a multiplication on the curve.
   */
  private readonly derived = new Map<string, Account>();
  private lent: Promise<Keys> | undefined;
  /** Unlocked sessions this session ended by changing the key store (a front end may say so). */
  endedSessions = 0;
  private provider: WorkProvider | undefined;
  private ahead: WorkCache | undefined;
  private node: Promise<NodeClient> | undefined;

  /** The front end this session serves: fixed when it is made, never from a caller's input. */
  readonly frontEnd: FrontEnd;

  constructor(private readonly options: SessionOptions) {
    this.frontEnd = options.frontEnd ?? 'sdk';
    this.env = options.env ?? process.env;
    this.dir = options.configDir ?? configDir(this.env);
    this.profileName = options.profile ?? this.env.NANOPAY_PROFILE ?? DEFAULT_PROFILE;
    this.config = new ConfigStore(this.dir);
    this.journal = new Journal(stateDir(this.dir, 'journal'));
    this.sendLog = new SendLog(stateDir(this.dir, 'sends'));
    this.historyLog = new HistoryLog(stateDir(this.dir, 'history'));
    this.workStore = new WorkStore(this.dir);
    this.contacts = new ContactStore(stateDir(this.dir, 'contacts'), stateDir(this.dir, 'locks'), this.profileName);
  }

  profile(): ProfileRecord {
    return this.config.profile(this.profileName);
  }

  updateProfile(change: (p: ProfileRecord) => ProfileRecord): ProfileRecord {
    return this.config.updateProfile(this.profileName, change);
  }

  /**
   * The shared PostgreSQL store's URL (NANOPAY_DATABASE_URL, else database-url), if one is set,
   * checked: one that is not a URL (a port past 65535) is refused naming where it is set.
   */
  databaseUrl(): string | undefined {
    const fromEnv = this.env.NANOPAY_DATABASE_URL;
    if (fromEnv) return checkDatabaseUrl(fromEnv, 'NANOPAY_DATABASE_URL', { password: 'allow' });
    const stored = this.profile().databaseUrl;
    return stored ? checkDatabaseUrl(stored, `database-url of profile "${this.profileName}"`, { password: 'allow' }) : undefined;
  }

  /** Whether the profile has a store to read (a database-url, or its SQLite file), without making one. */
  hasDataStore(): boolean {
    return this.opened !== undefined || this.databaseUrl() !== undefined || existsSync(sqlitePath(stateDir(this.dir, 'store'), this.profileName));
  }

  /**
   * What nanopay keeps that grows (payment requests of the node backend): the
   * profile's SQLite file, or the PostgreSQL database of database-url. Opened
   * once, on first need.
   */
  dataStore(): Promise<Store> {
    this.opened ??= (async () => {
      const databaseUrl = this.databaseUrl();
      this.openedWith = databaseUrl ?? null;
      return openStore({
        storeDir: stateDir(this.dir, 'store'),
        requestsDir: stateDir(this.dir, 'requests'),
        lockDir: stateDir(this.dir, 'locks'),
        profile: this.profileName,
        ...(databaseUrl === undefined ? {} : { databaseUrl }),
      });
    })();
    this.opened.catch(() => (this.opened = undefined));
    return this.opened;
  }

  /**
   * Whether the profile now names another store than the one this session opened: `store migrate` switched it
   * meanwhile (a command waiting for the move, a server left running). What is written there would be left behind.
   */
  storeMoved(): boolean {
    return this.opened !== undefined && this.openedWith !== undefined && (this.databaseUrl() ?? null) !== this.openedWith;
  }

  /** Closes the store if this session opened it (a session made per request must not leave one open). */
  async close(): Promise<void> {
    const opened = this.opened;
    this.opened = undefined;
    this.openedWith = undefined;
    await opened?.then((store) => store.close()).catch(() => undefined);
  }

  apiUrl(): string {
    return this.env.NANOPAY_API_URL || this.profile().apiUrl || DEFAULT_API_URL;
  }

  /** The ledger's backend: NANOPAY_BACKEND, else the profile's `backend`, else the service. */
  backendKind(): BackendKind {
    const kind = this.env.NANOPAY_BACKEND || this.profile().backend || 'service';
    if (kind !== 'service' && kind !== 'node') throw new NanoPayError('USAGE', `NANOPAY_BACKEND must be service or node, not "${kind}"`);
    return kind;
  }

  /** The representative new accounts open with: NANOPAY_REPRESENTATIVE, else the profile's, else the default. */
  representative(): string {
    const fromEnv = this.env.NANOPAY_REPRESENTATIVE;
    if (fromEnv && !isValidAddress(fromEnv)) {
      throw new NanoPayError('INVALID_ADDRESS', `NANOPAY_REPRESENTATIVE is not a valid address: "${fromEnv.slice(0, 80)}"`, { hint: 'Give a nano_… address, or unset it to use the profile\'s representative.' });
    }
    return normalizeAddress(fromEnv || this.profile().representative || DEFAULT_REPRESENTATIVE);
  }

  /** The node's WebSocket (NANOPAY_NODE_WS_URL, else node-ws-url), when one is known: instant detection. */
  nodeWsUrl(): string | undefined {
    return this.backendKind() === 'node' ? this.env.NANOPAY_NODE_WS_URL || this.profile().nodeWsUrl || undefined : undefined;
  }

  nodeUrl(): string {
    const url = this.env.NANOPAY_NODE_URL || this.profile().nodeUrl;
    if (!url) {
      throw new NanoPayError('USAGE', `Profile "${this.profileName}" uses a node, but no node URL is set`, {
        hint: 'Set one: nanopay config set node-url http://127.0.0.1:7076 (or NANOPAY_NODE_URL).',
      });
    }
    return url;
  }

  /** The node RPC client, made once: its URL, and node-auth (NANOPAY_NODE_AUTH, else the key store) when set. */
  nodeClient(): Promise<NodeClient> {
    this.node ??= (async () => {
      const url = this.nodeUrl();
      const secret = this.env.NANOPAY_NODE_AUTH || (await this.credential('node-auth'));
      const timeoutMs = this.options.timeoutMs ?? timeoutFromEnv(this.env);
      return new NodeClient({
        url,
        ...(secret ? { auth: { scheme: this.profile().nodeAuthScheme ?? 'bearer', secret } } : {}),
        ...(timeoutMs === undefined ? {} : { timeoutMs }),
        deadlineMs: this.deadlineMs(),
      });
    })();
    this.node.catch(() => (this.node = undefined));
    return this.node;
  }

  /**
   * The key store, unlocked with the password once (scrypt): for changing it,
   * for `unlock` itself and for `wallet export`. `create` makes a new one when
   * there is none. Any write ends the config dir's unlocked sessions, which hold
   * the old content.
   */
  async keystore(mode: 'open' | 'create' = 'open'): Promise<KeyStore> {
    this.store ??= (async () => {
      const path = keystorePath(this.dir);
      let store: KeyStore;
      if (await KeyStore.exists(path)) store = await (this.options.unlock?.(path) ?? KeyStore.open(path, await this.options.password('unlock')));
      else if (mode === 'open') throw new NanoPayError('NOT_FOUND', 'There is no wallet yet', { hint: 'Create one with: nanopay wallet create' });
      else store = await KeyStore.openOrCreate(path, newPassword(await this.options.password('create')));
      store.afterWrite(async () => {
        this.endedSessions += await stopAllAgents(this.dir);
      });
      if (store.sealKeyAdded) await this.sealEveryProfile(store);
      return store;
    })();
    try {
      return await this.store;
    } catch (error) {
      this.store = undefined;
      throw error;
    }
  }

  /**
   * The key store just got its seal key (made by a version before seals): the
   * policy of every profile is sealed as it stands, once, by the person who
   * gave the password. From then on only the password changes it.
   */
  private async sealEveryProfile(store: KeyStore): Promise<void> {
    for (const name of this.config.profileNames()) {
      const contacts = new ContactStore(stateDir(this.dir, 'contacts'), stateDir(this.dir, 'locks'), name);
      const named = Object.fromEntries(Object.entries(await contacts.all()).map(([n, c]) => [n, c.address]));
      this.config.updateProfile(name, (p) => sealProfile(store.sealKey(), name, p, named));
    }
  }

  /** Whether this process unlocked the key store with the password (not only an unlocked session). */
  keystoreUnlocked(): boolean {
    return this.store !== undefined;
  }

  /** How the key store password reaches this process, for the audit trail. */
  passwordVia(): string {
    return this.options.passwordVia ?? 'the key store password';
  }

  /**
   * Where the keys are, for using them: the key store this session already
   * unlocked, else the profile's unlocked session (nanopay unlock: no
   * password, no scrypt), else the key store unlocked with the password.
   */
  private async keys(): Promise<Keys> {
    if (this.store !== undefined) return { store: await this.keystore() };
    this.lent ??= (async () => {
      const shared = this.profile().sessionSocket;
      const unlocked = await openUnlocked(this.dir, this.profileName, keystorePath(this.dir), shared);
      if (unlocked === undefined && shared !== undefined) {
        throw new NanoPayError('PASSWORD_REQUIRED', `The unlocked session this profile signs through (${shared}) is not running: it expired or was locked`, {
          hint: 'Its owner unlocks it again (nanopay unlock --socket …); this profile holds no key of its own.',
        });
      }
      return unlocked === undefined ? { store: await this.keystore() } : { unlocked };
    })();
    try {
      return await this.lent;
    } catch (error) {
      this.lent = undefined;
      throw error;
    }
  }

  /** A bearer credential of the profile in the key store (the API key, node-auth), from wherever the keys are. */
  async credential(name: CredentialName): Promise<string | undefined> {
    if (!(await this.hasKeystore()) && this.profile().sessionSocket === undefined) return undefined;
    const keys = await this.keys();
    return 'unlocked' in keys ? keys.unlocked.credential(name) : keys.store.get(secretIds.credential(this.profileName, name));
  }

  hasKeystore(): Promise<boolean> {
    return KeyStore.exists(keystorePath(this.dir));
  }

  async apiKey(): Promise<string | undefined> {
    return this.env.NANOPAY_API_KEY || this.credential('api-key');
  }

  /** The API client without a key (for public calls such as /wallet/create). */
  anonymousApi(): ApiClient {
    return new ApiClient({ baseUrl: this.apiUrl(), timeoutMs: this.options.timeoutMs ?? timeoutFromEnv(this.env), deadlineMs: this.deadlineMs() });
  }

  /** How long one call may wait for the service, the node or an x402 seller, retries included (--timeout, NANOPAY_TIMEOUT). */
  deadlineMs(): number {
    if (this.options.deadlineMs !== undefined) return this.options.deadlineMs;
    const given = this.env.NANOPAY_TIMEOUT;
    return given === undefined || given.trim() === '' ? DEFAULT_CALL_TIMEOUT_S * 1000 : parseCallTimeout(given, 'NANOPAY_TIMEOUT') * 1000;
  }

  /**
   * How long a payment's proof of work may take: --timeout or NANOPAY_TIMEOUT
   * when given, else 10 minutes (at the live send threshold a CPU needs tens of
   * seconds on average, often more than one call's default bound).
   */
  workBoundMs(): number {
    const given = this.env.NANOPAY_TIMEOUT;
    if (this.options.deadlineMs === undefined && (given === undefined || given.trim() === '')) return 10 * 60_000;
    return this.deadlineMs();
  }

  /** The ledger's backend for operations: the service with its API key, or the node. */
  async api(): Promise<LedgerBackend> {
    return this.backendKind() === 'node' ? this.nodeClient() : this.serviceApi();
  }

  /** The payment service with the profile's API key (what only the service offers: credits, top-ups). */
  async serviceApi(): Promise<ApiClient> {
    const apiKey = await this.apiKey();
    if (apiKey === undefined) {
      throw new NanoPayError('MISSING_API_KEY', `No API key for profile "${this.profileName}"`, {
        hint: 'Set NANOPAY_API_KEY, run nanopay config set api-key --stdin, or create a wallet with --remote.',
      });
    }
    return this.anonymousApi().withApiKey(apiKey);
  }

  /** The configured way to make work (NANO_WORK_MODE…), made once. */
  private workProvider(): WorkProvider {
    if (this.provider === undefined) {
      const settings = { ...providerSettings(this.env, this.profile()), kernel: kernelPicker(join(this.dir, CHOICE_FILE)) };
      // A node backend's node is one more work server (public nodes often refuse: then the next provider).
      if (this.backendKind() === 'node') settings.extra = { name: 'the node (work_generate)', generate: async (root, threshold) => (await this.nodeClient()).workGenerate(root, threshold) };
      this.provider = this.options.work ?? workProvider({ ...settings, ...(this.options.workObserver === undefined ? {} : { observer: this.options.workObserver }) });
    }
    return this.provider;
  }

  /**
   * Work made ahead and kept in memory (the toolset while idle), on top of the
   * configured provider: it never replaces it, so NANO_WORK_MODE holds.
   */
  workAhead(): WorkCache {
    this.ahead ??= new WorkCache(this.workProvider());
    return this.ahead;
  }

  /** Work stored ahead (work precache) or made ahead if there is some for the root, else the configured provider. */
  work(): WorkProvider {
    const provide = this.ahead?.provider ?? this.workProvider();
    return async (root, threshold, signal) => (await this.workStore.take(root, threshold)) ?? provide(root, threshold, signal);
  }

  /** The spending policy in force: the profile's (read anew each time), with what this process adds. */
  policy(profile: ProfileRecord = this.profile()): SpendingPolicy {
    const own = profilePolicy(profile);
    return this.options.policy === undefined ? own : stricter(own, this.options.policy);
  }

  /**
   * The seal key, once `profile` (what the policy in force was read from) is
   * checked against its seal: spends judged in this process need the key
   * store opened with the password. A profile with no wallet spends nothing.
   */
  private async sealKey(profile: ProfileRecord): Promise<Buffer> {
    const key = (await this.keystore()).sealKey();
    // Read again: opening the key store may have just sealed it (a key store made before seals).
    const now = this.profile();
    if (Object.keys(now.wallets).length > 0 && !policySealHolds(key, this.profileName, now)) throw policyTampered(this.profileName, now);
    if (canonicalJson([profilePolicy(profile), profile.policyContacts ?? {}]) !== canonicalJson([profilePolicy(now), now.policyContacts ?? {}])) {
      throw new NanoPayError('CONFLICT', 'The spending policy changed while this spend was being judged; nothing was signed', { hint: 'Run it again.' });
    }
    return key;
  }

  /** The unlocked session, when the keys are in one: it judges this process's spends by the scope it was granted. */
  private async authority(): Promise<SpendAuthority | undefined> {
    const keys = await this.keys();
    if (!('unlocked' in keys)) return undefined;
    const { unlocked } = keys;
    return { judge: async (spend, mode) => verdictFromWire(await unlocked.judge(spendToWire(spend), mode)), status: async () => (await unlocked.spending()) as unknown as SpendingStatus };
  }

  async context(signal?: AbortSignal): Promise<OpsContext> {
    const lockDir = stateDir(this.dir, 'locks');
    const profile = this.profile();
    const { askPerson } = this.options;
    return {
      api: await this.api(),
      work: this.work(),
      journal: this.journal,
      sendLog: this.sendLog,
      history: this.historyLog,
      lock: (address, fn) => withAccountLock(lockDir, address, fn, signal === undefined ? {} : { signal }),
      frontEnd: this.frontEnd,
      policy: this.policy(profile),
      contacts: async () => profile.policyContacts ?? {},
      store: () => this.dataStore(),
      sealKey: () => this.sealKey(profile),
      authority: () => this.authority(),
      // A profile signing through another user's session has no key store here to approve with.
      ...(askPerson === undefined || profile.sessionSocket !== undefined ? {} : { askPerson: (question: string, approvalId: string) => askPerson(question, approvalId, this) }),
      representative: this.representative(),
      profile: this.profileName,
      now: Date.now,
      ...(signal === undefined ? {} : { signal }),
    };
  }

  /** The wallet and account index a command acts on: the active ones unless named. */
  private pick(walletName?: string, index?: number): { wallet: string; record: WalletRecord; index: number } {
    const profile = this.profile();
    const wallet = walletName ?? profile.activeWallet;
    if (wallet === undefined) {
      throw new NanoPayError('NOT_FOUND', 'No active wallet', { hint: 'Create one (nanopay wallet create) or pick one (nanopay wallet use NAME).' });
    }
    const record = profile.wallets[wallet];
    if (record === undefined) throw new NanoPayError('NOT_FOUND', `No wallet named "${wallet}" in profile "${this.profileName}"`);
    const picked = index ?? (walletName === undefined ? profile.activeAccount : undefined) ?? 0;
    refuseLaneIndex(picked);
    return { wallet, record, index: picked };
  }

  /** The account a command signs for: through the unlocked session when one runs, else with the password. */
  async account(walletName?: string, index?: number): Promise<ActiveAccount> {
    const picked = this.pick(walletName, index);
    const signer = await this.derive(picked.wallet, picked.record, picked.index);
    return { wallet: picked.wallet, index: picked.index, address: signer.address, sign: signer.sign };
  }

  /**
   * The account's signature of a nano-session opening or receipt (never 32
   * bytes, so it can never pass for a block's signature): in the unlocked
   * session when one runs, else with the key store password.
   */
  async signSessionMessage(message: Uint8Array, walletName?: string, index?: number): Promise<{ address: string; signature: string }> {
    const picked = this.pick(walletName, index);
    const keys = await this.keys();
    if ('unlocked' in keys) {
      const signature = await keys.unlocked.signSessionMessage(picked.wallet, picked.index, message);
      const held = await keys.unlocked.account(picked.wallet, picked.index);
      if (signature !== undefined && held !== undefined) return { address: held.address, signature };
    }
    const account = await this.privateAccount(picked.wallet, picked.record, picked.index);
    return { address: account.address, signature: signMessage(message, account) };
  }

  /** The address of the account a command reads: from the settings when it was derived before, without unlocking. */
  async address(walletName?: string, index?: number): Promise<string> {
    const picked = this.pick(walletName, index);
    return picked.record.accounts[String(picked.index)] ?? (await this.derive(picked.wallet, picked.record, picked.index)).address;
  }

  /**
   * A wallet's account, to sign with: in the unlocked session when one runs
   * (the key stays there), else derived here from the key store unlocked with
   * the password.
   */
  async derive(wallet: string, record: WalletRecord, index: number): Promise<Signer> {
    const keys = await this.keys();
    if ('unlocked' in keys) {
      const held = await keys.unlocked.account(wallet, index);
      const own = async (): Promise<Signer> => keySigner(await this.privateAccount(wallet, record, index));
      const previousOf = async (hash: string) => {
        const { contents } = await (await this.api()).blockInfo(hash);
        if (isStateBlock(contents)) return contents;
        // The session judges a spend by the balance the block before it holds, which a legacy block may not say.
        throw new NanoPayError('UNSUPPORTED_BLOCK', `The head of this account is a legacy ${contents.type} block, which the unlocked session cannot judge a spend by`, {
          hint: 'Sign this first block with the key store password (nanopay lock, then run it again); later blocks are state blocks.',
        });
      };
      if (held !== undefined) return sessionSigner(held.address, { wallet, index }, (block, shown) => keys.unlocked.sign(wallet, index, block, shown), own, previousOf);
    }
    return keySigner(await this.privateAccount(wallet, record, index));
  }

  /** A wallet's account with its private key: always from the key store unlocked with the password, never the unlocked session. */
  async privateAccount(wallet: string, record: WalletRecord, index: number): Promise<Account> {
    const store = await this.keystore();
    const secret = store.get(secretIds.wallet(this.profileName, wallet));
    if (secret === undefined) throw new NanoPayError('STORE_CORRUPT', `The secret of wallet "${wallet}" is missing from the key store`);
    const passphrase = store.get(secretIds.passphrase(this.profileName, wallet));
    const key = JSON.stringify([record.kind, secret, passphrase ?? null, index]);
    const found = this.derived.get(key);
    if (found !== undefined) return found;
    const account = walletAccount({ kind: record.kind, secret, ...(passphrase === undefined ? {} : { passphrase }) }, index);
    if (this.derived.size >= MAX_DERIVED) this.derived.clear();
    this.derived.set(key, account);
    return account;
  }
}

/** Accounts a session keeps derived: the lanes and accounts of a wallet or two. */
const MAX_DERIVED = 64;

/** The bound of one call unless --timeout or NANOPAY_TIMEOUT says otherwise: the three attempts of a read (15 s each) and their waits fit. */
const DEFAULT_CALL_TIMEOUT_S = 60;

/** "30", "30s", "2m", "1m30s" → seconds, from 1 s to an hour: the bound of one call (`from` names the flag or variable). */
export function parseCallTimeout(text: string, from: string): number {
  const match = /^(?:(\d{1,4})m)?(?:(\d{1,4})s?)?$/.exec(text.trim());
  const seconds = match === null || text.trim() === '' ? NaN : Number(match[1] ?? 0) * 60 + Number(match[2] ?? 0);
  if (!(seconds >= 1 && seconds <= 3600)) {
    throw new NanoPayError('USAGE', `${from} "${text.slice(0, 40)}" is not a timeout: write it like 30, 30s, 2m or 1m30s (1 s to 60 m)`);
  }
  return seconds;
}

function timeoutFromEnv(env: NodeJS.ProcessEnv): number | undefined {
  const ms = Number(env.NANOPAY_TIMEOUT_MS);
  return Number.isInteger(ms) && ms > 0 ? ms : undefined;
}

/** A new key store's password, refused under the minimum length whatever gave it (a prompt, a file, stdin, a variable). */
function newPassword(password: string): string {
  if (password.length > 0 && password.length < MIN_PASSWORD_LENGTH) {
    throw new NanoPayError('PASSWORD_TOO_SHORT', `A new key store's password needs at least ${MIN_PASSWORD_LENGTH} characters, not ${password.length}; nothing was created`, {
      hint: 'Choose a longer one (a few words make a good one).',
    });
  }
  return password;
}
