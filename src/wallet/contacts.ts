import { join } from 'node:path';
import { NanoPayError } from '../errors.js';
import { readIfExists, writeFileAtomic } from '../fs/secure-fs.js';
import { withAccountLock } from './lock.js';
import { profileKey } from './send-log.js';

/** An address a name stands for (`send @NAME`). */
export interface ContactRecord {
  address: string;
  addedAt: string;
  /** When the address last changed (a confirmed `contacts add` of an existing name). */
  changedAt?: string;
}

interface ContactsFile {
  version: 1;
  contacts: Record<string, ContactRecord>;
}

function parse(path: string, text: string): ContactsFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const file = parsed as ContactsFile | undefined;
  if (file?.version !== 1 || typeof file.contacts !== 'object' || file.contacts === null || Array.isArray(file.contacts)) {
    throw new NanoPayError('STORE_CORRUPT', `${path} is damaged; it was left untouched`);
  }
  return file;
}

/**
 * A profile's contacts, in one private file (0600) replaced atomically. Every
 * change is a read-modify-write under a lock file, so two `contacts add`s never
 * lose each other's names.
 */
export class ContactStore {
  constructor(
    private readonly dir: string,
    private readonly lockDir: string,
    private readonly profile: string,
  ) {}

  // Named by a hash of the profile, made at first use: every command has a contact store, few read it, and hashing
  // loads node:crypto (~7 ms of a command's start-up).
  private get path(): string {
    return join(this.dir, `profile-${profileKey(this.profile)}.json`);
  }

  private get lockName(): string {
    return `contacts-${profileKey(this.profile)}`;
  }

  async all(): Promise<Record<string, ContactRecord>> {
    const text = await readIfExists(this.path);
    return text === undefined ? {} : parse(this.path, text).contacts;
  }

  /** Runs `change` on the current contacts under the lock; what it leaves in the map is written. */
  async update<T>(change: (contacts: Record<string, ContactRecord>) => T): Promise<T> {
    return withAccountLock(this.lockDir, this.lockName, async () => {
      const text = await readIfExists(this.path);
      const file: ContactsFile = text === undefined ? { version: 1, contacts: {} } : parse(this.path, text);
      const result = change(file.contacts);
      await writeFileAtomic(this.path, JSON.stringify(file, null, 2));
      return result;
    });
  }
}
