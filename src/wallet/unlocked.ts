import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import type { Stats } from 'node:fs';
import { lstat, readdir, unlink } from 'node:fs/promises';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NanoPayError } from '../errors.js';
import type { StateBlock } from '../nano/index.js';
import { KeyStore } from './keystore.js';
import { tracerOf } from './undumpable.js';
import type { SpendingPolicy } from './config.js';
import type { WalletSecret } from './wallet-keys.js';

/**
 * The unlocked session (`nanopay unlock`): a small background process, like
 * ssh-agent, that holds one profile's decrypted secrets for a while and
 * derives and signs with them for commands over a Unix socket, so they need
 * neither the password nor scrypt. It never hands out a seed, mnemonic,
 * passphrase or private key; it lends only the bearer credentials commands
 * send over HTTP anyway (the API key, node-auth). It signs no bare hash: it is
 * shown each block with the one before it, reads a send's amount from their
 * balances, and judges it by the scope it was granted at unlock before it
 * signs. This module is its client (what commands use) and its starter; the
 * process itself is src/session/.
 *
 * The socket is `sessions/<profile>.sock` in the config dir: the dir 0700, the
 * socket 0600, both owned by the user, so only the user (and root) can
 * connect; Node cannot read a Unix socket peer's credentials, so these modes
 * are the check, and a dir or socket that is not ours or is open to others is
 * refused, never used. A session shared with another user (unlock --socket
 * --group) is reached at the path a profile names (`session-socket`), owned
 * by the user who unlocked it. One request per connection: a line of JSON,
 * answered by a line of JSON.
 */

/** The bearer credentials a session lends: commands send them over HTTP anyway. */
export type CredentialName = 'api-key' | 'node-auth';
export const CREDENTIAL_NAMES: readonly CredentialName[] = ['api-key', 'node-auth'];

export type Credentials = Partial<Record<CredentialName, string>>;

/** A spend as the session is told of it (ops/spending/request.ts, amounts as decimal strings). */
export type SpendWire = Record<string, unknown>;
/** A verdict as the session gives it (ops/spending/policy.ts, amounts as decimal strings). */
export type VerdictWire = Record<string, unknown>;

export type AgentRequest =
  | { op: 'ping' }
  | { op: 'stop' }
  | { op: 'credentials' }
  /** The names and kinds of the wallets it holds (no secret). */
  | { op: 'wallets' }
  /** What its scope still lets a caller spend, and what waits for a person. */
  | { op: 'spending' }
  /** The address and public key of a wallet's account. */
  | { op: 'account'; wallet: string; index: number }
  /** What the session's scope says of a spend: `dry` records nothing, `screen` records a refusal or holds it for a person. */
  | { op: 'judge'; mode: 'dry' | 'screen'; spend: SpendWire }
  /**
   * A signature of a block by a wallet's account: the session is shown the
   * block before it (`previous`, unless it opens the account), judges a send
   * by its scope, and records it before it signs. `own`: the block pays that
   * account of the same wallet (a lane), which is no spend.
   */
  | { op: 'sign'; wallet: string; index: number; block: StateBlock; previous?: StateBlock; spend?: SpendWire; own?: number }
  /** A signature of a nano-session opening or receipt (hex; never 32 bytes, so never a block's) by a wallet's account. */
  | { op: 'session-message'; wallet: string; index: number; message: string };

/** What the agent answers to every request it serves, with what the op asked for. */
export interface AgentAnswer {
  ok: true;
  pid: number;
  profile: string;
  expires_at: string;
  /** The SHA-256 of the key store content the secrets were decrypted from. */
  fingerprint: string;
  /** The scope granted at unlock (a front end, or all). */
  scope: string;
  credentials?: Credentials;
  wallets?: Record<string, string>;
  spending?: Record<string, unknown>;
  address?: string;
  public_key?: string;
  signature?: string;
  verdict?: VerdictWire;
}

export interface AgentFailure {
  ok: false;
  error: { code: string; message: string; hint?: string; details?: Record<string, unknown> };
}

/** The longest request line the agent reads (two blocks and an x402 requirement fit many times); anything longer is refused. */
export const MAX_REQUEST = 64 * 1024;
/** The longest answer a client reads (an answer is a few hundred bytes, the credentials included). */
const MAX_ANSWER = 64 * 1024;
/** How long a client waits for an answer: the agent answers at once (from memory, or a derivation of milliseconds). */
const ANSWER_MS = 3000;
/** sun_path is 108 bytes on Linux and 104 on macOS, the final NUL included. */
const MAX_SOCKET_PATH = 103;
/** How long `unlock` waits for the new agent to say it listens. */
const START_MS = 15_000;

// The session's process: in the bundled CLI (dist/app) beside this module's chunk, in tsc's dist/ as session/process.js;
// vitest runs the TypeScript sources and starts tsc's copy.
const AGENT_FILE = fileURLToPath(
  new URL(import.meta.url.endsWith('.ts') ? '../../dist/session/process.js' : /\/dist\/app\/[^/]*$/.test(import.meta.url) ? './session-process.js' : '../session/process.js', import.meta.url),
);

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

/** Probes a socket path before an agent listens there: 'live' when an agent answers, else the path is free (a stale socket removed). `shared`: a socket in a directory open to a group. */
export async function probe(socket: string, shared = false): Promise<'live' | 'free'> {
  const result = shared ? await askShared(socket, { op: 'ping' }) : await ask(socket, { op: 'ping' });
  if (shared && result.kind === 'stale') await unlink(socket).catch(() => undefined);
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
  /** The scope it was granted at unlock: a front end, or all. */
  readonly scope: string;
  /** A credential the session lends, when the profile has it. */
  credential(name: CredentialName): string | undefined;
  /** The address and public key of a wallet's account, derived in the session; undefined once the session has ended. */
  account(wallet: string, index: number): Promise<{ address: string; publicKey: string } | undefined>;
  /** The wallets it holds, by name, with their kinds. */
  wallets(): Promise<Record<string, string>>;
  /** What its scope still lets a caller spend, and what waits for a person. */
  spending(): Promise<Record<string, unknown>>;
  /** What the session's scope says of a spend (its refusal or hold is thrown as the session's error). */
  judge(spend: SpendWire, mode: 'dry' | 'screen'): Promise<VerdictWire>;
  /** The block's signature by a wallet's account, made in the session once it judged the block; undefined once the session has ended. */
  sign(wallet: string, index: number, block: StateBlock, shown: { previous?: StateBlock; spend?: SpendWire; own?: number }): Promise<string | undefined>;
  /** A wallet's account's signature of a nano-session opening or receipt; undefined once the session has ended. */
  signSessionMessage(wallet: string, index: number, message: Uint8Array): Promise<string | undefined>;
}

const HEX = (bytes: number): RegExp => new RegExp(`^[0-9A-F]{${bytes * 2}}$`);

/**
 * The session's refusal of a request, as an error of this process: its own
 * code, message, hint and details (a policy refusal names its rule). Its
 * checks of a request's form (BAD_REQUEST) mean the command asked for
 * something no wallet has.
 */
function refusal(error: AgentFailure['error'], profile: string): NanoPayError {
  if (error.code === 'NOT_IN_SESSION') {
    return new NanoPayError('NOT_IN_SESSION', error.message, {
      hint: `It holds the wallets of profile "${profile}" as they were when it was unlocked. Run nanopay lock, then nanopay unlock again (or give the password).`,
    });
  }
  if (error.code === 'BAD_REQUEST') return new NanoPayError('INVALID_REQUEST', `The unlocked session refused: ${error.message}`);
  return new NanoPayError(error.code, error.message, { ...(error.hint === undefined ? {} : { hint: error.hint }), ...(error.details === undefined ? {} : { details: error.details }) });
}

/**
 * The profile's unlocked session, or undefined when none runs (or it is
 * stale, expired or unusable: the caller then unlocks with the password).
 * Never stale: the agent's content must be the key store's content now, else
 * the agent is told to stop and nothing is used; every later answer must come
 * from that same content. `shared`: the socket of a session another user
 * unlocked and shares (its key store is out of reach here; the session itself
 * ends when that key store changes).
 */
export async function openUnlocked(dir: string, profile: string, keystore: string, shared?: string): Promise<UnlockedKeys | undefined> {
  if (process.platform === 'win32') return undefined;
  const socket = shared ?? socketPath(dir, profile);
  const reply = shared === undefined ? await ask(socket, { op: 'credentials' }) : await askShared(socket, { op: 'credentials' });
  if (reply.kind !== 'answer' || !reply.body.ok) return undefined;
  const { fingerprint, credentials, profile: served, scope } = reply.body;
  if ((shared === undefined && served !== profile) || !isCredentials(credentials) || typeof scope !== 'string') return undefined;
  if (shared === undefined && fingerprint !== (await KeyStore.current(keystore))) {
    await exchange(socket, { op: 'stop' });
    return undefined;
  }
  const lent = new Map(Object.entries(credentials));
  const later = async (request: AgentRequest): Promise<AgentAnswer | undefined> => {
    const answer = shared === undefined ? await ask(socket, request) : await askShared(socket, request);
    if (answer.kind !== 'answer') return undefined;
    if (!answer.body.ok) {
      if (answer.body.error.code === 'ENDED') return undefined;
      throw refusal(answer.body.error, profile);
    }
    return answer.body.fingerprint === fingerprint && answer.body.profile === served ? answer.body : undefined;
  };
  const ended = (): NanoPayError =>
    new NanoPayError('PASSWORD_REQUIRED', 'The unlocked session ended (it expired, was locked, or its key store changed) while this command ran; nothing was signed', {
      hint: 'A person unlocks it again (nanopay unlock).',
    });
  return {
    scope,
    credential: (name) => lent.get(name),
    account: async (wallet, index) => {
      const answer = await later({ op: 'account', wallet, index });
      if (answer === undefined) return undefined;
      const { address, public_key: publicKey } = answer;
      if (typeof address !== 'string' || typeof publicKey !== 'string' || !HEX(32).test(publicKey)) return undefined;
      return { address, publicKey };
    },
    wallets: async () => {
      const answer = await later({ op: 'wallets' });
      if (answer === undefined) throw ended();
      return answer.wallets ?? {};
    },
    spending: async () => {
      const answer = await later({ op: 'spending' });
      if (answer?.spending === undefined) throw ended();
      return answer.spending;
    },
    judge: async (spend, mode) => {
      const answer = await later({ op: 'judge', mode, spend });
      if (answer === undefined) throw ended();
      if (typeof answer.verdict !== 'object' || answer.verdict === null) throw new NanoPayError('INTERNAL_ERROR', 'The unlocked session gave no verdict');
      return answer.verdict;
    },
    sign: async (wallet, index, block, shown) => {
      const answer = await later({ op: 'sign', wallet, index, block, ...shown });
      return typeof answer?.signature === 'string' && HEX(64).test(answer.signature) ? answer.signature : undefined;
    },
    signSessionMessage: async (wallet, index, message) => {
      const answer = await later({ op: 'session-message', wallet, index, message: Buffer.from(message).toString('hex') });
      return typeof answer?.signature === 'string' && HEX(64).test(answer.signature) ? answer.signature : undefined;
    },
  };
}

/** Asks a session another user shares: its socket is theirs (checked only to be a socket, never a link). */
async function askShared(socket: string, request: AgentRequest): Promise<Exchange> {
  const info = await lstat(socket).catch(() => undefined);
  if (info === undefined) return { kind: 'none' };
  if (!info.isSocket()) throw unsafe(socket, 'is not a socket');
  const result = await exchange(socket, request);
  return result.kind === 'refused' ? { kind: 'stale' } : result;
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

/** Ends the session shared at `socket` (unlock --socket): 'stopped', 'stale' or 'none'. */
export async function stopShared(socket: string): Promise<'stopped' | 'stale' | 'none'> {
  const reply = await askShared(socket, { op: 'stop' });
  if (reply.kind === 'none' || reply.kind === 'stale') return reply.kind;
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

/** What a session judges spends by, fixed at unlock and held by the session itself. */
export interface SessionGrant {
  /** A front end, or all: every spend through the session is judged as that, whatever the caller says it is. */
  scope: string;
  /** The profile's sealed policy at unlock (the session also applies every stricter rule sealed later). */
  policy: SpendingPolicy;
  /** The addresses of the contacts that policy names, as sealed. */
  contacts: Record<string, string>;
  /** The key store's seal key (hex): the session checks the policy's and approvals' seals with it, and never seals. */
  sealKey: string;
  /** The config dir whose policy, store and locks the session uses. */
  configDir: string;
  /** The shared PostgreSQL store, when the profile uses one. */
  databaseUrl?: string;
  /** A session shared with another user: its socket is made group-accessible for this group (gid). */
  shareGid?: number;
}

/** What `unlock` hands to the new agent over its IPC channel: never through argv, the environment or a file. */
export interface AgentInit extends UnlockedContent, SessionGrant {
  type: 'init';
  profile: string;
  socket: string;
  keystore: string;
  fingerprint: string;
  /** Epoch milliseconds. */
  expiresAt: number;
}

/**
 * What the agent says over IPC: `hello` once it closed its memory, before any
 * secret is sent (`unlock` then checks nothing traces it); then `ready` or
 * `failed` once, before `unlock` lets it go.
 */
export type AgentStarted = { type: 'hello'; undumpable: boolean } | { type: 'ready'; pid: number } | { type: 'failed'; code: string; message: string };

/** What of the environment reaches the session: PostgreSQL's own settings (its password is PGPASSWORD or ~/.pgpass), nothing else. */
function sessionEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => name === 'HOME' || name.startsWith('PG')));
}

/**
 * Starts the agent detached (its own session: Ctrl-C in the terminal does not
 * reach it), with no stdio and none of the environment but PostgreSQL's
 * settings, hands it the secrets and its grant over IPC, and waits until it
 * listens: at the profile's socket, or at `socket` (a session shared with
 * another user).
 */
export async function startAgent(options: {
  dir: string;
  profile: string;
  keystore: string;
  fingerprint: string;
  expiresAt: number;
  content: UnlockedContent;
  grant: SessionGrant;
  socket?: string;
}): Promise<{ pid: number; socket: string; undumpable: boolean }> {
  const socket = options.socket ?? socketPath(options.dir, options.profile);
  if (Buffer.byteLength(socket) > MAX_SOCKET_PATH) {
    throw new NanoPayError('USAGE', `The socket path ${socket} is too long for a Unix socket (${Buffer.byteLength(socket)} bytes; at most ${MAX_SOCKET_PATH})`, {
      hint: 'Use a config dir with a shorter path (NANOPAY_CONFIG_DIR).',
    });
  }
  const child = spawn(process.execPath, [AGENT_FILE], { detached: true, stdio: ['ignore', 'ignore', 'ignore', 'ipc'], env: sessionEnv(), cwd: '/' });
  let undumpable = false;
  const started = await new Promise<{ pid: number }>((resolve, reject) => {
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
    const init: AgentInit = {
      type: 'init',
      profile: options.profile,
      socket,
      keystore: options.keystore,
      fingerprint: options.fingerprint,
      expiresAt: options.expiresAt,
      wallets: options.content.wallets,
      credentials: options.content.credentials,
      ...options.grant,
    };
    child.on('message', (message: AgentStarted) => {
      if (message?.type === 'hello') {
        // Its memory is closed now, so nothing can attach from here on: one that attached before would read the secrets.
        const tracer = child.pid === undefined ? undefined : tracerOf(child.pid);
        if (tracer !== undefined && tracer !== 0) {
          child.kill('SIGKILL');
          settle(() => reject(new NanoPayError('UNSAFE_PROCESS', `Another process (pid ${tracer}) traces the unlocked session as it starts (a debugger, strace); no secret was sent to it`)));
          return;
        }
        undumpable = message.undumpable === true;
        child.send(init);
      } else if (message?.type === 'ready' && Number.isInteger(message.pid)) settle(() => resolve({ pid: message.pid }));
      else settle(() => reject(new NanoPayError(message?.type === 'failed' ? message.code : 'INTERNAL_ERROR', message?.type === 'failed' ? message.message : 'The unlocked session sent an unexpected message')));
    });
    child.on('exit', (code, signal) => settle(() => reject(new NanoPayError('INTERNAL_ERROR', `The unlocked session ended as it started (${signal ?? `exit ${code}`})`))));
    child.on('error', (error) => settle(() => reject(new NanoPayError('INTERNAL_ERROR', `Cannot start the unlocked session: ${error.message}`))));
  });
  if (child.connected) child.disconnect();
  child.unref();
  return { ...started, socket, undumpable };
}
