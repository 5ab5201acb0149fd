import { once } from 'node:events';

/**
 * Writes to stdout, waiting while its buffer is full: a stream of records
 * (audit --json, --csv) then holds one at a time, however slow the reader and
 * however long the stream.
 */
export async function writeOut(text: string): Promise<void> {
  if (!process.stdout.write(text)) await once(process.stdout, 'drain');
}
