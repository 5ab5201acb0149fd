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
