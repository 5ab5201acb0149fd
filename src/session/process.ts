/**
 * The unlocked-session process (started by `nanopay unlock`, see
 * wallet/unlocked.ts). It receives one profile's decrypted secrets and the
 * scope it grants over its IPC channel, makes itself unreadable to other
 * processes of the user (no ptrace, no /proc/PID/mem), listens on a 0600 Unix
 * socket in a 0700 dir (or, shared with another user, a 0660 one of a group),
 * and derives and signs with them for commands until it ends: at expiry, when
 * the key store file changes in any way, when its socket is removed, on `stop`
 * (nanopay lock) and on SIGTERM/SIGINT/SIGHUP. No seed, mnemonic, passphrase,
 * private key or seal key ever leaves it; it lends only the bearer credentials
 * (API key, node-auth). It signs only blocks it is shown with the one before
 * them, and judges every send by its scope first (authority.ts), recording its
 * decisions in the profile's store. It never has the password and prints
 * nothing (no stdio). A malformed request gets an error answer and a closed
 * connection, never a crash.
 */
import { lstatSync, unlinkSync, type BigIntStats } from 'node:fs';
import { chmod, chown, mkdir } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { dirname } from 'node:path';
import { NanoPayError } from '../errors.js';
import { signBlock, type Account, type StateBlock } from '../nano/index.js';
import { signMessage } from '../nano/ed25519.js';
import { isSessionMessage } from '../x402/sessions/wire.js';
import { spendFromWire, verdictToWire } from '../ops/spending/wire.js';
import { openStore } from '../store/open.js';
import type { Store } from '../store/store.js';
import { ConfigStore } from '../wallet/config.js';
import { KeyStore } from '../wallet/keystore.js';
import { withAccountLock } from '../wallet/lock.js';
import { stateDir } from '../wallet/paths.js';
import { undumpable } from '../wallet/undumpable.js';
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
} from '../wallet/unlocked.js';
import { WALLET_KINDS, walletAccount, type WalletSecret } from '../wallet/wallet-keys.js';
import { SessionAuthority } from './authority.js';

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

let init: Omit<AgentInit, 'wallets' | 'credentials' | 'sealKey'> | undefined;
let held: Held | undefined;
let authority: SessionAuthority | undefined;
let store: Store | undefined;
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
  authority = undefined;
  void store?.close().catch(() => undefined);
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

function failure(code: string, message: string, extra: { hint?: string; details?: Record<string, unknown> } = {}): AgentFailure {
  return { ok: false, error: { code, message, ...extra } };
}

/** The fields each op takes besides `op`: anything else is refused. */
const FIELDS: Record<AgentRequest['op'], readonly string[]> = {
  ping: [],
  stop: [],
  credentials: [],
  wallets: [],
  spending: [],
  account: ['wallet', 'index'],
  judge: ['mode', 'spend'],
  sign: ['wallet', 'index', 'block', 'previous', 'spend', 'own'],
  'session-message': ['wallet', 'index', 'message'],
};

const HEX64 = /^[0-9A-Fa-f]{64}$/;

/** A state block's fields as the session reads them: the form a node's JSON has, nothing else. */
function parseBlock(value: unknown, name: string): StateBlock | string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return `${name} must be a state block`;
  const b = value as Record<string, unknown>;
  const fields = ['type', 'account', 'previous', 'representative', 'balance', 'link', 'signature', 'work'];
  if (Object.keys(b).some((k) => !fields.includes(k))) return `${name} has fields a state block has not`;
  if (b.type !== 'state') return `${name} must be a state block (a legacy block cannot be judged: make one block with the password first)`;
  if (![b.account, b.representative].every((a) => typeof a === 'string' && /^(nano|xrb)_[13][13456789abcdefghijkmnopqrstuwxyz]{59}$/.test(a))) return `${name} has an account or representative that is not an address`;
  if (typeof b.previous !== 'string' || !HEX64.test(b.previous) || typeof b.link !== 'string' || !HEX64.test(b.link)) return `${name} has a previous or link that is not 64 hex`;
  if (typeof b.balance !== 'string' || !/^[0-9]{1,40}$/.test(b.balance)) return `${name} has a balance that is not raw`;
  return b as unknown as StateBlock;
}

const validIndex = (index: unknown): index is number => typeof index === 'number' && Number.isInteger(index) && index >= 0 && index <= MAX_INDEX;

/** The request, every field checked, or why it is refused. */
function parseRequest(request: Record<string, unknown>): AgentRequest | string {
  const { op } = request;
  if (typeof op !== 'string' || !Object.hasOwn(FIELDS, op)) return `Unknown op; known: ${Object.keys(FIELDS).join(', ')}`;
  const fields = FIELDS[op as AgentRequest['op']];
  const unknown = Object.keys(request).filter((key) => key !== 'op' && !fields.includes(key));
  if (unknown.length > 0) return `Unknown field for ${op}: ${unknown.join(', ')}`;
  if (op === 'judge') {
    const { mode, spend } = request;
    if (mode !== 'dry' && mode !== 'screen') return 'mode must be dry or screen';
    return { op, mode, spend: spend as Record<string, unknown> };
  }
  if (op !== 'account' && op !== 'sign' && op !== 'session-message') return { op } as AgentRequest;
  const { wallet, index } = request;
  if (typeof wallet !== 'string' || wallet.length === 0 || wallet.length > 64) return 'wallet must be a wallet name';
  if (!validIndex(index)) return `index must be an integer from 0 to ${MAX_INDEX}`;
  if (op === 'account') return { op, wallet, index };
  if (op === 'session-message') {
    const message = typeof request.message === 'string' && /^([0-9a-f]{2})+$/.test(request.message) ? Buffer.from(request.message, 'hex') : undefined;
    return message !== undefined && isSessionMessage(message) ? { op, wallet, index, message: request.message as string } : 'message must be the hex of a nano-session opening or receipt';
  }
  const block = parseBlock(request.block, 'block');
  if (typeof block === 'string') return block;
  const previous = request.previous === undefined ? undefined : parseBlock(request.previous, 'previous');
  if (typeof previous === 'string') return previous;
  if (request.own !== undefined && !validIndex(request.own)) return `own must be an account index from 0 to ${MAX_INDEX}`;
  return {
    op,
    wallet,
    index,
    block,
    ...(previous === undefined ? {} : { previous }),
    ...(request.spend === undefined ? {} : { spend: request.spend as Record<string, unknown> }),
    ...(request.own === undefined ? {} : { own: request.own as number }),
  };
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

/** An error of the judging or signing, as the session's failure answer: its code, message, hint and details (never a secret). */
function failed(error: unknown): AgentFailure {
  if (!(error instanceof NanoPayError)) return failure('INTERNAL_ERROR', 'The request could not be answered');
  return failure(error.code, error.message, { ...(error.hint === undefined ? {} : { hint: error.hint }), ...(error.details === undefined ? {} : { details: error.details }) });
}

/** The answer to one request line, and whether the session ends with it. */
async function answerTo(text: string): Promise<{ body: AgentAnswer | AgentFailure; last?: true }> {
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
  if (init === undefined || held === undefined || authority === undefined || !valid()) return { body: failure('ENDED', 'The unlocked session has ended (expired, or the key store changed)'), last: true };
  const status: AgentAnswer = { ok: true, pid: process.pid, profile: init.profile, expires_at: new Date(init.expiresAt).toISOString(), fingerprint: init.fingerprint, scope: init.scope };
  const keys = held;
  const judging = authority;
  try {
    switch (request.op) {
      case 'stop':
        return { body: status, last: true };
      case 'ping':
        return { body: status };
      case 'credentials':
        return { body: { ...status, credentials: Object.fromEntries(keys.credentials) } };
      case 'spending':
        return { body: { ...status, spending: { ...(await judging.status()) } } };
      case 'wallets':
        return { body: { ...status, wallets: Object.fromEntries([...keys.wallets].map(([name, secret]) => [name, secret.kind])) } };
      case 'judge':
        return { body: { ...status, verdict: verdictToWire(await judging.judgeSpend(spendFromWire(request.spend), request.mode)) } };
      case 'account': {
        const account = accountOf(keys, request.wallet, request.index);
        return { body: { ...status, address: account.address, public_key: account.publicKey } };
      }
      case 'session-message': {
        // An opening or a receipt moves no money (a deposit is a block, judged as every send is): signed for any scope.
        const account = accountOf(keys, request.wallet, request.index);
        return { body: { ...status, address: account.address, signature: signMessage(Buffer.from(request.message, 'hex'), account) } };
      }
      case 'sign': {
        const account = accountOf(keys, request.wallet, request.index);
        const own = request.own === undefined ? undefined : accountOf(keys, request.wallet, request.own).address;
        await judging.admitBlock(account.address, request.block, request.previous, request.spend === undefined ? undefined : spendFromWire(request.spend), own);
        // Signed as the fields say, whatever signature or work the request carried.
        const { signature: _signature, work: _work, ...fields } = request.block;
        return { body: { ...status, address: account.address, signature: signBlock(fields, account) } };
      }
    }
  } catch (error) {
    return { body: failed(error) };
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
    connection.setTimeout(IDLE_MS, () => connection.destroy());
    connection.end(`${JSON.stringify(body)}\n`);
  };
  connection.on('data', (chunk: Buffer) => {
    if (answered) return;
    const newline = chunk.indexOf(10);
    size += newline === -1 ? chunk.length : newline;
    if (size > MAX_REQUEST) return reply(failure('TOO_LARGE', `A request is at most ${MAX_REQUEST} bytes`));
    chunks.push(newline === -1 ? chunk : chunk.subarray(0, newline));
    if (newline === -1) return;
    // Nothing more is read while the answer is made; the idle timeout no longer applies to a judgement under way.
    answered = true;
    connection.pause();
    connection.setTimeout(0);
    void answerTo(Buffer.concat(chunks).toString('utf8'))
      .catch(() => ({ body: failure('INTERNAL_ERROR', 'The request could not be answered') }) as { body: AgentFailure; last?: true })
      .then((answer) => {
        // The socket is removed before the answer leaves: whoever reads "stopped" finds it gone.
        if (answer.last) end();
        reply(answer.body);
      });
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
    isRecord(v.credentials) && Object.entries(v.credentials).every(([name, secret]) => CREDENTIAL_NAMES.includes(name as CredentialName) && typeof secret === 'string') &&
    typeof v.scope === 'string' && isRecord(v.policy) && isRecord(v.contacts) && typeof v.configDir === 'string' &&
    typeof v.sealKey === 'string' && /^[0-9a-f]{64}$/.test(v.sealKey) &&
    (v.databaseUrl === undefined || typeof v.databaseUrl === 'string') && (v.shareGid === undefined || Number.isSafeInteger(v.shareGid))
  );
}

/**
 * The dir of a socket shared with another user: it must be a directory of this
 * user (or root) that no one else can write to, so nobody replaces the socket.
 */
function checkSharedDir(dir: string): void {
  const info = lstatSync(dir, { throwIfNoEntry: false });
  const uid = process.getuid?.();
  if (info === undefined || !info.isDirectory()) throw new NanoPayError('USAGE', `${dir} is not a directory: make it first (the shared socket goes there)`);
  if (uid !== undefined && info.uid !== uid && info.uid !== 0) throw new NanoPayError('UNSAFE_SESSION', `${dir} belongs to another user (uid ${info.uid}); the shared socket goes only in a directory of yours`);
  if ((info.mode & 0o022) !== 0) throw new NanoPayError('UNSAFE_SESSION', `${dir} is writable by others (mode ${(info.mode & 0o777).toString(8)}), who could replace the socket`);
}

async function start(message: AgentInit): Promise<void> {
  // Everything made from here on is private to the user: the socket is closed to others from birth (then 0600).
  process.umask(0o077);
  const { wallets, credentials, sealKey: _sealKey, ...rest } = message;
  init = rest;
  held = { wallets: new Map(Object.entries(wallets)), credentials: new Map(Object.entries(credentials) as [CredentialName, string][]), derived: new Map() };
  keystoreStat = statOf(message.keystore);
  if ((await KeyStore.current(message.keystore)) !== message.fingerprint || !sameFile(keystoreStat, statOf(message.keystore))) {
    throw new NanoPayError('CONFLICT', 'The key store changed while it was being unlocked; nothing was kept', { hint: 'Run nanopay unlock again.' });
  }
  const lockDir = stateDir(message.configDir, 'locks');
  store = await openStore({
    storeDir: stateDir(message.configDir, 'store'),
    requestsDir: stateDir(message.configDir, 'requests'),
    lockDir,
    profile: message.profile,
    ...(message.databaseUrl === undefined ? {} : { databaseUrl: message.databaseUrl }),
  });
  authority = new SessionAuthority(message.profile, message, store, new ConfigStore(message.configDir), (name, fn) => withAccountLock(lockDir, name, fn));
  await authority.remember();
  const dir = dirname(message.socket);
  if (message.shareGid === undefined) {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await checkPrivate(dir, 'dir');
  } else checkSharedDir(dir);
  if ((await probe(message.socket, message.shareGid !== undefined)) === 'live') {
    throw new NanoPayError('CONFLICT', 'Another unlocked session of this profile started at the same time', { hint: 'End it with nanopay lock, then unlock again.' });
  }
  server = await listen(message.socket);
  socketIno = lstatSync(message.socket, { bigint: true }).ino;
  if (message.shareGid === undefined) {
    await chmod(message.socket, 0o600);
    await checkPrivate(message.socket, 'socket');
  } else {
    // Its group's users reach it, nobody else: the group was named at unlock.
    await chown(message.socket, -1, message.shareGid);
    await chmod(message.socket, 0o660);
  }
  checker = setInterval(() => {
    if (!valid()) end();
  }, CHECK_MS);
}

/** Tells `unlock` how the start went; `then` runs once the message left (with the error when it could not). */
function report(message: AgentStarted, then: (error: Error | null) => void): void {
  if (process.send === undefined || !process.connected) return then(new Error('no channel'));
  process.send(message, undefined, {}, (error) => then(error));
}

// Before any secret arrives: other processes of the user (an agent among them) cannot read this one's memory; `unlock`
// hears so, checks that nothing traces it, and only then sends the secrets.
report({ type: 'hello', undumpable: undumpable() }, (error) => error && end(1));

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
