import { rename } from 'node:fs/promises';
import { NanoPayError } from '../errors.js';
import { readIfExists } from '../fs/secure-fs.js';
import { withAccountLock } from '../wallet/lock.js';
import type { RequestRecord } from '../wallet/requests.js';
import type { Store } from './store.js';

/** The file earlier versions kept a profile's requests in, rewritten whole on every change. */
interface RequestsFile {
  version: 1;
  requests: Record<string, RequestRecord>;
}

function parse(path: string, text: string): RequestsFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const file = parsed as RequestsFile | undefined;
  if (file?.version !== 1 || typeof file.requests !== 'object' || file.requests === null) {
    throw new NanoPayError('STORE_CORRUPT', `${path} is damaged, so its requests were not moved to the store; it was left untouched`, {
      hint: 'Fix it (it is JSON: {"version":1,"requests":{...}}) or move it away.',
    });
  }
  return file;
}

/**
 * Moves the requests of the old JSON file (`path`) into the store, once: all of
 * them in one transaction, then the file is renamed to `<path>.migrated` (kept,
 * never read again). Under the lock the old file's writers took, so no change
 * of an older nanopay running meanwhile is lost. A crash between the two steps
 * only repeats the import, which skips the ids already there.
 */
export async function migrateJsonRequests(store: Store, path: string, lockDir: string, lockName: string): Promise<void> {
  if ((await readIfExists(path)) === undefined) return;
  await withAccountLock(lockDir, lockName, async () => {
    const text = await readIfExists(path);
    if (text === undefined) return;
    await store.requests.importAll(Object.values(parse(path, text).requests));
    await rename(path, `${path}.migrated`);
  });
}
