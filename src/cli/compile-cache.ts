import { lstatSync, mkdirSync, type Stats } from 'node:fs';
import module from 'node:module';
import { join, resolve } from 'node:path';
import { configDir } from '../wallet/paths.js';

/** Node 22.1's API, which the Node 20 types this project builds against lack. */
const { enableCompileCache: enableNodeCompileCache } = module as { enableCompileCache?: (directory: string) => unknown };

/**
 * Whether only this user can write in `stats`' directory: a real directory (not a link), theirs, writable by
 * neither group nor others. On Windows, which has no owner ids here, the profile's own ACLs decide.
 */
function ownedPrivately(stats: Stats | undefined): boolean {
  if (stats === undefined || stats.isSymbolicLink() || !stats.isDirectory()) return false;
  const uid = process.geteuid?.();
  return uid === undefined || (stats.uid === uid && (stats.mode & 0o022) === 0);
}

/**
 * Turns on Node's module compile cache (Node 22.1 and later) for the rest of this process, so that the next start
 * of a command deserialises the bundle's code instead of compiling it again (about a tenth of a command's start-up).
 *
 * The cache is code that runs: who can write it can make every later command of this user run what they like (Node
 * checks an entry against its source with a CRC32, which is no defence against anyone who writes both). So it is
 * kept in the config dir, and only when that dir and the cache's own dir are this user's alone; otherwise, and when
 * the config dir does not exist yet, the command runs without it. Node's default, os.tmpdir()/node-compile-cache,
 * may be a directory another local user made first. An entry whose source changed (a rebuild, an upgrade) fails
 * Node's check and is compiled and written anew; entries of another Node version are never read. Quiet: a cache
 * that cannot be used or written (a read-only disk) only costs the compile.
 */
export function enableCompileCache(env: NodeJS.ProcessEnv = process.env): void {
  // Node 22.0 has none; NODE_DISABLE_COMPILE_CACHE (for coverage, say) is Node's to honour.
  if (enableNodeCompileCache === undefined) return;
  try {
    const config = resolve(configDir(env));
    if (!ownedPrivately(lstatSync(config, { throwIfNoEntry: false }))) return;
    const dir = join(config, 'compile-cache');
    // Made here, 0700, rather than by Node with the umask's mode; mkdir neither follows a link nor replaces anything.
    try {
      mkdirSync(dir, { mode: 0o700 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    if (ownedPrivately(lstatSync(dir))) enableNodeCompileCache(dir);
  } catch {
    // A config dir nanopay cannot look into or write (the command says so itself if it needs it): no cache.
  }
}
