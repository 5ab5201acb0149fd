import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { NanoPayError } from '../../../src/errors.js';
import { keystorePath } from '../../../src/wallet/paths.js';
import { KeyStore } from '../../../src/wallet/keystore.js';
import { receive } from '../../../src/ops/account/receive.js';
import { Session } from '../../../src/ops/session.js';
import { createRemoteWallet } from '../../../src/ops/profile/wallet.js';
import { fund } from '../ledger/sandbox.js';
import { tempDir } from './temp.js';

export const BIN = fileURLToPath(new URL('../../../bin/run.js', import.meta.url));

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

/** Runs a command as a child process, with stdin not a terminal (given `input`, then closed); killed after `timeoutMs`. */
export function runCommand(command: string, args: string[], options: { env: NodeJS.ProcessEnv; cwd?: string; input?: string; timeoutMs?: number }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: options.env, cwd: options.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
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
    // A command that fails before reading its input closes stdin first: the write then ends in EPIPE, which is no error of the test.
    child.stdin.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') reject(error);
    });
    child.stdin.end(options.input ?? '');
  });
}

/** Runs the built binary as a child process, like a user would, with stdin not a terminal. */
export function runCli(args: string[], env: NodeJS.ProcessEnv, options: { input?: string; timeoutMs?: number } = {}): Promise<RunResult> {
  // env last: a caller's options may carry an env of its own (a few overrides), already merged into `env`.
  return runCommand(process.execPath, [BIN, ...args], { ...options, env });
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
  const configDir = await tempDir('nanopay-user-');
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

/**
 * The user's profile in-process, as one more command of theirs would have it, with `env` on top of
 * their environment: the password from NANOPAY_PASSWORD, and without it PASSWORD_REQUIRED, as the
 * CLI has no terminal to ask on. For checks the front end adds nothing to.
 */
export function commandSession(user: CliUser, env: NodeJS.ProcessEnv = {}): Session {
  const merged = { ...user.env, ...env };
  return new Session({
    password: async () => {
      if (!merged.NANOPAY_PASSWORD) throw new NanoPayError('PASSWORD_REQUIRED', 'No password: NANOPAY_PASSWORD is not set and there is no terminal');
      return merged.NANOPAY_PASSWORD;
    },
    env: merged,
  });
}

/**
 * A user with a wallet made by the service (so with an API key); funded and received when `amount` is
 * given. Made in-process through the operations (the commands have their own tests); the CLI then
 * finds the wallet in the user's config dir.
 */
export async function userWithWallet(apiUrl: string, amount?: string): Promise<{ user: CliUser; address: string }> {
  const user = await newUser(apiUrl);
  const session = new Session({ password: async () => PASSWORD, env: user.env, configDir: user.configDir });
  const created = await createRemoteWallet(session);
  if (amount !== undefined) {
    await fund(apiUrl, created.address, amount);
    await receive(session);
  }
  return { user, address: created.address };
}
