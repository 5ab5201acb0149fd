import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { NanoPayError } from '../../../src/errors.js';
import { receive } from '../../../src/ops/account/receive.js';
import { Session } from '../../../src/ops/session.js';
import { unlock, type UnlockResult } from '../../../src/ops/profile/unlock.js';
import { createRemoteWallet } from '../../../src/ops/profile/wallet.js';
import { PASSWORD, type CliUser } from './cli.js';
import { fund } from '../ledger/sandbox.js';

// The unlocked session (nanopay unlock) seen from in-process: the user's own config dir driven through the
// operations, for setup and for what the front end adds nothing to.

const procfs = existsSync('/proc/self/stat');

/**
 * Whether a process still runs. An agent `nanopay unlock` started outlives its
 * parent, so once it exits it stays a zombie until init reaps it (here up to
 * seconds later), and signal 0 still reaches a zombie: where /proc says so, a
 * zombie has ended. Only once its other threads have gone too: Node's main
 * thread turns zombie while its other threads may still be exiting, with the
 * process's files (its listening socket) still open.
 */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  if (!procfs) return true;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (name) state …": the name may hold anything, so the state follows the last ')'.
    return stat[stat.lastIndexOf(')') + 2] !== 'Z' || readdirSync(`/proc/${pid}/task`).length > 1;
  } catch {
    return false;
  }
}

/** Polls until `condition` holds; fails the test if it still does not after `ms`. */
export async function waitUntil(what: string, condition: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`Still waiting after ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export const socketOf = (user: CliUser, profile = 'default'): string => join(user.configDir, 'sessions', `${profile}.sock`);

/**
 * The user's profile in-process, configured like one CLI command: a new
 * Session has unlocked nothing and asked no unlocked session yet. With `password: false` there
 * is none, as for the CLI without NANOPAY_PASSWORD or a terminal: only an
 * unlocked session can help, else PASSWORD_REQUIRED.
 */
export function sessionOf(user: CliUser, options: { password?: boolean; profile?: string } = {}): Session {
  return new Session({
    password: async () => {
      if (options.password === false) throw new NanoPayError('PASSWORD_REQUIRED', 'No password in this test: only an unlocked session can help');
      return PASSWORD;
    },
    configDir: user.configDir,
    env: user.env,
    ...(options.profile === undefined ? {} : { profile: options.profile }),
  });
}

/** Gives the user a wallet made by the service (its API key and seed in the key store); funded and received when `amount` is given. Its address. */
export async function remoteWallet(user: CliUser, amount?: string): Promise<string> {
  const session = sessionOf(user);
  const { address } = await createRemoteWallet(session);
  if (amount !== undefined) {
    await fund(user.env.NANOPAY_API_URL as string, address, amount);
    await receive(session);
  }
  return address;
}

/** Starts the profile's unlocked session through the operation (the real agent process, from dist/wallet), with the password. */
export function unlockInProcess(user: CliUser, seconds = 60, profile?: string): Promise<UnlockResult> {
  return unlock(sessionOf(user, profile === undefined ? {} : { profile }), { seconds });
}
