import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { closeSync, ftruncateSync, linkSync, openSync, readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { readFile, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { NanoPayError } from '../errors.js';
import { ensurePrivateDir, ensurePrivateDirSync, linkUnsupported } from '../fs/secure-fs.js';

/**
 * One writer at a time for what must not be written by two at once (an
 * account's chain, the key store): an in-process queue orders callers of this
 * process, and a lock file (made exclusively: a link that fails when the name
 * exists) orders processes. A lock left by a dead process is taken over.
 */

const queues = new Map<string, Promise<void>>();

/** Whether process `pid` of this host still runs (EPERM: it does, as another user's). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** This host's name, as lock files name it: asked once (a system call), not for each lock taken. */
let host: string | undefined;
const thisHost = (): string => (host ??= hostname());

/** True when the lock file names a process of this host that no longer runs. */
function isStale(content: string): boolean {
  const [pid, named] = content.split('\n');
  return named === thisHost() && Number.isInteger(Number(pid)) && !alive(Number(pid));
}

function takeOverStaleSync(path: string, content: string): void {
  const aside = `${path}.${randomBytes(4).toString('hex')}.stale`;
  try {
    renameSync(path, aside);
  } catch {
    return;
  }
  // Another process may have replaced the stale lock between our read and rename: give it back.
  if (holderOf(aside) !== content) {
    try {
      renameSync(aside, path);
    } catch {
      // Taken again meanwhile: the stale one stays aside.
    }
  } else unlinkSync(aside);
}

async function takeOverStale(path: string, content: string): Promise<void> {
  const aside = `${path}.${randomBytes(4).toString('hex')}.stale`;
  try {
    await rename(path, aside);
  } catch {
    return;
  }
  // Another process may have replaced the stale lock between our read and rename: give it back.
  if ((await readFile(aside, 'utf8').catch(() => '')) !== content) await rename(aside, path).catch(() => undefined);
  else await rm(aside, { force: true });
}

/** Who waited too long, for the error: the account or the key store. */
interface Held {
  code: 'ACCOUNT_BUSY' | 'STORE_BUSY';
  what: string;
}

/**
 * Lock dirs found private by this process: checked once (a dir of ours, 0700,
 * stays ours), and again when one went away. Each check was two lstat calls
 * on every lock taken (a shop's every request).
 */
const privateDirs = new Set<string>();

async function lockDir(dir: string): Promise<void> {
  if (privateDirs.has(dir)) return;
  await ensurePrivateDir(dir);
  privateDirs.add(dir);
}

/**
 * Lock files are links to a file of this process, its holder (one per lock
 * dir, made on first use, naming the process): link() fails with EEXIST when
 * the name exists, as an O_EXCL create does, but gives an existing inode a
 * new name, where creating a file allocates an inode, which on a busy ext4
 * costs hundreds of microseconds of kernel time (a payment takes four locks).
 * They are made, read and removed synchronously: each a system call on a few
 * bytes of metadata, where a trip through libuv's threads costs several times
 * that in CPU. Only the rare take-over of a stale lock goes asynchronously.
 */
interface Holder {
  path: string;
  content: string;
}

const HOLDER = /^\.holder-(\d+)-/;
/** This process's holder in each lock dir; a lease's holder by the lease's path (its content changes with each lease). */
const holders = new Map<string, Holder>();

let removing = false;

/** Removes this process's holders as it exits; a process that dies leaves them to the next one's sweep. */
function removeHolders(): void {
  for (const { path } of holders.values()) {
    try {
      unlinkSync(path);
    } catch {
      // Already gone with its dir.
    }
  }
}

/** Holders that processes of this host left when they died, removed from `dir` (once per dir and process). */
function sweepDeadHolders(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = HOLDER.exec(name)?.[1];
    if (pid === undefined || Number(pid) === process.pid) continue;
    const path = join(dir, name);
    if (!isStale(holderOf(path))) continue;
    try {
      unlinkSync(path);
    } catch {
      // Another process swept it first.
    }
  }
}

/** The holder for `key` (a lock dir, or a lease's path) in `dir`, made on first use with `content`. */
function holderFor(key: string, dir: string, content: string): Holder {
  let holder = holders.get(key);
  if (holder === undefined) {
    if (![...holders.values()].some((h) => dirname(h.path) === dir)) sweepDeadHolders(dir);
    if (!removing) process.once('exit', removeHolders);
    removing = true;
    holder = { path: join(dir, `.holder-${process.pid}-${randomBytes(4).toString('hex')}`), content };
    writeFileSync(holder.path, content, { flag: 'wx', mode: 0o600 });
    holders.set(key, holder);
  }
  return holder;
}

/** Dirs on a file system without hard links: their lock files are files of their own. */
const linkless = new Set<string>();

/**
 * Links `holder` as `path`; EEXIST when there is one. A holder gone with its
 * dir (ENOENT) is made again next time. Where the file system has no hard
 * links, `path` is made as a file of its own with the holder's text (O_EXCL).
 */
function linkExclusive(key: string, holder: Holder, path: string): void {
  const dir = dirname(path);
  if (!linkless.has(dir)) {
    try {
      linkSync(holder.path, path);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') holders.delete(key);
      if (!linkUnsupported(error)) throw error;
      linkless.add(dir);
    }
  }
  writeFileSync(path, holder.content, { flag: 'wx', mode: 0o600 });
}

/** Creates the lock file `path`: a link to this process's holder in its dir; EEXIST when there is one. */
function createExclusive(path: string): void {
  const dir = dirname(path);
  linkExclusive(dir, holderFor(dir, dir, `${process.pid}\n${thisHost()}\n${new Date().toISOString()}`), path);
}

/** A lock file's text; empty when there is none (or it is being written this instant). */
function holderOf(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/** Removes the lock file: it is ours and a plain file, so one unlink (rm stats it first). */
function release(path: string): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/** One try at the lock file `path`: taken (undefined), or the text of the lock that holds it (empty while it is being written). */
function tryAcquire(path: string): string | undefined {
  try {
    createExclusive(path);
    return undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return holderOf(path);
}

function busy(path: string, held: Held, timeoutMs: number): NanoPayError {
  return new NanoPayError(held.code, `Another nanopay process has been using ${held.what} for over ${Math.round(timeoutMs / 1000)} s`, {
    hint: `If no other nanopay is running, remove ${path}.`,
  });
}

async function acquireFile(path: string, held: Held, timeoutMs: number, signal?: AbortSignal): Promise<() => void> {
  const deadline = Date.now() + timeoutMs;
  for (let wait = 10; ; wait = Math.min(wait * 2, 250)) {
    let holder: string | undefined;
    try {
      holder = tryAcquire(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || !privateDirs.delete(dirname(path))) throw error;
      // The dir went away since it was checked: made (and checked) again.
      await lockDir(dirname(path));
      continue;
    }
    if (holder === undefined) return () => release(path);
    if (holder !== '' && isStale(holder)) {
      await takeOverStale(path, holder);
      continue;
    }
    if (signal?.aborted) throw new NanoPayError('CANCELLED', `Cancelled while waiting for the lock of ${held.what}`);
    if (Date.now() > deadline) throw busy(path, held, timeoutMs);
    await sleep(wait);
  }
}

/** Waits without returning to the event loop: for a lock taken by synchronous code. */
const pause = (ms: number): void => void Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * Runs `fn` (synchronous, and short: a read and a rename) as the only writer
 * of the settings file across processes, so two commands that change it at
 * once both keep their change. A lock left by a dead process is taken over.
 */
export function withConfigLockSync<T>(lockDir: string, fn: () => T, timeoutMs = 10_000): T {
  const path = join(lockDir, 'config.lock');
  const held: Held = { code: 'STORE_BUSY', what: 'the settings file' };
  const deadline = Date.now() + timeoutMs;
  if (!privateDirs.has(lockDir)) {
    ensurePrivateDirSync(lockDir);
    privateDirs.add(lockDir);
  }
  for (let wait = 1; ; wait = Math.min(wait * 2, 50)) {
    const holder = tryAcquire(path);
    if (holder === undefined) break;
    if (holder !== '' && isStale(holder)) {
      takeOverStaleSync(path, holder);
      continue;
    }
    if (Date.now() > deadline) throw busy(path, held, timeoutMs);
    pause(wait);
  }
  try {
    return fn();
  } finally {
    release(path);
  }
}

interface LockOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
}

async function withFileLock<T>(path: string, held: Held, fn: () => Promise<T>, options: LockOptions): Promise<T> {
  const previous = queues.get(path) ?? Promise.resolve();
  let done!: () => void;
  const released = new Promise<void>((resolve) => (done = resolve));
  const mine = previous.then(() => released);
  queues.set(path, mine);
  await previous;
  try {
    await lockDir(dirname(path));
    const unlock = await acquireFile(path, held, options.timeoutMs ?? 120_000, options.signal);
    try {
      return await fn();
    } finally {
      unlock();
    }
  } finally {
    done();
    if (queues.get(path) === mine) queues.delete(path);
  }
}

/** Runs `fn` as the account's only writer: its blocks are built and published one at a time. */
export function withAccountLock<T>(lockDir: string, address: string, fn: () => Promise<T>, options: LockOptions = {}): Promise<T> {
  return withFileLock(join(lockDir, `${address}.lock`), { code: 'ACCOUNT_BUSY', what: 'this account' }, fn, options);
}

/** Paths this process holds a lease on. */
const leased = new Set<string>();

/** The lease `content` on `path` as held: its release removes the file only while it is still this lease. */
function leaseOf(path: string, content: string): () => Promise<void> {
  leased.add(path);
  return async () => {
    leased.delete(path);
    if (holderOf(path) === content) release(path);
  };
}

/**
 * A lease on `path`, taken at once or not at all: the file names this process
 * and when the lease ends (`untilMs`). Until then only its holder gives it
 * back; a lease whose process died on this host, or whose time passed, is
 * taken over. Resolves to the release (which removes the file only while it
 * is still this lease), or undefined when another holds it.
 */
export async function tryLease(path: string, untilMs: number): Promise<(() => Promise<void>) | undefined> {
  // One lease per path per process: its holder's text is this lease's.
  if (leased.has(path)) return undefined;
  const content = `${process.pid}\n${thisHost()}\n${new Date().toISOString()}\n${untilMs}\n${randomBytes(8).toString('hex')}`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const holder = holderFor(path, dirname(path), content);
      if (holder.content !== content) {
        // Rewritten in place (its inode and its block kept): linked nowhere while no lease of this process is on the path.
        const fd = openSync(holder.path, 'r+');
        try {
          writeSync(fd, content, 0);
          ftruncateSync(fd, Buffer.byteLength(content));
        } finally {
          closeSync(fd);
        }
        holder.content = content;
      }
      linkExclusive(path, holder, path);
      return leaseOf(path, content);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') await ensurePrivateDir(dirname(path));
      else if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = holderOf(path);
    // This very lease (its random text): put back by a take-over that found it was not the stale lease it moved aside.
    if (holder === content) return leaseOf(path, content);
    const until = Number(holder.split('\n')[3]);
    if (holder !== '' && (isStale(holder) || (Number.isFinite(until) && until < Date.now()))) await takeOverStale(path, holder);
    else if (holder !== '') return undefined;
  }
  return undefined;
}

/** Runs `fn` as the key store's only writer, so that no write is lost to another's. */
export function withKeystoreLock<T>(keystorePath: string, fn: () => Promise<T>, options: LockOptions = {}): Promise<T> {
  return withFileLock(`${keystorePath}.lock`, { code: 'STORE_BUSY', what: 'the key store' }, fn, options);
}
