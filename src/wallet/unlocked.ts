import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import type { Stats } from 'node:fs';
import { lstat, readdir, unlink } from 'node:fs/promises';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NanoPayError } from '../errors.js';
import { KeyStore } from './keystore.js';
import type { WalletSecret } from './wallet-keys.js';

/**
 * The unlocked session (`nanopay unlock`): a small background process, like
 * ssh-agent, that holds one profile's decrypted secrets for a while and
 * derives and signs with them for commands of the same user over a Unix
 * socket, so they need neither the password nor scrypt. It never hands out a
 * seed, mnemonic, passphrase or private key; it lends only the bearer
 * credentials commands send over HTTP anyway (the API key, node-auth). This
 * module is its client (what commands use) and its starter; the process
 * itself is unlocked-agent.ts.
 *
 * The socket is `sessions/<profile>.sock` in the config dir: the dir 0700, the
 * socket 0600, both owned by the user, so only the user (and root) can
 * connect; Node cannot read a Unix socket peer's credentials, so these modes
 * are the check, and a dir or socket that is not ours or is open to others is
 * refused, never used. One request per connection: a line of JSON, answered by
 * a line of JSON.
 */

/** The bearer credentials a session lends: commands send them over HTTP anyway. */
export type CredentialName = 'api-key' | 'node-auth';
export const CREDENTIAL_NAMES: readonly CredentialName[] = ['api-key', 'node-auth'];

export type Credentials = Partial<Record<CredentialName, string>>;

export type AgentRequest =
  | { op: 'ping' }
  | { op: 'stop' }
  | { op: 'credentials' }
  /** The address and public key of a wallet's account. */
  | { op: 'account'; wallet: string; index: number }
  /** A signature of a block hash (64 hex) by a wallet's account. */
  | { op: 'sign'; wallet: string; index: number; hash: string };

/** What the agent answers to every request it serves, with what the op asked for. */
export interface AgentAnswer {
  ok: true;
  pid: number;
  profile: string;
  expires_at: string;
  /** The SHA-256 of the key store content the secrets were decrypted from. */
  fingerprint: string;
  credentials?: Credentials;
  address?: string;
  public_key?: string;
  signature?: string;
}

export interface AgentFailure {
  ok: false;
  error: { code: string; message: string };
}

/** The longest request line the agent reads; anything longer is refused. */
export const MAX_REQUEST = 1024;
/** The longest answer a client reads (an answer is a few hundred bytes, the credentials included). */
const MAX_ANSWER = 64 * 1024;
/** How long a client waits for an answer: the agent answers at once (from memory, or a derivation of milliseconds). */
const ANSWER_MS = 3000;
/** sun_path is 108 bytes on Linux and 104 on macOS, the final NUL included. */
const MAX_SOCKET_PATH = 103;
/** How long `unlock` waits for the new agent to say it listens. */
const START_MS = 15_000;

// vitest runs the TypeScript sources; the agent always runs the compiled copy in dist/.
const AGENT_FILE = fileURLToPath(new URL(import.meta.url.endsWith('.ts') ? '../../dist/wallet/unlocked-agent.js' : './unlocked-agent.js', import.meta.url));

const sessionsDir = (dir: string): string => join(dir, 'sessions');

/** The profile's socket: its name when that is a plain file name, else a digest of it. */
function socketPath(dir: string, profile: string): string {
  const name = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,39}$/.test(profile) ? profile : `p-${createHash('sha256').update(profile).digest('hex').slice(0, 16)}`;
  return join(sessionsDir(dir), `${name}.sock`);
}

function unsafe(path: string, why: string): NanoPayError {
  return new NanoPayError('UNSAFE_SESSION', `${path} ${why}; nanopay refuses to use it for an unlocked session`, {
    hint: `Remove ${path} yourself (rm -r), after checking what it is, then run nanopay unlock again.`,
  });
}

/**
 * Checks that the sessions dir, or a socket in it, is what nanopay made: the
 * right kind (never a link), owned by this user, and closed to group and
 * others. Its stats, or undefined when there is nothing there.
 */
export async function checkPrivate(path: string, kind: 'dir' | 'socket'): Promise<Stats | undefined> {
  const info = await lstat(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (info === undefined) return undefined;
  if (kind === 'dir' ? !info.isDirectory() : !info.isSocket()) throw unsafe(path, kind === 'dir' ? 'is not a directory' : 'is not a socket');
  const uid = process.getuid?.();
  if (uid !== undefined && info.uid !== uid) throw unsafe(path, `belongs to another user (uid ${info.uid})`);
  if ((info.mode & 0o077) !== 0) throw unsafe(path, `is open to others (mode ${(info.mode & 0o777).toString(8).padStart(4, '0')})`);
  return info;
}

type Exchange = { kind: 'none' } | { kind: 'stale' } | { kind: 'silent' } | { kind: 'answer'; body: AgentAnswer | AgentFailure };

/** One request over one connection; never throws for what the other end does. */
function exchange(path: string, request: AgentRequest): Promise<Exclude<Exchange, { kind: 'stale' }> | { kind: 'refused' }> {
  return new Promise((resolve) => {
    const socket = connect(path);
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (result: Exclude<Exchange, { kind: 'stale' }> | { kind: 'refused' }): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => finish({ kind: 'silent' }), ANSWER_MS);
    socket.on('connect', () => socket.write(`${JSON.stringify(request)}\n`));
    socket.on('data', (chunk: Buffer) => {
      const newline = chunk.indexOf(10);
      size += newline === -1 ? chunk.length : newline;
      if (size > MAX_ANSWER) return finish({ kind: 'silent' });
      chunks.push(newline === -1 ? chunk : chunk.subarray(0, newline));
      if (newline === -1) return;
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as AgentAnswer | AgentFailure;
        finish(typeof body === 'object' && body !== null && typeof body.ok === 'boolean' ? { kind: 'answer', body } : { kind: 'silent' });
      } catch {
        finish({ kind: 'silent' });
      }
    });
    socket.on('end', () => finish({ kind: 'silent' }));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      finish(error.code === 'ECONNREFUSED' ? { kind: 'refused' } : error.code === 'ENOENT' ? { kind: 'none' } : { kind: 'silent' });
    });
  });
}

/**
 * Asks the profile's agent. 'none' when there is no socket; 'stale' when the
 * socket was left by an agent that is gone (it is removed); 'silent' when
 * something listens but gives no valid answer. A socket or dir that is not
 * ours and private is refused (UNSAFE_SESSION).
 */
async function ask(socket: string, request: AgentRequest): Promise<Exchange> {
  if ((await checkPrivate(dirname(socket), 'dir')) === undefined) return { kind: 'none' };
  const before = await checkPrivate(socket, 'socket');
  if (before === undefined) return { kind: 'none' };
  const result = await exchange(socket, request);
  if (result.kind !== 'refused') return result;
  // The very socket that refused, not one a new agent has made there since.
  if ((await lstat(socket).catch(() => undefined))?.ino === before.ino) await unlink(socket).catch(() => undefined);
  return { kind: 'stale' };
}

/** Probes a socket path before an agent listens there: 'live' when an agent answers, else the path is free (a stale socket removed). */
export async function probe(socket: string): Promise<'live' | 'free'> {
  const result = await ask(socket, { op: 'ping' });
  return result.kind === 'answer' || result.kind === 'silent' ? 'live' : 'free';
}

function isCredentials(value: unknown): value is Credentials {
  return (
    typeof value === 'object' && value !== null && !Array.isArray(value) &&
    Object.entries(value).every(([name, secret]) => CREDENTIAL_NAMES.includes(name as CredentialName) && typeof secret === 'string')
  );
}

/** The profile's unlocked session, as a command uses it: the keys stay in the session. */
export interface UnlockedKeys {
  /** A credential the session lends, when the profile has it. */
  credential(name: CredentialName): string | undefined;
  /** The address and public key of a wallet's account, derived in the session; undefined once the session has ended. */
  account(wallet: string, index: number): Promise<{ address: string; publicKey: string } | undefined>;
  /** The signature of a block hash by a wallet's account, made in the session; undefined once the session has ended. */
  sign(wallet: string, index: number, hash: string): Promise<string | undefined>;
}

const HEX = (bytes: number): RegExp => new RegExp(`^[0-9A-F]{${bytes * 2}}$`);

/**
 * The session's refusal of a request, as an error of this process. Its own
 * checks (BAD_REQUEST) mean the command asked for something no wallet has.
 */
function refusal(error: AgentFailure['error'], profile: string): NanoPayError {
  if (error.code === 'NOT_IN_SESSION') {
    return new NanoPayError('NOT_IN_SESSION', error.message, {
      hint: `It holds the wallets of profile "${profile}" as they were when it was unlocked. Run nanopay lock, then nanopay unlock again (or give the password).`,
    });
  }
  return new NanoPayError(error.code === 'BAD_REQUEST' ? 'INVALID_REQUEST' : error.code, `The unlocked session refused: ${error.message}`);
}

/**
 * The profile's unlocked session, or undefined when none runs (or it is
 * stale, expired or unusable: the caller then unlocks with the password).
 * Never stale: the agent's content must be the key store's content now, else
 * the agent is told to stop and nothing is used; every later answer must come
 * from that same content.
 */
export async function openUnlocked(dir: string, profile: string, keystore: string): Promise<UnlockedKeys | undefined> {
  if (process.platform === 'win32') return undefined;
  const socket = socketPath(dir, profile);
  const reply = await ask(socket, { op: 'credentials' });
  if (reply.kind !== 'answer' || !reply.body.ok) return undefined;
  const { fingerprint, credentials, profile: served } = reply.body;
  if (served !== profile || !isCredentials(credentials)) return undefined;
  if (fingerprint !== (await KeyStore.current(keystore))) {
    await exchange(socket, { op: 'stop' });
    return undefined;
  }
  const lent = new Map(Object.entries(credentials));
  const later = async (request: AgentRequest): Promise<AgentAnswer | undefined> => {
    const answer = await ask(socket, request);
    if (answer.kind !== 'answer') return undefined;
    if (!answer.body.ok) {
      if (answer.body.error.code === 'ENDED') return undefined;
      throw refusal(answer.body.error, profile);
    }
    return answer.body.fingerprint === fingerprint && answer.body.profile === profile ? answer.body : undefined;
  };
  return {
    credential: (name) => lent.get(name),
    account: async (wallet, index) => {
      const answer = await later({ op: 'account', wallet, index });
      if (answer === undefined) return undefined;
      const { address, public_key: publicKey } = answer;
      if (typeof address !== 'string' || typeof publicKey !== 'string' || !HEX(32).test(publicKey)) return undefined;
      return { address, publicKey };
    },
    sign: async (wallet, index, hash) => {
      const answer = await later({ op: 'sign', wallet, index, hash });
      return typeof answer?.signature === 'string' && HEX(64).test(answer.signature) ? answer.signature : undefined;
    },
  };
}

/**
 * Ends the profile's agent: 'stopped', 'stale' (only a dead agent's socket
 * was there, now removed) or 'none'. An agent that does not answer loses its
 * socket, and ends itself when it sees that.
 */
export async function stopAgent(dir: string, profile: string): Promise<'stopped' | 'stale' | 'none'> {
  if (process.platform === 'win32') return 'none';
  const socket = socketPath(dir, profile);
  const reply = await ask(socket, { op: 'stop' });
  if (reply.kind === 'none' || reply.kind === 'stale') return reply.kind;
  if (reply.kind === 'silent') await unlink(socket).catch(() => undefined);
  return 'stopped';
}

/** Ends every agent of the config dir (after the key store changed); never throws. How many were running. */
export async function stopAllAgents(dir: string): Promise<number> {
  if (process.platform === 'win32') return 0;
  const sessions = sessionsDir(dir);
  const names = await readdir(sessions).catch(() => [] as string[]);
  let stopped = 0;
  for (const name of names.filter((n) => n.endsWith('.sock'))) {
    const socket = join(sessions, name);
    const reply = await ask(socket, { op: 'stop' }).catch(() => ({ kind: 'none' }) as const);
    if (reply.kind === 'answer' || reply.kind === 'silent') stopped++;
    if (reply.kind === 'silent') await unlink(socket).catch(() => undefined);
  }
  return stopped;
}

/** What an unlocked session holds: the profile's wallets (with their kinds, to derive) and its credentials. */
export interface UnlockedContent {
  wallets: Record<string, WalletSecret>;
  credentials: Credentials;
}

/** What `unlock` hands to the new agent over its IPC channel: never through argv, the environment or a file. */
export interface AgentInit extends UnlockedContent {
  type: 'init';
  profile: string;
  socket: string;
  keystore: string;
  fingerprint: string;
  /** Epoch milliseconds. */
  expiresAt: number;
}

/** What the agent says back over IPC once, before `unlock` lets it go. */
export type AgentStarted = { type: 'ready'; pid: number } | { type: 'failed'; code: string; message: string };

/**
 * Starts the agent detached (its own session: Ctrl-C in the terminal does not
 * reach it), with an empty environment and no stdio, hands it the secrets over
 * IPC, and waits until it listens.
 */
export async function startAgent(options: { dir: string; profile: string; keystore: string; fingerprint: string; expiresAt: number; content: UnlockedContent }): Promise<{ pid: number; socket: string }> {
  const socket = socketPath(options.dir, options.profile);
  if (Buffer.byteLength(socket) > MAX_SOCKET_PATH) {
    throw new NanoPayError('USAGE', `The socket path ${socket} is too long for a Unix socket (${Buffer.byteLength(socket)} bytes; at most ${MAX_SOCKET_PATH})`, {
      hint: 'Use a config dir with a shorter path (NANOPAY_CONFIG_DIR).',
    });
  }
  const child = spawn(process.execPath, [AGENT_FILE], { detached: true, stdio: ['ignore', 'ignore', 'ignore', 'ipc'], env: {}, cwd: '/' });
  const pid = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new NanoPayError('TIMEOUT', `The unlocked session did not start within ${START_MS / 1000} s`));
    }, START_MS);
    const settle = (fn: () => void): void => {
      clearTimeout(timer);
      child.removeAllListeners();
      child.on('error', () => undefined);
      fn();
    };
    child.on('message', (message: AgentStarted) => {
      if (message?.type === 'ready' && Number.isInteger(message.pid)) settle(() => resolve(message.pid));
      else settle(() => reject(new NanoPayError(message?.type === 'failed' ? message.code : 'INTERNAL_ERROR', message?.type === 'failed' ? message.message : 'The unlocked session sent an unexpected message')));
    });
    child.on('exit', (code, signal) => settle(() => reject(new NanoPayError('INTERNAL_ERROR', `The unlocked session ended as it started (${signal ?? `exit ${code}`})`))));
    child.on('error', (error) => settle(() => reject(new NanoPayError('INTERNAL_ERROR', `Cannot start the unlocked session: ${error.message}`))));
    const init: AgentInit = {
      type: 'init',
      profile: options.profile,
      socket,
      keystore: options.keystore,
      fingerprint: options.fingerprint,
      expiresAt: options.expiresAt,
      wallets: options.content.wallets,
      credentials: options.content.credentials,
    };
    child.send(init);
  });
  if (child.connected) child.disconnect();
  child.unref();
  return { pid, socket };
}
