import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { NanoPayError } from '../errors.js';
import { ensurePrivateDirSync, readOwnFileSync, writeFileAtomicSync } from '../fs/secure-fs.js';
import { withConfigLockSync } from './lock.js';
import { stateDir } from './paths.js';

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
  /** The wallet's payment lanes (nanopay lanes set), when it has some. */
  lanes?: LaneSettings;
}

/**
 * The account index of lane 0: far above the indexes accounts and fresh
 * request addresses take (0, 1, 2, … counted up from the highest in use), so
 * a lane is never handed out as anything else; indexes from here on are
 * reserved for lanes (--account refuses them). Below 2^31, so every kind of
 * wallet derives them (BIP44's hardened indexes included).
 */
export const LANE_BASE = 0x7fff0000;

/** Whether an account index is reserved for payment lanes. */
export const isLaneIndex = (index: number): boolean => index >= LANE_BASE;

/** Refuses a lane's index where an account is named (--account, wallet use): lanes are nanopay lanes' own. */
export function refuseLaneIndex(index: number): void {
  if (!isLaneIndex(index)) return;
  throw new NanoPayError('USAGE', `Account ${index} of a wallet is one of its payment lanes, which only nanopay lanes and x402 payments use`, {
    hint: `Name an account below ${LANE_BASE}, or see the lanes with: nanopay lanes`,
  });
}

/** A pool of the wallet's own accounts kept funded for parallel x402 payments (ops/lanes/). */
export interface LaneSettings {
  /** How many lanes: the accounts LANE_BASE … LANE_BASE + count − 1. */
  count: number;
  /** What each lane is kept funded with, in raw. */
  fundRaw: string;
  /** The account index lanes are funded from and emptied into. */
  from: number;
  /** The lanes' addresses by lane number, so they are shown without unlocking. */
  accounts: Record<string, string>;
}

/** The settings of versions before the spending policy; read as its rules (ops/spending/policy.ts), never written again. */
export interface Limits {
  /** Raw, as decimal strings: JSON has no bigint. */
  perSend?: string;
  perDay?: string;
}

/** What one scope of the spending policy allows, in raw (decimal strings). Windows roll: the last hour, 24 hours, 30 days. */
export interface RuleLimits {
  perSend?: string;
  hour?: string;
  day?: string;
  month?: string;
  /** A spend above this waits for a person's yes. */
  askAbove?: string;
  /** A spend that would take the last hour's spending made without a person's yes above this waits for one. */
  askAboveHour?: string;
}

/** The profile's spending policy (ops/spending/policy.ts says what each rule means). */
export interface SpendingPolicy extends RuleLimits {
  /** By address, or by contact (@name). */
  recipients?: Record<string, RuleLimits>;
  /** x402 payments, by the host they pay (example.com, example.com:8080, *.example.com). */
  hosts?: Record<string, RuleLimits>;
  /** By front end (cli, toolset, mcp, agent, sdk), and x402 for every x402 payment. */
  frontEnds?: Record<string, RuleLimits>;
  allow?: { recipients?: string[]; hosts?: string[] };
  deny?: { recipients?: string[]; hosts?: string[] };
  /** How long an approval may wait to be answered and used, in seconds. */
  approvalTtlS?: number;
}

export interface ProfileRecord {
  apiUrl?: string;
  activeWallet?: string;
  activeAccount?: number;
  limits?: Limits;
  policy?: SpendingPolicy;
  /** The addresses of the contacts the policy names (@name), as they were when it was sealed: a rule means what was sealed. */
  policyContacts?: Record<string, string>;
  /** The policy's seal (HMAC-SHA256 by the key store's seal key, ops/spending/seal.ts): only the password writes the policy. */
  policySeal?: string;
  receiveMinimum?: string;
  /** The most one x402 payment may cost (raw); without it (or --max) nanopay fetch pays nothing. */
  x402Max?: string;
  /** x402 payments up to this (raw) are made without asking on a terminal. */
  x402AutoPay?: string;
  /** The x402 network of a node backend that does not say (nano:mainnet…). */
  x402Network?: string;
  workMode?: 'auto' | 'cpu' | 'remote';
  workServers?: string;
  /** Who answers for the ledger: the payment service (default) or a Nano node's RPC. */
  backend?: 'service' | 'node';
  nodeUrl?: string;
  nodeWsUrl?: string;
  /** How node-auth (a secret, in the key store) is sent. */
  nodeAuthScheme?: 'bearer' | 'basic' | 'key';
  /** The shared PostgreSQL store (no password: that is in PGPASSWORD or ~/.pgpass). */
  databaseUrl?: string;
  /** The socket of an unlocked session another user shares with this one (unlock --socket --group): the keys are there. */
  sessionSocket?: string;
  /** The representative new accounts open with (a nano_ address); existing ones change it with a change block. */
  representative?: string;
  /** Prices in the shop's currency: the rate source's URL (ops/pricing/rates.ts). */
  rateSource?: string;
  /** Seconds a rate source's answer is kept by a process. */
  rateCacheSeconds?: number;
  /** Seconds after which a rate is too old to price a request. */
  rateMaxAgeSeconds?: number;
  /** How far (percent, a decimal) a rate may move from the last accepted one. */
  rateMaxMove?: string;
  /** Seconds a price in another currency holds its XNO amount: its request expires then. */
  rateQuoteWindowSeconds?: number;
  wallets: Record<string, WalletRecord>;
}

interface ConfigShape {
  version: 1;
  profiles: Record<string, ProfileRecord>;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The shape the store relies on, down to each wallet record; anything else is a damaged file. */
function isConfigShape(value: unknown): value is ConfigShape {
  if (!isObject(value) || value.version !== 1 || !isObject(value.profiles)) return false;
  return Object.values(value.profiles).every(
    (profile) => isObject(profile) && isObject(profile.wallets) && Object.values(profile.wallets).every((wallet) => isObject(wallet) && isObject(wallet.accounts)),
  );
}

/**
 * Plain settings in `config.json` (0600, in a 0700 dir). Only names, addresses
 * and settings live here; every secret is in the encrypted key store. Each read
 * looks at the file, so another process's change is seen; each write replaces
 * it atomically. A damaged file or a link in its place is refused, never rewritten.
 */
export class ConfigStore {
  private readonly path: string;
  /**
   * The file's text as last read, and which file that was (inode, size, change
   * and modification times): a payment reads the settings several times, and
   * one lstat tells whether the file is still the one read (every write of
   * ours is a rename, so a new inode). Parsed on each read: callers get their own copy.
   */
  private last: { identity: string; text: string } | undefined;

  constructor(readonly dir: string) {
    ensurePrivateDirSync(dir);
    this.path = join(dir, 'config.json');
    this.read();
  }

  profile(name: string): ProfileRecord {
    return this.read().profiles[name] ?? { wallets: {} };
  }

  profileNames(): string[] {
    return Object.keys(this.read().profiles);
  }

  /** Read, changed and written holding the file's lock: another process's change made meanwhile is never lost. */
  updateProfile(name: string, change: (profile: ProfileRecord) => ProfileRecord): ProfileRecord {
    return withConfigLockSync(stateDir(this.dir, 'locks'), () => {
      const config = this.read();
      const next = change(structuredClone(config.profiles[name] ?? { wallets: {} }));
      const written: ConfigShape = { ...config, profiles: { ...config.profiles, [name]: next } };
      writeFileAtomicSync(this.path, `${JSON.stringify(written, null, '\t')}\n`);
      return next;
    });
  }

  private read(): ConfigShape {
    const text = this.text();
    if (text === undefined) return { version: 1, profiles: {} };
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      throw this.damaged(error);
    }
    if (!isConfigShape(parsed)) throw this.damaged();
    return parsed;
  }

  private text(): string | undefined {
    const stats = lstatSync(this.path, { bigint: true, throwIfNoEntry: false });
    const identity = stats?.isFile() === true ? `${stats.dev}:${stats.ino}:${stats.size}:${stats.ctimeNs}:${stats.mtimeNs}` : undefined;
    if (identity !== undefined && this.last?.identity === identity) return this.last.text;
    const text = readOwnFileSync(this.path);
    this.last = identity === undefined || text === undefined ? undefined : { identity, text };
    return text;
  }

  private damaged(cause?: unknown): NanoPayError {
    return new NanoPayError('STORE_CORRUPT', `The settings file ${this.path} is damaged; it was left untouched`, {
      hint: 'Fix or move away config.json; your keys are in keystore.json and were not affected.',
      ...(cause === undefined ? {} : { cause }),
    });
  }
}
