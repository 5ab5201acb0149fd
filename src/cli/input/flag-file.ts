import { NanoPayError } from '../../errors.js';
import { readPrivateFile } from '../../fs/secure-fs.js';

/**
 * The text of a file of secrets named by a flag (--token-file, --passphrase-file, --password-file): one
 * that others could read or change is refused (UNSAFE_PATH), one that cannot be read is a usage error naming the flag.
 */
export async function readFlagFile(path: string, flag: string): Promise<string> {
  try {
    return await readPrivateFile(path);
  } catch (error) {
    if (error instanceof NanoPayError) throw error;
    throw new NanoPayError('USAGE', `Cannot read the file given to ${flag} (${path}): ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

/** The bearer token a server requires: --token-file, else --token (or its variable); short tokens are refused. */
export async function bearerToken(flags: { token?: string; 'token-file'?: string }, server: string): Promise<string | undefined> {
  const token = flags['token-file'] === undefined ? flags.token : (await readFlagFile(flags['token-file'], '--token-file')).trim();
  if (token !== undefined && token.length < 16) throw new NanoPayError('USAGE', `The ${server} token must be at least 16 characters`);
  return token;
}
