import { randomBytes } from 'node:crypto';
import { link, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ensurePrivateDir, readPrivateFile, writeFileAtomic } from '../fs/secure-fs.js';
import { NanoPayError } from '../errors.js';
import { isLoopback } from '../http/guards.js';
import { peerCheckAvailable, socketTablesDir } from '../http/peer.js';

/** Who may call a server that can spend (serve, agent), and how it tells. */
export interface ServerAccess {
  /** Every request needs `Authorization: Bearer <token>`: one given, or one made because users cannot be told apart. */
  token?: string;
  /** Where the made token is (0600): set only when nanopay made the token. */
  tokenFile?: string;
  /** Connections of other users are refused (the kernel's socket tables tell who connects). */
  onlyUser?: { uid: number; socketTables: string };
  /** For the start line: who may call. */
  summary: string;
}

export interface AccessOptions {
  host: string;
  /** A token the user gave (--token, --token-file or the variable). */
  token: string | undefined;
  /** --allow-other-users: neither the user check nor a made token. */
  allowOtherUsers: boolean;
  /** Where to keep a made token (e.g. serve.token in the config dir). */
  tokenFile: string;
  env: NodeJS.ProcessEnv;
}

const TOKEN_CHARS = 32;

/**
 * On loopback, other users of the machine must not spend the wallet: where
 * the system can tell who connects (Linux), their connections are refused;
 * where it cannot, a token is required, made by nanopay when none is given.
 * Off loopback a given token is the guard (the servers refuse to start without one).
 */
export async function serverAccess(options: AccessOptions): Promise<ServerAccess> {
  const { token } = options;
  const given = token === undefined ? {} : { token };
  if (!isLoopback(options.host)) return { ...given, summary: 'token required' };
  if (options.allowOtherUsers) {
    return { ...given, summary: token === undefined ? 'WARNING: any user of this machine can call it (--allow-other-users)' : 'token required; other users of this machine too (--allow-other-users)' };
  }
  const socketTables = socketTablesDir(options.env);
  const uid = process.geteuid?.();
  if (uid !== undefined && (await peerCheckAvailable(socketTables))) {
    return { ...given, onlyUser: { uid, socketTables }, summary: `only processes of uid ${uid}${token === undefined ? '' : ', with the token'}` };
  }
  if (token !== undefined) return { token, summary: 'token required' };
  const made = await ownToken(options.tokenFile);
  return { token: made, tokenFile: options.tokenFile, summary: `token required, in ${options.tokenFile} (this system cannot tell which user connects)` };
}

/**
 * The token kept in `path`, made (random, 0600) when there is none or the
 * file is empty; one shorter than TOKEN_CHARS is refused (USAGE). It is
 * kept across restarts, so a client reads it once, and two servers started at
 * once agree on it: the file appears whole (link), or not at all.
 */
export async function ownToken(path: string): Promise<string> {
  await ensurePrivateDir(dirname(path));
  for (;;) {
    const kept = (
      await readPrivateFile(path).catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return undefined;
        throw error;
      })
    )?.trim();
    if (kept !== undefined && kept.length >= TOKEN_CHARS) return kept;
    // A secret someone wrote is theirs (a shop's backend may hold it too): refused, never replaced. An empty file is filled.
    if (kept !== undefined && kept !== '') {
      throw new NanoPayError('USAGE', `${path} holds a secret of ${kept.length} characters; nanopay needs at least ${TOKEN_CHARS}. The file was left untouched`, {
        hint: `Put a longer one there (for example: openssl rand -base64 32 > ${path}), or empty the file and nanopay makes one.`,
      });
    }
    const made = randomBytes(32).toString('base64url');
    if (kept !== undefined) {
      await writeFileAtomic(path, `${made}\n`);
      return made;
    }
    const temp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
    await writeFile(temp, `${made}\n`, { mode: 0o600, flag: 'wx' });
    try {
      await link(temp, path);
      return made;
    } catch (error) {
      // Another server made it first: use theirs.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      await rm(temp, { force: true });
    }
  }
}
