import { NanoPayError } from '../../errors.js';
import { parseDuration } from '../duration.js';
import type { KeyStore } from '../../wallet/keystore.js';
import { CREDENTIAL_NAMES, startAgent, stopAgent, stopAllAgents, type UnlockedContent } from '../../wallet/unlocked.js';
import { keystorePath } from '../../wallet/paths.js';
import { secretIds, type Session } from '../session.js';

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
export async function unlock(session: Session, input: { seconds: number }): Promise<UnlockResult> {
  if (!Number.isInteger(input.seconds) || input.seconds < 1 || input.seconds > MAX_UNLOCK_SECONDS) {
    throw new NanoPayError('USAGE', `An unlocked session lasts from 1 to ${MAX_UNLOCK_SECONDS} seconds`);
  }
  if (process.platform === 'win32') throw new NanoPayError('USAGE', 'An unlocked session needs Unix sockets; it is not available on Windows');
  const store = await session.keystore();
  const replaced = (await stopAgent(session.dir, session.profileName)) === 'stopped';
  const expiresAt = Date.now() + input.seconds * 1000;
  const started = await startAgent({
    dir: session.dir,
    profile: session.profileName,
    keystore: keystorePath(session.dir),
    fingerprint: store.fingerprint(),
    expiresAt,
    content: contentOf(session, store),
  });
  return { profile: session.profileName, expires_at: new Date(expiresAt).toISOString(), seconds: input.seconds, pid: started.pid, socket: started.socket, replaced };
}

export interface LockResult {
  /** The profile, or null for every profile (`all`). */
  profile: string | null;
  /** How many unlocked sessions were ended (0: none was running). */
  ended: number;
  /** A socket left by a session that had died was removed. */
  stale_removed: boolean;
}

/** Ends the profile's unlocked session (or, with `all`, every one of the config dir) at once. Fine when none runs. */
export async function lock(session: Session, input: { all?: boolean } = {}): Promise<LockResult> {
  if (input.all) return { profile: null, ended: await stopAllAgents(session.dir), stale_removed: false };
  const outcome = await stopAgent(session.dir, session.profileName);
  return { profile: session.profileName, ended: outcome === 'stopped' ? 1 : 0, stale_removed: outcome === 'stale' };
}
