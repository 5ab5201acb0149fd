import { execFileSync } from 'node:child_process';
import { cp, mkdtemp, open, rm } from 'node:fs/promises';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A dir made a small tmpfs (a disk that fills) or a read-only bind mount of
 * itself, as a full disk or a read-only config dir are for real: permission
 * bits do not stop root, a read-only mount does (EROFS). Needs root (and the
 * right to mount, which a container may not give).
 */
function probe(): string | undefined {
  if (process.platform !== 'linux') return 'not Linux';
  if (process.geteuid?.() !== 0) return 'not root (mount needs root)';
  const dir = mkdtempSync(join(tmpdir(), 'nanopay-mount-probe-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', dir], { stdio: 'pipe' });
    execFileSync('umount', [dir], { stdio: 'pipe' });
    return undefined;
  } catch (error) {
    return `mount is refused here: ${String((error as { stderr?: Buffer }).stderr ?? error).trim()}`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Why these tests cannot run here, or undefined. In CI (CI=true, as root) they must run. */
export const mountUnavailable: string | undefined = probe();
if (mountUnavailable !== undefined && process.env.CI === 'true' && process.geteuid?.() === 0) throw new Error(`mounts are needed in CI: ${mountUnavailable}`);

const umount = (dir: string): void => void execFileSync('umount', [dir], { stdio: 'pipe' });

/** `dir` as it is, now on a tmpfs of `bytes`; the returned function unmounts it (what was written there goes with it). */
export async function onSmallDisk(dir: string, bytes: number): Promise<() => void> {
  const saved = await mkdtemp(join(tmpdir(), 'nanopay-saved-'));
  try {
    await cp(dir, saved, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes},mode=0700`, 'tmpfs', dir], { stdio: 'pipe' });
    await cp(saved, dir, { recursive: true });
  } finally {
    await rm(saved, { recursive: true, force: true });
  }
  return () => umount(dir);
}

/** Writes a file in `dir` until the disk is full; removing it frees the space. */
export async function fillDisk(dir: string): Promise<string> {
  const path = join(dir, 'filler');
  const file = await open(path, 'w');
  const chunk = Buffer.alloc(4096, 1);
  try {
    for (;;) await file.write(chunk);
  } catch (error) {
    if ((error as { code?: string }).code !== 'ENOSPC') throw error;
  } finally {
    await file.close();
  }
  return path;
}

/** `dir` read-only (a bind mount of itself); the returned function makes it writable again. */
export function readOnly(dir: string): () => void {
  execFileSync('mount', ['--bind', dir, dir], { stdio: 'pipe' });
  try {
    execFileSync('mount', ['-o', 'remount,bind,ro', dir], { stdio: 'pipe' });
  } catch (error) {
    umount(dir);
    throw error;
  }
  return () => umount(dir);
}
