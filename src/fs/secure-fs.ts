import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, constants, fsyncSync, lstatSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, type Stats, writeFileSync } from 'node:fs';
import { chmod, lstat, mkdir, open, readFile, rename, rm } from 'node:fs/promises';
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
}

/**
 * Creates a private directory (0700), tightening it if it already exists.
 * A link in its place is refused rather than followed: its target may be shared.
 */
export async function ensurePrivateDir(dir: string): Promise<void> {
  // resolve() drops a trailing slash, with which lstat would follow the link.
  const path = resolve(dir);
  // Only when nothing is there: mkdir would follow a dangling link and create its target.
  const before = await lstat(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (before === undefined) await mkdir(path, { recursive: true, mode: 0o700 });
  checkOwnDir(path, await lstat(path));
  await chmod(path, 0o700);
}

/** Synchronous twin of ensurePrivateDir, for the settings store's synchronous start-up. */
export function ensurePrivateDirSync(dir: string): void {
  const path = resolve(dir);
  if (lstatSync(path, { throwIfNoEntry: false }) === undefined) mkdirSync(path, { recursive: true, mode: 0o700 });
  checkOwnDir(path, lstatSync(path));
  chmodSync(path, 0o700);
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

/**
 * Replaces `path` atomically with a private (0600) file: a crash leaves either
 * the old file or the new one, never half of either.
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array): Promise<void> {
  const dir = dirname(path);
  await ensurePrivateDir(dir);
  const temp = join(dir, `.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temp, 'wx', 0o600);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
  await syncDir(dir);
}

/** fsync the directory so the rename itself survives a power cut. */
export async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
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
