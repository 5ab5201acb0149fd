import { readFile } from 'node:fs/promises';
import { NanoPayError } from '../errors.js';

/** The text of a file named by a flag (--token-file, --passphrase-file): a file that cannot be read is a usage error naming the flag. */
export async function readFlagFile(path: string, flag: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new NanoPayError('USAGE', `Cannot read the file given to ${flag} (${path}): ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

/** The bearer token a server requires: --token-file, else --token (or its variable); short tokens are refused. */
export async function bearerToken(flags: { token?: string; 'token-file'?: string }, server: string): Promise<string | undefined> {
  const token = flags['token-file'] === undefined ? flags.token : (await readFlagFile(flags['token-file'], '--token-file')).trim();
  if (token !== undefined && token.length < 16) throw new NanoPayError('USAGE', `The ${server} token must be at least 16 characters`);
  return token;
}
