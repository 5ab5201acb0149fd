import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import type { Stats } from 'node:fs';
import { lstat, readdir, unlink } from 'node:fs/promises';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NanoPayError } from '../errors.js';
import { KeyStore, type SecretReader } from './keystore.js';

/**
 * The unlocked session (`nanopay unlock`): a small background process, like
 * ssh-agent, that holds one profile's secrets, decrypted, for a while and
 * lends them to commands of the same user over a Unix socket, so they need
 * neither the password nor scrypt. This module is its client (what commands
 * use) and its starter; the process itself is unlocked-agent.ts.
 *
 * The socket is `sessions/<profile>.sock` in the config dir: the dir 0700, the
 * socket 0600, both owned by the user, so only the user (and root) can
 * connect; Node cannot read a Unix socket peer's credentials, so these modes
 * are the check, and a dir or socket that is not ours or is open to others is
 * refused, never used. One request per connection: a line of JSON, answered by
 * a line of JSON.
 */

export type AgentRequest = { op: 'ping' } | { op: 'secrets' } | { op: 'stop' };

/** What the agent answers to `secrets` (and, without `secrets`, to `ping`). */
export interface AgentAnswer {
  ok: true;
  pid: number;
  profile: string;
  expires_at: string;
  /** The SHA-256 of the key store content the secrets were decrypted from. */
  fingerprint: string;
  secrets?: Record<string, string>;
}

export interface AgentFailure {
  ok: false;
  error: { code: string; message: string };
}

/** The longest request line the agent reads; anything longer is refused. */
export const MAX_REQUEST = 1024;
/** The longest answer a client reads (the secrets of one profile are far smaller). */
const MAX_ANSWER = 1024 * 1024;
/** How long a client waits for an answer: the agent answers from memory at once. */
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

function isStringRecord(value: unknown): value is Record<string, string> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.values(value).every((v) => typeof v === 'string');
}

/**
 * The secrets of the profile's unlocked session, or undefined when none runs
 * (or it is stale, expired or unusable: the caller then unlocks with the
 * password). Never stale: the agent's content must be the key store's content
 * now, else the agent is told to stop and nothing is lent.
 */
export async function borrowSecrets(dir: string, profile: string, keystore: string, prefix: string): Promise<SecretReader | undefined> {
  if (process.platform === 'win32') return undefined;
  const socket = socketPath(dir, profile);
  const reply = await ask(socket, { op: 'secrets' });
  if (reply.kind !== 'answer' || !reply.body.ok) return undefined;
  const { fingerprint, secrets, profile: served } = reply.body;
  if (served !== profile || !isStringRecord(secrets) || !Object.keys(secrets).every((id) => id.startsWith(prefix))) return undefined;
  if (fingerprint !== (await KeyStore.current(keystore))) {
    await exchange(socket, { op: 'stop' });
    return undefined;
  }
  const held = new Map(Object.entries(secrets));
  return { get: (id) => held.get(id) };
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

/** What `unlock` hands to the new agent over its IPC channel: never through argv, the environment or a file. */
export interface AgentInit {
  type: 'init';
  profile: string;
  socket: string;
  keystore: string;
  fingerprint: string;
  /** Epoch milliseconds. */
  expiresAt: number;
  secrets: Record<string, string>;
}

/** What the agent says back over IPC once, before `unlock` lets it go. */
export type AgentStarted = { type: 'ready'; pid: number } | { type: 'failed'; code: string; message: string };

/**
 * Starts the agent detached (its own session: Ctrl-C in the terminal does not
 * reach it), with an empty environment and no stdio, hands it the secrets over
 * IPC, and waits until it listens.
 */
export async function startAgent(options: { dir: string; profile: string; keystore: string; fingerprint: string; expiresAt: number; secrets: Record<string, string> }): Promise<{ pid: number; socket: string }> {
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
    const init: AgentInit = { type: 'init', profile: options.profile, socket, keystore: options.keystore, fingerprint: options.fingerprint, expiresAt: options.expiresAt, secrets: options.secrets };
    child.send(init);
  });
  if (child.connected) child.disconnect();
  child.unref();
  return { pid, socket };
}
