/**
 * The unlocked-session process (started by `nanopay unlock`, see unlocked.ts).
 * It receives one profile's decrypted secrets over its IPC channel, listens on
 * a 0600 Unix socket in a 0700 dir, and derives and signs with them for
 * commands until it ends: at expiry, when the key store file changes in any
 * way, when its socket is removed, on `stop` (nanopay lock) and on
 * SIGTERM/SIGINT/SIGHUP. No seed, mnemonic, passphrase or private key ever
 * leaves it; it lends only the bearer credentials (API key, node-auth). It
 * never has the password, writes nothing but its socket, and prints nothing
 * (no stdio). A malformed request gets an error answer and a closed
 * connection, never a crash.
 */
import { lstatSync, unlinkSync, type BigIntStats } from 'node:fs';
import { chmod, mkdir } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { dirname } from 'node:path';
import { NanoPayError } from '../errors.js';
import { signBlockHash, type Account } from '../nano/index.js';
import { KeyStore } from './keystore.js';
import {
  CREDENTIAL_NAMES,
  MAX_REQUEST,
  checkPrivate,
  probe,
  type AgentAnswer,
  type AgentFailure,
  type AgentInit,
  type AgentRequest,
  type AgentStarted,
  type CredentialName,
} from './unlocked.js';
import { WALLET_KINDS, walletAccount, type WalletSecret } from './wallet-keys.js';

/** How often the key store, the socket and the clock are checked. */
const CHECK_MS = 500;
/** A connection that sends no full request in this time is closed. */
const IDLE_MS = 2000;
const MAX_CONNECTIONS = 16;
/** How long the agent waits for its secrets after it starts. */
const INIT_MS = 10_000;
/** Derived accounts kept (a BIP39 mnemonic costs a PBKDF2 per derivation); the oldest goes first. */
const MAX_DERIVED = 256;
/** The largest account index of any derivation (a 64-hex seed's; BIP39's is half of it). */
const MAX_INDEX = 0xffffffff;

interface Held {
  wallets: Map<string, WalletSecret>;
  credentials: Map<CredentialName, string>;
  derived: Map<string, Account>;
}

let init: Omit<AgentInit, 'wallets' | 'credentials'> | undefined;
let held: Held | undefined;
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
  held?.wallets.clear();
  held?.credentials.clear();
  held?.derived.clear();
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

/** The fields each op takes besides `op`: anything else is refused. */
const FIELDS: Record<AgentRequest['op'], readonly string[]> = {
  ping: [],
  stop: [],
  credentials: [],
  account: ['wallet', 'index'],
  sign: ['wallet', 'index', 'hash'],
};

/** The request, every field checked, or why it is refused. */
function parseRequest(request: Record<string, unknown>): AgentRequest | string {
  const { op } = request;
  if (typeof op !== 'string' || !Object.hasOwn(FIELDS, op)) return `Unknown op; known: ${Object.keys(FIELDS).join(', ')}`;
  const fields = FIELDS[op as AgentRequest['op']];
  const unknown = Object.keys(request).filter((key) => key !== 'op' && !fields.includes(key));
  if (unknown.length > 0) return `Unknown field for ${op}: ${unknown.join(', ')}`;
  if (op !== 'account' && op !== 'sign') return { op } as AgentRequest;
  const { wallet, index, hash } = request;
  if (typeof wallet !== 'string' || wallet.length === 0 || wallet.length > 64) return 'wallet must be a wallet name';
  if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index > MAX_INDEX) return `index must be an integer from 0 to ${MAX_INDEX}`;
  if (op === 'account') return { op, wallet, index };
  if (typeof hash !== 'string' || !/^[0-9A-Fa-f]{64}$/.test(hash)) return 'hash must be a block hash (64 hex)';
  return { op, wallet, index, hash };
}

/** Account `index` of a held wallet, derived once and kept. */
function accountOf(keys: Held, wallet: string, index: number): Account {
  const key = `${wallet}\n${index}`;
  const known = keys.derived.get(key);
  if (known !== undefined) return known;
  const secret = keys.wallets.get(wallet);
  if (secret === undefined) throw new NanoPayError('NOT_IN_SESSION', `The unlocked session of profile "${init?.profile}" holds no wallet named "${wallet}"`);
  const account = walletAccount(secret, index);
  if (keys.derived.size >= MAX_DERIVED) keys.derived.delete(keys.derived.keys().next().value as string);
  keys.derived.set(key, account);
  return account;
}

/** The answer to one request line, and whether the session ends with it. */
function answerTo(text: string): { body: AgentAnswer | AgentFailure; last?: true } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { body: failure('BAD_REQUEST', 'The request is not JSON') };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { body: failure('BAD_REQUEST', 'The request is not a JSON object') };
  const request = parseRequest(parsed as Record<string, unknown>);
  if (typeof request === 'string') return { body: failure('BAD_REQUEST', request) };
  if (!ready) return { body: failure('STARTING', 'The unlocked session is starting') };
  if (init === undefined || held === undefined || !valid()) return { body: failure('ENDED', 'The unlocked session has ended (expired, or the key store changed)'), last: true };
  const status: AgentAnswer = { ok: true, pid: process.pid, profile: init.profile, expires_at: new Date(init.expiresAt).toISOString(), fingerprint: init.fingerprint };
  switch (request.op) {
    case 'stop':
      return { body: status, last: true };
    case 'ping':
      return { body: status };
    case 'credentials':
      return { body: { ...status, credentials: Object.fromEntries(held.credentials) } };
    case 'account':
    case 'sign': {
      let account: Account;
      try {
        account = accountOf(held, request.wallet, request.index);
      } catch (error) {
        if (error instanceof NanoPayError) return { body: failure(error.code, error.message) };
        throw error;
      }
      if (request.op === 'account') return { body: { ...status, address: account.address, public_key: account.publicKey } };
      return { body: { ...status, address: account.address, signature: signBlockHash(request.hash, account) } };
    }
  }
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

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function isWalletSecret(value: unknown): value is WalletSecret {
  return isRecord(value) && WALLET_KINDS.includes(value.kind as WalletSecret['kind']) && typeof value.secret === 'string' && (value.passphrase === undefined || typeof value.passphrase === 'string');
}

function isInit(value: unknown): value is AgentInit {
  if (!isRecord(value) || value.type !== 'init') return false;
  const v = value as unknown as AgentInit;
  return (
    [v.profile, v.socket, v.keystore, v.fingerprint].every((s) => typeof s === 'string' && s.length > 0) &&
    Number.isSafeInteger(v.expiresAt) &&
    isRecord(v.wallets) && Object.values(v.wallets).every(isWalletSecret) &&
    isRecord(v.credentials) && Object.entries(v.credentials).every(([name, secret]) => CREDENTIAL_NAMES.includes(name as CredentialName) && typeof secret === 'string')
  );
}

async function start(message: AgentInit): Promise<void> {
  // Everything made from here on is private to the user: the socket is closed to others from birth (then 0600).
  process.umask(0o077);
  const { wallets, credentials, ...rest } = message;
  init = rest;
  held = { wallets: new Map(Object.entries(wallets)), credentials: new Map(Object.entries(credentials) as [CredentialName, string][]), derived: new Map() };
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
