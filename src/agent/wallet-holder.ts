import { randomBytes } from 'node:crypto';
import { stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { NanoPayError } from '../errors.js';
import { ensurePrivateDir, readPrivateFile } from '../fs/secure-fs.js';
import { Session, type SessionOptions } from '../ops/session.js';
import { createRemoteWallet, createWallet } from '../ops/profile/wallet.js';
import { openToolsetSession } from '../toolset/session.js';
import { KeyStore } from '../wallet/keystore.js';
import { UnlockGate } from './unlock-gate.js';
import type { SpendingPolicy } from '../wallet/config.js';

/** Where the agent's wallet comes from and how long its unlocked keys live. */
export interface WalletHolder {
  readonly strict: boolean;
  /** Runs `fn` with a session that may unlock the key store. */
  use<T>(fn: (session: Session) => Promise<T>): Promise<T>;
  /** The account address, without unlocking. */
  address(): Promise<string>;
  /** Sessions that unlocked the key store and are still held: 0 between requests in strict mode. */
  unlockedSessions(): number;
  /** Called after a tool that changed the account. */
  afterWrite(): void;
}

/**
 * What `agent --confirm-above` adds to the spending policy for its process: the
 * agent's spends made without a person's yes in the last hour stay within it
 * (ask-above-hour --front-end agent); one that would pass it waits for an approval.
 */
export function confirmAbovePolicy(raw: bigint): SpendingPolicy {
  return { frontEnds: { agent: { askAboveHour: raw.toString() } } };
}

/** Non-strict: the profile's wallet, unlocked once at start, like `serve`. */
export async function profileHolder(options: SessionOptions, log: (line: string) => void): Promise<WalletHolder> {
  const { session, refreshWork } = await openToolsetSession({ ...options, frontEnd: 'agent' }, log);
  return {
    strict: false,
    use: (fn) => fn(session),
    address: () => session.address(),
    unlockedSessions: () => 1,
    afterWrite: refreshWork,
  };
}

export interface StrictOptions {
  /** The agent's own config dir: its key store, settings, journal and password file. */
  dir: string;
  /** Rules the agent adds to its profile's spending policy (--confirm-above). */
  policy?: SpendingPolicy;
  env: NodeJS.ProcessEnv;
  log: (line: string) => void;
}

const PASSWORD_FILE = 'agent-password';

/**
 * Strict (custodial) mode: the agent owns its wallet. At first start it makes
 * a password (kept in a 0600 file, unless AI_WALLET_PASSWORD gives one) and a
 * wallet; afterwards every request builds a fresh session, which unlocks the
 * key store, acts and is let go, so no unlocked key outlives a request.
 */
export async function strictHolder(options: StrictOptions): Promise<WalletHolder> {
  const { dir, env, log, policy } = options;
  await ensurePrivateDir(dir);
  const passwordPath = join(dir, PASSWORD_FILE);
  const readPassword = async (): Promise<string> => {
    if (env.AI_WALLET_PASSWORD) return env.AI_WALLET_PASSWORD;
    // A password file others could read is refused (UNSAFE_PATH), like ssh refuses a loose private key.
    const text = await readPrivateFile(passwordPath).catch((error: unknown) => {
      if (error instanceof NanoPayError) throw error;
      throw new NanoPayError('PASSWORD_REQUIRED', `The agent's password file ${passwordPath} cannot be read`, {
        hint: 'Set AI_WALLET_PASSWORD to the password the agent wallet was made with, or restore the file.',
      });
    });
    return text.trim();
  };
  const live = new Set<Session>();
  const gate = new UnlockGate();
  const fresh = (onUnlock?: (session: Session) => void): Session => {
    const session: Session = new Session({
      configDir: dir,
      env,
      profile: 'default',
      frontEnd: 'agent',
      ...(policy === undefined ? {} : { policy }),
      password: readPassword,
      unlock: (path) =>
        gate.run(async () => {
          onUnlock?.(session);
          return KeyStore.open(path, await readPassword());
        }),
    });
    return session;
  };

  const setup = fresh();
  if (!env.AI_WALLET_PASSWORD && !(await exists(passwordPath))) {
    if (await setup.hasKeystore()) {
      throw new NanoPayError('PASSWORD_REQUIRED', `The agent's key store exists but its password file ${passwordPath} is missing`, {
        hint: 'Set AI_WALLET_PASSWORD to the password the agent wallet was made with.',
      });
    }
    await writeFile(passwordPath, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
    log(`made a random wallet password in ${passwordPath}`);
  }
  // At start, not at the first request: a password file that is not private stops the agent here.
  await readPassword();
  if (setup.profile().activeWallet === undefined) {
    // With an API key of its own the seed is made here; without one the service makes the wallet and its key.
    const created = env.NANOPAY_API_KEY ? await createWallet(setup, { name: 'agent' }) : await createRemoteWallet(setup, { name: 'agent' });
    log(`created the agent wallet ${created.address}${created.remote ? ' (made by the service, with its API key)' : ''}`);
  }

  return {
    strict: true,
    use: async (fn) => {
      const session = fresh((s) => live.add(s));
      try {
        return await fn(session);
      } finally {
        live.delete(session);
        await session.close();
      }
    },
    address: () => fresh().address(),
    unlockedSessions: () => live.size,
    afterWrite: () => undefined,
  };
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
