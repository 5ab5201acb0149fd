import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, constants, fsync, fsyncSync, ftruncateSync, lstatSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, type Stats, writeFileSync, writeSync } from 'node:fs';
import { chmod, mkdir, open, readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { dirname, join, resolve } from 'node:path';
import { NanoPayError } from '../errors.js';

/** A link where one of our files or our dir should be: following it would write or chmod what is not ours. */
function linkRefused(path: string): NanoPayError {
  return new NanoPayError('STORE_CORRUPT', `${path} is a symbolic link; nanopay does not follow links for its own files and directory`, {
    hint: 'Point NANOPAY_CONFIG_DIR at the real directory, or replace the link with the file it points to.',
  });
}

function checkOwnDir(dir: string, stats: Stats): void {
  if (stats.isSymbolicLink()) throw linkRefused(dir);
  if (!stats.isDirectory()) throw new NanoPayError('STORE_CORRUPT', `${dir} is not a directory`);
  // Before any chmod: another user's dir is theirs to read and change, never a place for our secrets.
  const uid = process.geteuid?.();
  if (uid !== undefined && stats.uid !== uid) {
    throw new NanoPayError('UNSAFE_PATH', `${dir} belongs to another user (uid ${stats.uid}, you are ${uid}); nanopay keeps its keys and settings only in a directory of yours`, {
      hint: `Use a directory of your own (NANOPAY_CONFIG_DIR, or the command's --dir / --data-dir), or, if this one should be yours, have it handed over: sudo chown -R ${uid} ${dir}`,
    });
  }
}

/**
 * Creates a private directory (0700), tightening it if it already exists.
 * A link in its place is refused rather than followed: its target may be
 * shared; so is a directory of another user (UNSAFE_PATH). The look is one
 * synchronous lstat (a dir that is there, as it nearly always is, costs
 * one system call rather than trips through libuv's threads).
 */
export async function ensurePrivateDir(dir: string): Promise<void> {
  // resolve() drops a trailing slash, with which lstat would follow the link.
  const path = resolve(dir);
  let stats = lstatSync(path, { throwIfNoEntry: false });
  // Only when nothing is there: mkdir would follow a dangling link and create its target.
  if (stats === undefined) {
    await mkdir(path, { recursive: true, mode: 0o700 });
    stats = lstatSync(path);
  }
  checkOwnDir(path, stats);
  // Only when needed: a dir already private may be on a read-only disk, where the commands that only read still run.
  if ((stats.mode & 0o777) !== 0o700) await chmod(path, 0o700);
}

/** Synchronous twin of ensurePrivateDir, for the settings store's synchronous start-up. */
export function ensurePrivateDirSync(dir: string): void {
  const path = resolve(dir);
  if (lstatSync(path, { throwIfNoEntry: false }) === undefined) mkdirSync(path, { recursive: true, mode: 0o700 });
  const stats = lstatSync(path);
  checkOwnDir(path, stats);
  if ((stats.mode & 0o777) !== 0o700) chmodSync(path, 0o700);
}

// O_NOFOLLOW makes the open itself refuse a link, so nothing can swap one in after a check.
const NO_FOLLOW = constants.O_NOFOLLOW ?? 0;

/** Reads a file of ours, or undefined when there is none; a symbolic link in its place is refused. */
export function readOwnFileSync(path: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | NO_FOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP' || lstatSync(path, { throwIfNoEntry: false })?.isSymbolicLink()) throw linkRefused(path);
    throw error;
  }
  try {
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

/**
 * Synchronous twin of writeFileAtomic. The rename replaces a link in `path`
 * rather than writing through it.
 */
export function writeFileAtomicSync(path: string, data: string | Uint8Array): void {
  const dir = dirname(path);
  ensurePrivateDirSync(dir);
  const temp = join(dir, `.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(temp, 'wx', 0o600);
  try {
    writeFileSync(fd, data);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
  const dirFd = openSync(dir, 'r');
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
}

/** Codes of a file system without hard links (FAT, some network and FUSE mounts), or of a file at its most links. */
const NO_LINK_CODES = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV', 'EMLINK']);

/** Whether link() failed because this file system cannot give the file another name: the caller makes a file instead. */
export const linkUnsupported = (error: unknown): boolean => NO_LINK_CODES.has((error as NodeJS.ErrnoException).code ?? '');

/** fsync of a file descriptor, on libuv's threads: the one step of a write that waits for the disk. */
export const fsyncFd = promisify(fsync);

/** Up to this size a file is written synchronously (into the page cache, microseconds); only its fsyncs wait off the event loop. */
const SMALL_FILE = 64 * 1024;

/**
 * Replaces `path` atomically with a private (0600) file: a crash leaves either
 * the old file or the new one, never half of either. A small file (a journal
 * entry, a record) is opened, written, closed and renamed synchronously, each
 * a system call that does not wait for the disk, where each asynchronous
 * step is a trip through libuv's threads; the two fsyncs stay asynchronous.
 * `spare`: a file of the caller's to write it through when there is one
 * (the journal keeps a cleared entry's file as its next one's), else a new temp file.
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array, options: { spare?: string } = {}): Promise<void> {
  const dir = dirname(path);
  await ensurePrivateDir(dir);
  const small = data.length <= SMALL_FILE;
  const spare = options.spare === undefined || !small ? undefined : openSpare(options.spare);
  const temp = spare === undefined ? join(dir, `.${randomBytes(6).toString('hex')}.tmp`) : (options.spare as string);
  if (small) {
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    const fd = spare ?? openSync(temp, 'wx', 0o600);
    try {
      // At the start, and cut to its length: a spare holds its last text.
      writeSync(fd, bytes, 0, bytes.length, 0);
      ftruncateSync(fd, bytes.length);
      await fsyncFd(fd);
    } finally {
      closeSync(fd);
    }
  } else {
    const handle = await open(temp, 'wx', 0o600);
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
  }
  try {
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
  await syncDir(dir);
}

/**
 * The spare file `path` opened for writing, or undefined when there is none:
 * a file of ours kept to be written and renamed into place (see
 * writeFileAtomic's `spare`), so a write reuses its inode rather than
 * allocating one, which on a busy ext4 costs hundreds of microseconds of
 * kernel time. Not followed if it is a link.
 */
function openSpare(path: string): number | undefined {
  try {
    return openSync(path, constants.O_WRONLY | NO_FOLLOW);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** fsync the directory so the rename itself survives a power cut. */
async function syncDir(dir: string): Promise<void> {
  const fd = openSync(dir, 'r');
  try {
    await fsyncFd(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * A small file's text, or undefined when there is none. Read synchronously:
 * the kernel answers a small cached file in microseconds, where an
 * asynchronous read is several trips through libuv's threads (a payment reads
 * its account's journal entry and idempotency record this way). Only for
 * small files: a large one would hold up the event loop.
 */
export function readIfExistsSync(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Reads a file that holds a secret (a password or token file): like ssh with a
 * private key, it must belong to this user and be closed to group and others,
 * else anyone could have read it or put their own secret in it (UNSAFE_PATH).
 * The checks are on the file opened (a link's target, a pipe), not on a name
 * that could be swapped after them. Errors of the open itself are thrown as they come.
 */
export async function readPrivateFile(path: string): Promise<string> {
  const handle = await open(path, 'r');
  try {
    const info = await handle.stat();
    const uid = process.geteuid?.();
    if (uid !== undefined) {
      const mode = (info.mode & 0o777).toString(8).padStart(4, '0');
      const loose = info.uid !== uid ? `belongs to another user (uid ${info.uid})` : (info.mode & 0o077) !== 0 ? `is open to group or others (mode ${mode})` : undefined;
      if (loose !== undefined) {
        throw new NanoPayError('UNSAFE_PATH', `${path} holds a secret but ${loose}; nanopay does not use it`, {
          hint: info.uid !== uid ? 'Use a file that belongs to you, readable only by you (chmod 600).' : `chmod 600 ${path}`,
        });
      }
    }
    return await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
}

export async function readIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
