import { mkdtempSync } from 'node:fs';
import { chmod, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Temporary directories for tests, removed after the test file that made them
 * (test/setup/temp-dirs.ts runs removeTempDirs after each file), so `npm test`
 * leaves nothing in TMPDIR: scripts/test.mjs fails when it does.
 */
const made = new Set<string>();

/** A new directory in TMPDIR (`prefix` + random), removed after the test file. */
export async function tempDir(prefix = 'nanopay-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  made.add(dir);
  return dir;
}

/** tempDir for code that can not wait (a synchronous fixture). */
export function tempDirSync(prefix = 'nanopay-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.add(dir);
  return dir;
}

/** Gives the owner back every permission a test took away (a 000 dir), so the tree can be removed. */
async function reopen(path: string): Promise<void> {
  await chmod(path, 0o700).catch(() => undefined);
  const entries = await readdir(path, { withFileTypes: true }).catch(() => []);
  await Promise.all(entries.filter((e) => e.isDirectory()).map((e) => reopen(join(path, e.name))));
}

/** Removes every directory tempDir made so far (what a process of the test still writes there goes with it). */
export async function removeTempDirs(): Promise<void> {
  const dirs = [...made];
  made.clear();
  await Promise.all(
    dirs.map(async (dir) => {
      try {
        await rm(dir, { recursive: true, force: true, maxRetries: 5 });
      } catch {
        await reopen(dir);
        await rm(dir, { recursive: true, force: true, maxRetries: 5 });
      }
    }),
  );
}
