import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { readFileSync } from 'node:fs';
import { open, readFile, rename, rm, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { NanoPayError } from '../errors.js';
import { ensurePrivateDir } from '../fs/secure-fs.js';

/**
 * One writer at a time for what must not be written by two at once (an
 * account's chain, the key store): an in-process queue orders callers of this
 * process, and a lock file (created with O_EXCL) orders processes. A lock left
 * by a dead process is taken over.
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

/** True when the lock file names a process of this host that no longer runs. */
function isStale(content: string): boolean {
  const [pid, host] = content.split('\n');
  return host === hostname() && Number.isInteger(Number(pid)) && !alive(Number(pid));
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

/** Creates `path` (O_EXCL) holding `content`; EEXIST when there is one. */
async function createExclusive(path: string, content: string): Promise<void> {
  const handle = await open(path, 'wx', 0o600);
  try {
    await handle.writeFile(content);
  } finally {
    await handle.close();
  }
}

/**
 * A lock file's text; empty when there is none (or it is being written this
 * instant). Read synchronously: the kernel answers a few cached bytes in
 * microseconds, less than a trip through libuv's threads costs. (Creating and
 * removing stay asynchronous: they can wait on the file system's journal.)
 */
function holderOf(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/** Removes the lock file: it is ours and a plain file, so one unlink (rm stats it first). */
async function release(path: string): Promise<void> {
  await unlink(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
  });
}

async function acquireFile(path: string, held: Held, timeoutMs: number, signal?: AbortSignal): Promise<() => Promise<void>> {
  const deadline = Date.now() + timeoutMs;
  const content = `${process.pid}\n${hostname()}\n${new Date().toISOString()}`;
  for (let wait = 10; ; wait = Math.min(wait * 2, 250)) {
    try {
      await createExclusive(path, content);
      return () => release(path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' && privateDirs.delete(dirname(path))) {
        // The dir went away since it was checked: made (and checked) again.
        await lockDir(dirname(path));
        continue;
      }
      if (code !== 'EEXIST') throw error;
    }
    const holder = holderOf(path);
    if (holder !== '' && isStale(holder)) {
      await takeOverStale(path, holder);
      continue;
    }
    if (signal?.aborted) throw new NanoPayError('CANCELLED', `Cancelled while waiting for the lock of ${held.what}`);
    if (Date.now() > deadline) {
      throw new NanoPayError(held.code, `Another nanopay process has been using ${held.what} for over ${Math.round(timeoutMs / 1000)} s`, {
        hint: `If no other nanopay is running, remove ${path}.`,
      });
    }
    await sleep(wait);
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
      await unlock();
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

/**
 * A lease on `path`, taken at once or not at all: the file names this process
 * and when the lease ends (`untilMs`). Until then only its holder gives it
 * back; a lease whose process died on this host, or whose time passed, is
 * taken over. Resolves to the release (which removes the file only while it
 * is still this lease), or undefined when another holds it.
 */
export async function tryLease(path: string, untilMs: number): Promise<(() => Promise<void>) | undefined> {
  const content = `${process.pid}\n${hostname()}\n${new Date().toISOString()}\n${untilMs}\n${randomBytes(8).toString('hex')}`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await createExclusive(path, content);
      return async () => {
        if (holderOf(path) === content) await release(path);
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') await ensurePrivateDir(dirname(path));
      else if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = holderOf(path);
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
