import { NanoPayError, redactUrl } from '../../errors.js';
import { proxySettings } from '../../api/proxy.js';
import { DEFAULT_REPRESENTATIVE, normalizeAddress, rawToXno, xnoToRaw } from '../../nano/index.js';
import type { ProfileRecord } from '../../wallet/config.js';
import { checkDatabaseUrl, maskDatabaseUrl } from '../../store/url.js';
import { DEFAULT_API_URL, secretIds, type Session } from '../session.js';
import { refuseStoreSwitch } from './store-move.js';
import { parseNetwork } from '../../x402/network.js';
import { changePolicy, legacyRule, policyDocument, setLegacyRule, type PolicyDocument } from '../spending/policy-edit.js';
import { profilePolicy } from '../spending/policy.js';
import { formatDuration, parseDuration } from '../duration.js';
import { formatDecimal, parsePercent } from '../pricing/fiat.js';
import {
  DEFAULT_RATE_CACHE_S,
  DEFAULT_RATE_MAX_AGE_S,
  DEFAULT_RATE_MAX_MOVE,
  DEFAULT_RATE_QUOTE_WINDOW_S,
  MAX_RATE_CACHE_S,
  MAX_RATE_MAX_AGE_S,
  MAX_RATE_QUOTE_WINDOW_S,
} from '../pricing/rates.js';

/** Settings a user can change, with how each is checked and stored. Amounts are XNO at the edge, raw inside. */
function checkUrl(v: string, what: string, protocols: string[]): string {
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    throw new NanoPayError('INVALID_REQUEST', `"${redactUrl(v)}" is not a URL`);
  }
  if (!protocols.includes(url.protocol)) throw new NanoPayError('INVALID_REQUEST', `The ${what} must be ${protocols.map((p) => p.slice(0, -1)).join(' or ')}`);
  return v.replace(/\/+$/, '');
}

const SETTINGS = {
  'api-url': {
    describe: 'base URL of the payment service',
    env: 'NANOPAY_API_URL',
    fallback: DEFAULT_API_URL,
    get: (p: ProfileRecord) => p.apiUrl,
    set: (p: ProfileRecord, v: string): ProfileRecord => ({ ...p, apiUrl: checkUrl(v, 'API URL', ['http:', 'https:']) }),
  },
  backend: {
    describe: 'who answers for the ledger: service (the payment service) or node (a Nano node\'s RPC)',
    env: 'NANOPAY_BACKEND',
    fallback: 'service',
    get: (p: ProfileRecord) => p.backend,
    set: (p: ProfileRecord, v: string): ProfileRecord => {
      if (v !== 'service' && v !== 'node') throw new NanoPayError('INVALID_REQUEST', 'backend is service or node');
      return { ...p, backend: v };
    },
  },
  'node-url': {
    describe: 'the node\'s HTTP RPC URL (backend node)',
    env: 'NANOPAY_NODE_URL',
    get: (p: ProfileRecord) => p.nodeUrl,
    set: (p: ProfileRecord, v: string): ProfileRecord => ({ ...p, nodeUrl: checkUrl(v, 'node URL', ['http:', 'https:']) }),
  },
  'node-ws-url': {
    describe: 'the node\'s WebSocket URL, for instant detection (optional)',
    env: 'NANOPAY_NODE_WS_URL',
    get: (p: ProfileRecord) => p.nodeWsUrl,
    set: (p: ProfileRecord, v: string): ProfileRecord => ({ ...p, nodeWsUrl: checkUrl(v, 'node WebSocket URL', ['ws:', 'wss:']) }),
  },
  'database-url': {
    describe: 'a PostgreSQL URL (postgres://user@host/db): the store several servers share, instead of the profile\'s SQLite file; the password goes in PGPASSWORD or ~/.pgpass',
    env: 'NANOPAY_DATABASE_URL',
    get: (p: ProfileRecord) => p.databaseUrl,
    set: (p: ProfileRecord, v: string): ProfileRecord => ({ ...p, databaseUrl: checkDatabaseUrl(v, 'database-url', { password: 'refuse' }) }),
    // One in the environment may hold a password, and so may one kept by a version that took it: never shown.
    show: maskDatabaseUrl,
  },
  'node-auth-scheme': {
    describe: 'how node-auth is sent: bearer, basic (user:password) or key (a "key" field in the body)',
    fallback: 'bearer',
    get: (p: ProfileRecord) => p.nodeAuthScheme,
    set: (p: ProfileRecord, v: string): ProfileRecord => {
      if (v !== 'bearer' && v !== 'basic' && v !== 'key') throw new NanoPayError('INVALID_REQUEST', 'node-auth-scheme is bearer, basic or key');
      return { ...p, nodeAuthScheme: v };
    },
  },
  'limit-per-send': {
    describe: 'largest single spend, in XNO (the policy\'s per-send rule)',
    get: (p: ProfileRecord) => legacyRule(p, 'limit-per-send'),
    set: (p: ProfileRecord, v: string): ProfileRecord => setLegacyRule(p, 'limit-per-send', v),
  },
  'limit-per-day': {
    describe: 'most spent in any 24 hours, in XNO (the policy\'s day rule)',
    get: (p: ProfileRecord) => legacyRule(p, 'limit-per-day'),
    set: (p: ProfileRecord, v: string): ProfileRecord => setLegacyRule(p, 'limit-per-day', v),
  },
  'receive-minimum': {
    describe: 'pending blocks below this many XNO are not received',
    get: (p: ProfileRecord) => (p.receiveMinimum === undefined ? undefined : rawToXno(BigInt(p.receiveMinimum))),
    set: (p: ProfileRecord, v: string): ProfileRecord => ({ ...p, receiveMinimum: xnoToRaw(v).toString() }),
  },
  'x402-max': {
    describe: 'most one x402 payment may cost, in XNO (the policy\'s per-send --front-end x402 rule); none set and no --max = pay nothing',
    get: (p: ProfileRecord) => legacyRule(p, 'x402-max'),
    set: (p: ProfileRecord, v: string): ProfileRecord => setLegacyRule(p, 'x402-max', v),
  },
  'x402-auto-pay': {
    describe: 'x402 payments up to this many XNO are made without asking on a terminal',
    get: (p: ProfileRecord) => (p.x402AutoPay === undefined ? undefined : rawToXno(BigInt(p.x402AutoPay))),
    set: (p: ProfileRecord, v: string): ProfileRecord => ({ ...p, x402AutoPay: xnoToRaw(v).toString() }),
  },
  'x402-network': {
    describe: 'the x402 network (nano:mainnet, nano:beta…) of a node that does not say which it is on; one that says must agree',
    get: (p: ProfileRecord) => p.x402Network,
    set: (p: ProfileRecord, v: string): ProfileRecord => ({ ...p, x402Network: parseNetwork(v, 'x402-network') }),
  },
  representative: {
    describe: 'the representative new accounts open with (nanopay representative set changes an existing account\'s)',
    env: 'NANOPAY_REPRESENTATIVE',
    fallback: DEFAULT_REPRESENTATIVE,
    get: (p: ProfileRecord) => p.representative,
    set: (p: ProfileRecord, v: string): ProfileRecord => ({ ...p, representative: normalizeAddress(v) }),
  },
  'rate-source': {
    describe: 'prices in another currency (request --currency, the shop API\'s currency): a URL answering {"XNO": {"EUR": "0.93"}, "time": "…"} or CoinGecko\'s simple price for ids=nano',
    env: 'NANOPAY_RATE_SOURCE',
    get: (p: ProfileRecord) => p.rateSource,
    set: (p: ProfileRecord, v: string): ProfileRecord => ({ ...p, rateSource: checkUrl(v, 'rate source', ['http:', 'https:']) }),
  },
  'rate-cache': {
    describe: 'how long a process keeps the rate source\'s answer (30s, 2m)',
    fallback: formatDuration(DEFAULT_RATE_CACHE_S),
    get: (p: ProfileRecord) => (p.rateCacheSeconds === undefined ? undefined : formatDuration(p.rateCacheSeconds)),
    set: (p: ProfileRecord, v: string): ProfileRecord => ({ ...p, rateCacheSeconds: parseDuration(v, { max: MAX_RATE_CACHE_S, what: 'rate-cache' }) }),
  },
  'rate-max-age': {
    describe: 'a rate older than this is refused (RATE_STALE): by the source\'s own time, else when it was fetched',
    fallback: formatDuration(DEFAULT_RATE_MAX_AGE_S),
    get: (p: ProfileRecord) => (p.rateMaxAgeSeconds === undefined ? undefined : formatDuration(p.rateMaxAgeSeconds)),
    set: (p: ProfileRecord, v: string): ProfileRecord => ({ ...p, rateMaxAgeSeconds: parseDuration(v, { max: MAX_RATE_MAX_AGE_S, what: 'rate-max-age' }) }),
  },
  'rate-max-move': {
    describe: 'a rate more than this many percent away from the last accepted one, or from any accepted in the last hour, is refused (RATE_MOVED)',
    fallback: DEFAULT_RATE_MAX_MOVE,
    get: (p: ProfileRecord) => p.rateMaxMove,
    set: (p: ProfileRecord, v: string): ProfileRecord => ({ ...p, rateMaxMove: formatDecimal(parsePercent(v, 'rate-max-move')) }),
  },
  'rate-quote-window': {
    describe: 'how long a price in another currency holds its XNO amount: the request expires then, on either backend (15m, 1h)',
    fallback: formatDuration(DEFAULT_RATE_QUOTE_WINDOW_S),
    get: (p: ProfileRecord) => (p.rateQuoteWindowSeconds === undefined ? undefined : formatDuration(p.rateQuoteWindowSeconds)),
    set: (p: ProfileRecord, v: string): ProfileRecord => ({ ...p, rateQuoteWindowSeconds: parseDuration(v, { max: MAX_RATE_QUOTE_WINDOW_S, what: 'rate-quote-window' }) }),
  },
  'work-mode': {
    describe: 'proof of work: auto, cpu or remote',
    env: 'NANO_WORK_MODE',
    fallback: 'auto',
    get: (p: ProfileRecord) => p.workMode,
    set: (p: ProfileRecord, v: string): ProfileRecord => {
      if (v !== 'auto' && v !== 'cpu' && v !== 'remote') throw new NanoPayError('INVALID_REQUEST', 'work-mode is auto, cpu or remote');
      return { ...p, workMode: v };
    },
  },
  'work-servers': {
    describe: 'comma-separated work server URLs',
    env: 'NANO_WORK_SERVER_URL',
    get: (p: ProfileRecord) => p.workServers,
    set: (p: ProfileRecord, v: string): ProfileRecord => ({ ...p, workServers: v }),
  },
} as const;

/** Settings kept encrypted in the key store, set only from stdin. */
const SECRETS = {
  'api-key': { id: secretIds.apiKey, env: 'NANOPAY_API_KEY', describe: 'API key for the service (secret)' },
  'node-auth': { id: secretIds.nodeAuth, env: 'NANOPAY_NODE_AUTH', describe: 'key for a node provider that wants one (secret; see node-auth-scheme)' },
} as const;
type SecretName = keyof typeof SECRETS;

export type SettingName = keyof typeof SETTINGS | SecretName;
export const SETTING_NAMES = [...Object.keys(SETTINGS), ...Object.keys(SECRETS)] as SettingName[];

export function isSecretSetting(name: string): name is SecretName {
  return name in SECRETS;
}

function setting(name: string): (typeof SETTINGS)[keyof typeof SETTINGS] {
  const s = SETTINGS[name as keyof typeof SETTINGS];
  if (s === undefined) throw new NanoPayError('INVALID_REQUEST', `Unknown setting "${name}"; known: ${SETTING_NAMES.join(', ')}`);
  return s;
}

export interface SettingValue {
  name: string;
  /** The value in effect, clean (no annotation): a variable's, else the profile's, else the default. */
  value: string | null;
  /** Where the value in effect comes from; `env` names the variable in `variable`. */
  source: 'env' | 'profile' | 'default';
  variable?: string;
  description: string;
}

/** A secret: list and get only say whether it is set, and where. */
async function secretSetting(session: Session, name: SecretName): Promise<SettingValue> {
  const secret = SECRETS[name];
  const base = { name, description: secret.describe };
  if (session.env[secret.env]) return { ...base, value: '(set)', source: 'env', variable: secret.env };
  const stored = (await session.credential(name)) !== undefined;
  return { ...base, value: stored ? '(set, encrypted)' : null, source: stored ? 'profile' : 'default' };
}

/** A secret setting in the clear: what `config get --reveal` prints. */
export interface RevealedSetting {
  value: string;
  source: 'env' | 'profile';
}

/**
 * The value in effect of a secret setting, in the clear, for a backup or a
 * script: a variable's as it is, else the key store's, unlocked with the
 * password (never through the unlocked session: showing a secret always asks).
 * One that is set nowhere is NOT_FOUND, never an empty value.
 */
export async function revealSetting(session: Session, name: string): Promise<RevealedSetting> {
  if (!isSecretSetting(name)) {
    setting(name);
    throw new NanoPayError('USAGE', `${name} is not a secret, so there is nothing to reveal; only ${Object.keys(SECRETS).join(' and ')} are`, {
      hint: `Its value: nanopay config get ${name}`,
    });
  }
  const secret = SECRETS[name];
  const fromEnv = session.env[secret.env];
  if (fromEnv) return { value: fromEnv, source: 'env' };
  const stored = (await session.hasKeystore()) ? (await session.keystore()).get(secret.id(session.profileName)) : undefined;
  if (stored === undefined) {
    throw new NanoPayError('NOT_FOUND', `${name} is not set for profile "${session.profileName}"`, { hint: `Set it with: nanopay config set ${name} --stdin` });
  }
  return { value: stored, source: 'profile' };
}

export async function getSetting(session: Session, name: string): Promise<SettingValue> {
  if (isSecretSetting(name)) return secretSetting(session, name);
  const s: { describe: string; get(p: ProfileRecord): string | undefined; env?: string; fallback?: string; show?: (value: string) => string } = setting(name);
  const show = s.show ?? ((value: string) => value);
  const fromEnv = s.env === undefined ? undefined : session.env[s.env];
  if (s.env !== undefined && fromEnv) return { name, value: show(fromEnv), source: 'env', variable: s.env, description: s.describe };
  const stored = s.get(session.profile());
  if (stored !== undefined) return { name, value: show(stored), source: 'profile', description: s.describe };
  return { name, value: s.fallback ?? null, source: 'default', description: s.describe };
}

/** The profile's settings and policy, and the proxies in effect: those come from the environment only (as for curl and npm), credentials masked. */
export async function listSettings(session: Session): Promise<{ profile: string; settings: SettingValue[]; policy: PolicyDocument; proxies: ReturnType<typeof proxySettings> }> {
  const settings = [];
  for (const name of SETTING_NAMES) settings.push(await getSetting(session, name));
  return { profile: session.profileName, settings, policy: policyDocument(profilePolicy(session.profile())), proxies: proxySettings() };
}

/** The settings of versions before the spending policy: rules of it, so changing one is changing the policy (the password, a new seal). */
const POLICY_SETTINGS = ['limit-per-send', 'limit-per-day', 'x402-max'];

export async function setSetting(session: Session, name: string, value: string): Promise<SettingValue> {
  if (isSecretSetting(name)) {
    await (await session.keystore('create')).set(SECRETS[name].id(session.profileName), value.trim());
  } else {
    const s = setting(name);
    if (POLICY_SETTINGS.includes(name)) {
      s.set(session.profile(), value.trim());
      await changePolicy(session, `config set ${name} ${value.trim()}`, (p) => s.set(p, value.trim()));
    } else {
      const changed = s.set(session.profile(), value.trim());
      if (name === 'database-url') await refuseStoreSwitch(session, changed.databaseUrl);
      session.updateProfile((p) => s.set(p, value.trim()));
    }
  }
  return getSetting(session, name);
}

export async function unsetSetting(session: Session, name: string): Promise<SettingValue> {
  if (isSecretSetting(name)) {
    await (await session.keystore()).delete([SECRETS[name].id(session.profileName)]);
    return getSetting(session, name);
  }
  setting(name);
  const fields: Record<string, (p: ProfileRecord) => ProfileRecord> = {
    'api-url': ({ apiUrl: _, ...p }) => p,
    backend: ({ backend: _, ...p }) => p,
    'node-url': ({ nodeUrl: _, ...p }) => p,
    'node-ws-url': ({ nodeWsUrl: _, ...p }) => p,
    'node-auth-scheme': ({ nodeAuthScheme: _, ...p }) => p,
    'database-url': ({ databaseUrl: _, ...p }) => p,
    'limit-per-send': (p) => setLegacyRule(p, 'limit-per-send', undefined),
    'limit-per-day': (p) => setLegacyRule(p, 'limit-per-day', undefined),
    'receive-minimum': ({ receiveMinimum: _, ...p }) => p,
    'x402-max': (p) => setLegacyRule(p, 'x402-max', undefined),
    'x402-auto-pay': ({ x402AutoPay: _, ...p }) => p,
    'x402-network': ({ x402Network: _, ...p }) => p,
    representative: ({ representative: _, ...p }) => p,
    'rate-source': ({ rateSource: _, ...p }) => p,
    'rate-cache': ({ rateCacheSeconds: _, ...p }) => p,
    'rate-max-age': ({ rateMaxAgeSeconds: _, ...p }) => p,
    'rate-max-move': ({ rateMaxMove: _, ...p }) => p,
    'rate-quote-window': ({ rateQuoteWindowSeconds: _, ...p }) => p,
    'work-mode': ({ workMode: _, ...p }) => p,
    'work-servers': ({ workServers: _, ...p }) => p,
  };
  const unset = fields[name] as (p: ProfileRecord) => ProfileRecord;
  if (name === 'database-url') await refuseStoreSwitch(session, undefined);
  if (POLICY_SETTINGS.includes(name)) await changePolicy(session, `config unset ${name}`, unset);
  else session.updateProfile(unset);
  return getSetting(session, name);
}
