import { join } from 'node:path';
import { NanoPayError } from '../errors.js';
import { withAccountLock } from './lock.js';
import { readIfExists, writeFileAtomic } from '../fs/secure-fs.js';

/** A payment request nanopay keeps itself (node backend): amounts raw, as decimal strings. */
export interface RequestRecord {
  id: string;
  address: string;
  baseRaw: string;
  /** What the payer must send: the base plus this request's offset (the base itself on a fresh address). */
  amountRaw: string;
  createdAt: string;
  expiresAt?: string;
  redirectUrl?: string;
  /** The wallet account derived for this request alone (request --fresh-address). */
  fresh?: { wallet: string; index: number };
  /** The blocks that paid it; set once, never undone. */
  paidBy?: string[];
  /** Those blocks came after expiresAt: reported as a late payment, not counted as paid. */
  paidLate?: boolean;
}

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
    throw new NanoPayError('STORE_CORRUPT', `${path} is damaged; it was left untouched`);
  }
  return file;
}

/**
 * The profile's payment requests, in one file written atomically. Every change
 * is a read-modify-write under a lock file, so concurrent `request`s (processes
 * or calls) never pick the same amount or lose each other's records.
 */
export class RequestStore {
  private readonly path: string;

  constructor(
    dir: string,
    private readonly lockDir: string,
    private readonly profile: string,
  ) {
    this.path = join(dir, `${profile}.json`);
  }

  async all(): Promise<RequestRecord[]> {
    const text = await readIfExists(this.path);
    return text === undefined ? [] : Object.values(parse(this.path, text).requests);
  }

  async get(id: string): Promise<RequestRecord | undefined> {
    return (await this.all()).find((r) => r.id === id);
  }

  /** Runs `change` on the current records under the lock; what it leaves in the map is written. */
  async update<T>(change: (requests: Record<string, RequestRecord>) => T | Promise<T>): Promise<T> {
    return withAccountLock(this.lockDir, `requests-${this.profile}`, async () => {
      const text = await readIfExists(this.path);
      const file: RequestsFile = text === undefined ? { version: 1, requests: {} } : parse(this.path, text);
      const result = await change(file.requests);
      await writeFileAtomic(this.path, JSON.stringify(file, null, 2));
      return result;
    });
  }
}
