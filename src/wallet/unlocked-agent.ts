/**
 * The unlocked-session process (started by `nanopay unlock`, see unlocked.ts).
 * It receives one profile's decrypted secrets over its IPC channel, listens on
 * a 0600 Unix socket in a 0700 dir, and lends them to commands until it ends:
 * at expiry, when the key store file changes in any way, when its socket is
 * removed, on `stop` (nanopay lock) and on SIGTERM/SIGINT/SIGHUP. It never has
 * the password, writes nothing but its socket, and prints nothing (no stdio).
 * A malformed request gets an error answer and a closed connection, never a crash.
 */
import { lstatSync, unlinkSync, type BigIntStats } from 'node:fs';
import { chmod, mkdir } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { dirname } from 'node:path';
import { NanoPayError } from '../errors.js';
import { KeyStore } from './keystore.js';
import { MAX_REQUEST, checkPrivate, probe, type AgentAnswer, type AgentFailure, type AgentInit, type AgentStarted } from './unlocked.js';

/** How often the key store, the socket and the clock are checked. */
const CHECK_MS = 500;
/** A connection that sends no full request in this time is closed. */
const IDLE_MS = 2000;
const MAX_CONNECTIONS = 16;
/** How long the agent waits for its secrets after it starts. */
const INIT_MS = 10_000;

let init: AgentInit | undefined;
let held: Map<string, string> | undefined;
let server: Server | undefined;
let keystoreStat: BigIntStats | undefined;
let socketIno: bigint | undefined;
let checker: NodeJS.Timeout | undefined;
/** Set once `unlock` was told the session is ready: from then on it serves. */
let ready = false;
let ending = false;

function statOf(path: string): BigIntStats | undefined {
  try {
    return lstatSync(path, { bigint: true });
  } catch {
    return undefined;
  }
}

/** Any change of the file (another inode, size, modification or change time) ends the session. */
function sameFile(a: BigIntStats | undefined, b: BigIntStats | undefined): boolean {
  return a !== undefined && b !== undefined && a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;
}

/** Still ours to serve: not expired, the key store unchanged, the socket still the one we made. */
function valid(): boolean {
  if (init === undefined || held === undefined) return false;
  if (Date.now() >= init.expiresAt) return false;
  if (!sameFile(keystoreStat, statOf(init.keystore))) return false;
  return statOf(init.socket)?.ino === socketIno;
}

/** Ends the process: the secrets dropped, the socket removed (when it is still ours). */
function end(code = 0): void {
  if (ending) return;
  ending = true;
  held?.clear();
  held = undefined;
  if (checker !== undefined) clearInterval(checker);
  server?.close();
  if (init !== undefined && socketIno !== undefined && statOf(init.socket)?.ino === socketIno) {
    try {
      unlinkSync(init.socket);
    } catch {
      // Gone already.
    }
  }
  // Lets a last answer (to `stop`) flush, then goes whatever happens.
  setTimeout(() => process.exit(code), 50);
}

function failure(code: string, message: string): AgentFailure {
  return { ok: false, error: { code, message } };
}

/** The answer to one request line, and whether the session ends with it. */
function answerTo(text: string): { body: AgentAnswer | AgentFailure; last?: true } {
  let request: unknown;
  try {
    request = JSON.parse(text);
  } catch {
    return { body: failure('BAD_REQUEST', 'The request is not JSON') };
  }
  if (typeof request !== 'object' || request === null || Array.isArray(request)) return { body: failure('BAD_REQUEST', 'The request is not a JSON object') };
  const op = (request as { op?: unknown }).op;
  if (op !== 'ping' && op !== 'secrets' && op !== 'stop') return { body: failure('BAD_REQUEST', 'Unknown op; known: ping, secrets, stop') };
  if (!ready) return { body: failure('STARTING', 'The unlocked session is starting') };
  if (init === undefined || held === undefined || !valid()) return { body: failure('ENDED', 'The unlocked session has ended (expired, or the key store changed)'), last: true };
  const status: AgentAnswer = { ok: true, pid: process.pid, profile: init.profile, expires_at: new Date(init.expiresAt).toISOString(), fingerprint: init.fingerprint };
  if (op === 'stop') return { body: status, last: true };
  return { body: op === 'secrets' ? { ...status, secrets: Object.fromEntries(held) } : status };
}

function serve(connection: Socket): void {
  connection.on('error', () => undefined);
  connection.setTimeout(IDLE_MS, () => connection.destroy());
  const chunks: Buffer[] = [];
  let size = 0;
  let answered = false;
  const reply = (body: AgentAnswer | AgentFailure): void => {
    answered = true;
    // Nothing more is read; the idle timeout closes what the client leaves open.
    connection.pause();
    connection.end(`${JSON.stringify(body)}\n`);
  };
  connection.on('data', (chunk: Buffer) => {
    if (answered) return;
    const newline = chunk.indexOf(10);
    size += newline === -1 ? chunk.length : newline;
    if (size > MAX_REQUEST) return reply(failure('TOO_LARGE', `A request is at most ${MAX_REQUEST} bytes`));
    chunks.push(newline === -1 ? chunk : chunk.subarray(0, newline));
    if (newline === -1) return;
    let answer: ReturnType<typeof answerTo>;
    try {
      answer = answerTo(Buffer.concat(chunks).toString('utf8'));
    } catch {
      answer = { body: failure('INTERNAL_ERROR', 'The request could not be answered') };
    }
    // The socket is removed before the answer leaves: whoever reads "stopped" finds it gone.
    if (answer.last) end();
    reply(answer.body);
  });
  connection.on('end', () => {
    if (!answered) connection.destroy();
  });
}

function listen(socket: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const made = createServer({ allowHalfOpen: false }, serve);
    made.maxConnections = MAX_CONNECTIONS;
    made.once('error', reject);
    made.listen(socket, () => {
      made.off('error', reject);
      made.on('error', () => end(1));
      resolve(made);
    });
  });
}

function isInit(value: unknown): value is AgentInit {
  const v = value as AgentInit;
  return (
    typeof v === 'object' && v !== null && v.type === 'init' &&
    [v.profile, v.socket, v.keystore, v.fingerprint].every((s) => typeof s === 'string' && s.length > 0) &&
    Number.isSafeInteger(v.expiresAt) && typeof v.secrets === 'object' && v.secrets !== null &&
    Object.values(v.secrets).every((s) => typeof s === 'string')
  );
}

async function start(message: AgentInit): Promise<void> {
  // Everything made from here on is private to the user: the socket is closed to others from birth (then 0600).
  process.umask(0o077);
  init = message;
  held = new Map(Object.entries(message.secrets));
  keystoreStat = statOf(message.keystore);
  if ((await KeyStore.current(message.keystore)) !== message.fingerprint || !sameFile(keystoreStat, statOf(message.keystore))) {
    throw new NanoPayError('CONFLICT', 'The key store changed while it was being unlocked; nothing was kept', { hint: 'Run nanopay unlock again.' });
  }
  const dir = dirname(message.socket);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await checkPrivate(dir, 'dir');
  if ((await probe(message.socket)) === 'live') {
    throw new NanoPayError('CONFLICT', 'Another unlocked session of this profile started at the same time', { hint: 'End it with nanopay lock, then unlock again.' });
  }
  server = await listen(message.socket);
  socketIno = lstatSync(message.socket, { bigint: true }).ino;
  await chmod(message.socket, 0o600);
  await checkPrivate(message.socket, 'socket');
  checker = setInterval(() => {
    if (!valid()) end();
  }, CHECK_MS);
}

/** Tells `unlock` how the start went; `then` runs once the message left (with the error when it could not). */
function report(message: AgentStarted, then: (error: Error | null) => void): void {
  if (process.send === undefined || !process.connected) return then(new Error('no channel'));
  process.send(message, undefined, {}, (error) => then(error));
}

for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => end());
process.on('uncaughtException', () => end(1));
process.on('unhandledRejection', () => end(1));

const waiting = setTimeout(() => end(1), INIT_MS);
// `unlock` lets go of the channel only after "ready": gone before that, it failed or was interrupted.
process.on('disconnect', () => {
  if (!ready) end(1);
});
process.once('message', (message: unknown) => {
  clearTimeout(waiting);
  if (!isInit(message)) {
    report({ type: 'failed', code: 'INTERNAL_ERROR', message: 'The unlocked session received no valid start message' }, () => end(1));
    return;
  }
  start(message).then(
    () => {
      ready = true;
      // Nobody heard "ready" (unlock was interrupted): the session would be one nobody asked for.
      report({ type: 'ready', pid: process.pid }, (error) => error && end(1));
    },
    (error: unknown) => {
      const known = error instanceof NanoPayError ? error : undefined;
      report({ type: 'failed', code: known?.code ?? 'INTERNAL_ERROR', message: known?.message ?? `The unlocked session could not start: ${(error as Error)?.message ?? error}` }, () => end(1));
    },
  );
});
