import { readFileSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { NanoPayError } from '../../errors.js';
import { parseDuration } from '../duration.js';
import type { KeyStore } from '../../wallet/keystore.js';
import { CREDENTIAL_NAMES, startAgent, stopAgent, stopAllAgents, stopShared, type UnlockedContent } from '../../wallet/unlocked.js';
import { keystorePath } from '../../wallet/paths.js';
import { secretIds, type Session } from '../session.js';
import { profilePolicy, SESSION_SCOPES, type SessionScope } from '../spending/policy.js';
import { policySealHolds, policyTampered } from '../spending/seal.js';
import { withPasswordFor } from '../spending/audit.js';

/** How long a session lasts unless told: a working session, not a day. */
export const DEFAULT_UNLOCK = '15m';
/** The longest a session may last. */
const MAX_UNLOCK_SECONDS = 12 * 3600;

/** "30s", "15m", "2h", "1h30m" → seconds, from 1 s up to 12 h. */
export function parseUnlockDuration(text: string): number {
  return parseDuration(text, { max: MAX_UNLOCK_SECONDS, what: 'An unlocked session' });
}

export interface UnlockResult {
  profile: string;
  /** When the session ends by itself (ISO 8601). */
  expires_at: string;
  seconds: number;
  /** The agent's process id. */
  pid: number;
  socket: string;
  /** An earlier session of the profile was running and was ended first. */
  replaced: boolean;
  /** Whose spends it judges as: a front end, or all (every front end's rules at once). */
  scope: SessionScope;
  /** Whether the session's memory is closed to the user's other processes (the native addon was there). */
  undumpable: boolean;
  /** The group whose users reach a shared session, if it is one. */
  group?: string;
}

/** A group's id, from its number or its name in /etc/group. */
function groupId(group: string): number {
  if (/^[0-9]+$/.test(group)) return Number(group);
  const line = readFileSync('/etc/group', 'utf8').split('\n').find((l) => l.split(':')[0] === group);
  const gid = line === undefined ? undefined : Number(line.split(':')[2]);
  if (gid === undefined || !Number.isInteger(gid)) throw new NanoPayError('NOT_FOUND', `There is no group "${group}" on this machine`, { hint: 'Create it (groupadd) and add the agent\'s user to it first.' });
  return gid;
}

/**
 * What the profile's unlocked session holds: each wallet's secret with its
 * kind (to derive), and the credentials. A wallet whose secret is missing is
 * not held (using it through the session says so; with the password, the
 * store is reported damaged).
 */
function contentOf(session: Session, store: KeyStore): UnlockedContent {
  const profile = session.profileName;
  const content: UnlockedContent = { wallets: {}, credentials: {} };
  for (const [name, record] of Object.entries(session.profile().wallets)) {
    const secret = store.get(secretIds.wallet(profile, name));
    const passphrase = store.get(secretIds.passphrase(profile, name));
    if (secret !== undefined) content.wallets[name] = { kind: record.kind, secret, ...(passphrase === undefined ? {} : { passphrase }) };
  }
  for (const name of CREDENTIAL_NAMES) {
    const secret = store.get(secretIds.credential(profile, name));
    if (secret !== undefined) content.credentials[name] = secret;
  }
  return content;
}

/**
 * Unlocks the key store (with the password, once) and starts the profile's
 * unlocked session: a background process that signs for the user's commands
 * (and lends them the credentials) until it expires, `lock` ends it, or the
 * key store changes.
 */
export async function unlock(session: Session, input: { seconds: number; scope?: SessionScope; socket?: string; group?: string }): Promise<UnlockResult> {
  if (!Number.isInteger(input.seconds) || input.seconds < 1 || input.seconds > MAX_UNLOCK_SECONDS) {
    throw new NanoPayError('USAGE', `An unlocked session lasts from 1 to ${MAX_UNLOCK_SECONDS} seconds`);
  }
  const scope = input.scope ?? 'all';
  if (!(SESSION_SCOPES as readonly string[]).includes(scope)) throw new NanoPayError('USAGE', `--scope is one of ${SESSION_SCOPES.join(', ')}, not "${scope}"`);
  if ((input.socket === undefined) !== (input.group === undefined)) throw new NanoPayError('USAGE', 'A shared session takes both --socket PATH and --group GROUP');
  if (input.socket !== undefined && !isAbsolute(input.socket)) throw new NanoPayError('USAGE', `--socket takes an absolute path, not "${input.socket}"`);
  if (process.platform === 'win32') throw new NanoPayError('USAGE', 'An unlocked session needs Unix sockets; it is not available on Windows');
  const shareGid = input.group === undefined ? undefined : groupId(input.group);
  const store = await withPasswordFor(session, { kind: 'session', rule: `unlock --scope ${scope}` }, () => session.keystore());
  // The grant is the sealed policy: a policy changed behind the password's back grants nothing.
  const profile = session.profile();
  const sealKey = store.sealKey();
  if (Object.keys(profile.wallets).length > 0 && !policySealHolds(sealKey, session.profileName, profile)) throw policyTampered(session.profileName, profile);
  const replaced = (input.socket === undefined ? await stopAgent(session.dir, session.profileName) : await stopShared(input.socket)) === 'stopped';
  const expiresAt = Date.now() + input.seconds * 1000;
  const databaseUrl = session.databaseUrl();
  const started = await startAgent({
    dir: session.dir,
    profile: session.profileName,
    keystore: keystorePath(session.dir),
    fingerprint: store.fingerprint(),
    expiresAt,
    content: contentOf(session, store),
    grant: {
      scope,
      policy: profilePolicy(profile),
      contacts: profile.policyContacts ?? {},
      sealKey: sealKey.toString('hex'),
      configDir: session.dir,
      ...(databaseUrl === undefined ? {} : { databaseUrl }),
      ...(shareGid === undefined ? {} : { shareGid }),
    },
    ...(input.socket === undefined ? {} : { socket: input.socket }),
  });
  return {
    profile: session.profileName,
    expires_at: new Date(expiresAt).toISOString(),
    seconds: input.seconds,
    pid: started.pid,
    socket: started.socket,
    replaced,
    scope,
    undumpable: started.undumpable,
    ...(input.group === undefined ? {} : { group: input.group }),
  };
}

export interface LockResult {
  /** The profile, or null for every profile (`all`). */
  profile: string | null;
  /** How many unlocked sessions were ended (0: none was running). */
  ended: number;
  /** A socket left by a session that had died was removed. */
  stale_removed: boolean;
}

/** Ends the profile's unlocked session (or, with `all`, every one of the config dir; with `socket`, the shared one there) at once. Fine when none runs. */
export async function lock(session: Session, input: { all?: boolean; socket?: string } = {}): Promise<LockResult> {
  if (input.all) return { profile: null, ended: await stopAllAgents(session.dir), stale_removed: false };
  if (input.socket !== undefined) {
    const outcome = await stopShared(input.socket);
    return { profile: session.profileName, ended: outcome === 'stopped' ? 1 : 0, stale_removed: outcome === 'stale' };
  }
  const outcome = await stopAgent(session.dir, session.profileName);
  return { profile: session.profileName, ended: outcome === 'stopped' ? 1 : 0, stale_removed: outcome === 'stale' };
}
