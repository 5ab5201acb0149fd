import { spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { keystorePath } from '../../src/wallet/paths.js';
import { KeyStore } from '../../src/wallet/keystore.js';

export const BIN = fileURLToPath(new URL('../../bin/run.js', import.meta.url));

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** `nanopay request --json`. */
export interface PaymentRequest {
  transaction_id: string;
  receive_address: string;
  amount: string;
  amount_raw: string;
  uri: string;
}

export interface CliUser {
  configDir: string;
  env: NodeJS.ProcessEnv;
  run(args: string[], options?: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<RunResult>;
  /** Runs with --json and parses stdout as one JSON document. */
  json<T = Record<string, unknown>>(args: string[], options?: { input?: string; env?: NodeJS.ProcessEnv }): Promise<T & { _code: number | null }>;
}

/** Runs the built binary as a child process, like a user would, with stdin not a terminal. */
export function runCli(args: string[], env: NodeJS.ProcessEnv, options: { input?: string; timeoutMs?: number } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}

export const PASSWORD = 'test password 1';

/**
 * A user with their own temporary config dir, pointed at `apiUrl`. Their key store
 * is there already, empty, made with `PASSWORD` at scrypt's lowest accepted cost:
 * every command that unlocks it then costs a millisecond, not 128 MiB and half a
 * second of CPU. `keystore: 'none'` leaves the dir empty, for what a first run
 * does (the store made at its real cost).
 */
export async function newUser(apiUrl: string, extraEnv: NodeJS.ProcessEnv = {}, options: { keystore?: 'cheap' | 'none' } = {}): Promise<CliUser> {
  const configDir = await mkdtemp(join(tmpdir(), 'nanopay-user-'));
  if (options.keystore !== 'none') await KeyStore.create(keystorePath(configDir), PASSWORD, 2 ** 10);
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: configDir,
    NANOPAY_CONFIG_DIR: configDir,
    NANOPAY_API_URL: apiUrl,
    NANOPAY_PASSWORD: PASSWORD,
    NO_COLOR: '1',
    ...extraEnv,
  };
  const user: CliUser = {
    configDir,
    env,
    run: (args, options = {}) => runCli(args, { ...env, ...options.env }, options),
    json: async <T>(args: string[], options: { input?: string; env?: NodeJS.ProcessEnv } = {}) => {
      const result = await user.run([...args, '--json'], options);
      let parsed: T;
      try {
        parsed = JSON.parse(result.stdout) as T;
      } catch {
        throw new Error(`nanopay ${args.join(' ')} printed no single JSON document (exit ${result.code}):\n${result.stdout}\n${result.stderr}`);
      }
      return { ...parsed, _code: result.code };
    },
  };
  return user;
}

/** A user with a wallet made by the service (so with an API key); funded and opened when `amount` is given; `unlock`: see unlockOnce. */
export async function userWithWallet(apiUrl: string, amount?: string, options: { unlock?: boolean } = {}): Promise<{ user: CliUser; address: string }> {
  const user = await newUser(apiUrl);
  const created = await user.json<{ address: string }>(['wallet', 'create', '--remote']);
  if (created._code !== 0) throw new Error(`wallet create failed: ${JSON.stringify(created)}`);
  if (amount !== undefined) {
    const response = await fetch(`${apiUrl}/sandbox/fund`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ address: created.address, amount }) });
    if (!response.ok) throw new Error(`faucet failed: HTTP ${response.status}`);
    const received = await user.json(['receive']);
    if (received._code !== 0) throw new Error(`receive failed: ${JSON.stringify(received)}`);
  }
  if (options.unlock === true) await unlockOnce(user);
  return { user, address: created.address };
}

const unlockedUsers = new Set<CliUser>();

/**
 * Unlocks the user's profile once (nanopay unlock), as a script of many commands would, so
 * the commands after it skip scrypt. For suites whose subject is not the password. The
 * session is locked after the file's tests (test/setup/sessions.ts).
 */
export async function unlockOnce(user: CliUser): Promise<void> {
  const unlocked = await user.json<{ expires_at: string }>(['unlock', '--for', '30m']);
  if (unlocked._code !== 0) throw new Error(`unlock failed: ${JSON.stringify(unlocked)}`);
  unlockedUsers.add(user);
}

/** Ends every session unlockOnce started; a lock that fails fails the file. */
export async function lockSessions(): Promise<void> {
  for (const user of unlockedUsers) {
    const locked = await user.json(['lock']);
    if (locked._code !== 0) throw new Error(`lock failed: ${JSON.stringify(locked)}`);
  }
  unlockedUsers.clear();
}
