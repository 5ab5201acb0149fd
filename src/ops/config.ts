import { NanoPayError } from '../errors.js';
import { rawToXno, xnoToRaw } from '../nano/index.js';
import type { ProfileRecord } from '../wallet/config.js';
import { DEFAULT_API_URL, secretIds, type Session } from './session.js';

/** Settings a user can change, with how each is checked and stored. Amounts are XNO at the edge, raw inside. */
const SETTINGS = {
  'api-url': {
    describe: 'base URL of the payment service',
    env: 'NANOPAY_API_URL',
    fallback: DEFAULT_API_URL,
    get: (p: ProfileRecord) => p.apiUrl,
    set: (p: ProfileRecord, v: string): ProfileRecord => {
      let url: URL;
      try {
        url = new URL(v);
      } catch {
        throw new NanoPayError('INVALID_REQUEST', `"${v}" is not a URL`);
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new NanoPayError('INVALID_REQUEST', 'The API URL must be http(s)');
      return { ...p, apiUrl: v.replace(/\/+$/, '') };
    },
  },
  'limit-per-send': {
    describe: 'largest single send, in XNO',
    get: (p: ProfileRecord) => (p.limits?.perSend === undefined ? undefined : rawToXno(BigInt(p.limits.perSend))),
    set: (p: ProfileRecord, v: string): ProfileRecord => ({ ...p, limits: { ...p.limits, perSend: xnoToRaw(v).toString() } }),
  },
  'limit-per-day': {
    describe: 'most sent in any 24 hours, in XNO',
    get: (p: ProfileRecord) => (p.limits?.perDay === undefined ? undefined : rawToXno(BigInt(p.limits.perDay))),
    set: (p: ProfileRecord, v: string): ProfileRecord => ({ ...p, limits: { ...p.limits, perDay: xnoToRaw(v).toString() } }),
  },
  'receive-minimum': {
    describe: 'pending blocks below this many XNO are not received',
    get: (p: ProfileRecord) => (p.receiveMinimum === undefined ? undefined : rawToXno(BigInt(p.receiveMinimum))),
    set: (p: ProfileRecord, v: string): ProfileRecord => ({ ...p, receiveMinimum: xnoToRaw(v).toString() }),
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

export type SettingName = keyof typeof SETTINGS | 'api-key';
export const SETTING_NAMES = [...Object.keys(SETTINGS), 'api-key'] as SettingName[];

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

/** The API key is a secret: list and get only say whether it is set, and where. */
async function apiKeySetting(session: Session): Promise<SettingValue> {
  const description = 'API key for the service (secret)';
  if (session.env.NANOPAY_API_KEY) return { name: 'api-key', value: '(set)', source: 'env', variable: 'NANOPAY_API_KEY', description };
  const stored = (await session.hasKeystore()) && (await session.keystore()).get(secretIds.apiKey(session.profileName)) !== undefined;
  return { name: 'api-key', value: stored ? '(set, encrypted)' : null, source: stored ? 'profile' : 'default', description };
}

export async function getSetting(session: Session, name: string): Promise<SettingValue> {
  if (name === 'api-key') return apiKeySetting(session);
  const s: { describe: string; get(p: ProfileRecord): string | undefined; env?: string; fallback?: string } = setting(name);
  const fromEnv = s.env === undefined ? undefined : session.env[s.env];
  if (s.env !== undefined && fromEnv) return { name, value: fromEnv, source: 'env', variable: s.env, description: s.describe };
  const stored = s.get(session.profile());
  if (stored !== undefined) return { name, value: stored, source: 'profile', description: s.describe };
  return { name, value: s.fallback ?? null, source: 'default', description: s.describe };
}

export async function listSettings(session: Session): Promise<{ profile: string; settings: SettingValue[] }> {
  const settings = [];
  for (const name of SETTING_NAMES) settings.push(await getSetting(session, name));
  return { profile: session.profileName, settings };
}

export async function setSetting(session: Session, name: string, value: string): Promise<SettingValue> {
  if (name === 'api-key') {
    await (await session.keystore('create')).set(secretIds.apiKey(session.profileName), value.trim());
  } else {
    const s = setting(name);
    session.updateProfile((p) => s.set(p, value.trim()));
  }
  return getSetting(session, name);
}

export async function unsetSetting(session: Session, name: string): Promise<SettingValue> {
  if (name === 'api-key') {
    await (await session.keystore()).delete([secretIds.apiKey(session.profileName)]);
    return getSetting(session, name);
  }
  setting(name);
  const fields: Record<string, (p: ProfileRecord) => ProfileRecord> = {
    'api-url': ({ apiUrl: _, ...p }) => p,
    'limit-per-send': (p) => ({ ...p, limits: { ...(p.limits?.perDay === undefined ? {} : { perDay: p.limits.perDay }) } }),
    'limit-per-day': (p) => ({ ...p, limits: { ...(p.limits?.perSend === undefined ? {} : { perSend: p.limits.perSend }) } }),
    'receive-minimum': ({ receiveMinimum: _, ...p }) => p,
    'work-mode': ({ workMode: _, ...p }) => p,
    'work-servers': ({ workServers: _, ...p }) => p,
  };
  session.updateProfile(fields[name] as (p: ProfileRecord) => ProfileRecord);
  return getSetting(session, name);
}
