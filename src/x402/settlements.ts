import { randomBytes } from 'node:crypto';
import { open, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ensurePrivateDir, readIfExists } from '../fs/secure-fs.js';

/** Where one payer's `previous` stands: a settlement under way (or cut short), or done. */
export interface SettlementEntry {
  hash: string;
  state: 'pending' | 'settled';
  /** ISO time of the claim (pending) or of the confirmation (settled). */
  at: string;
}

/**
 * The persistent record of settlements, by the `previous` each block builds
 * on: only one block can ever follow a previous, so one claim per previous
 * settles a block (and any rival block on the same previous) at most once,
 * across restarts and processes. Kept behind this interface so it can move to
 * another store.
 */
export interface SettlementRecord {
  /** Claims `previous` for `hash`: true when this call got it, else the entry already there. */
  claim(previous: string, hash: string, now: Date): Promise<true | SettlementEntry>;
  read(previous: string): Promise<SettlementEntry | undefined>;
  /** Marks the claim settled (or takes over a stale pending one). */
  write(previous: string, entry: SettlementEntry): Promise<void>;
  /** Drops a claim whose block the ledger refused for good: it can never land. */
  release(previous: string): Promise<void>;
}

const HASH = /^[0-9A-F]{64}$/;

/**
 * One small file per claimed previous; the claim is an O_EXCL create, so two
 * processes cannot both get it. Not fsynced: once a block is published the
 * ledger itself refuses it again (its previous is no longer the frontier), so
 * these files guard what the ledger cannot see (settlements in flight, across
 * processes), and a power cut that loses one loses nothing the ledger does not
 * hold. (Four fsyncs per payment cost ~35 ms on this machine.)
 */
export class FileSettlementRecord implements SettlementRecord {
  constructor(private readonly dir: string) {}

  private path(previous: string): string {
    if (!HASH.test(previous)) throw new Error(`not a block hash: ${previous}`);
    return join(this.dir, `${previous}.json`);
  }

  async claim(previous: string, hash: string, now: Date): Promise<true | SettlementEntry> {
    await ensurePrivateDir(this.dir);
    const entry: SettlementEntry = { hash, state: 'pending', at: now.toISOString() };
    let handle;
    try {
      handle = await open(this.path(previous), 'wx', 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      // A claim being written this instant reads as empty: pending, by someone else.
      return (await this.read(previous)) ?? { hash: '', state: 'pending', at: now.toISOString() };
    }
    try {
      await handle.writeFile(JSON.stringify(entry));
    } finally {
      await handle.close();
    }
    return true;
  }

  async read(previous: string): Promise<SettlementEntry | undefined> {
    const text = await readIfExists(this.path(previous));
    if (text === undefined || text.trim() === '') return undefined;
    return JSON.parse(text) as SettlementEntry;
  }

  /** Replaced whole (a rename), so a reader sees the old entry or the new one. */
  async write(previous: string, entry: SettlementEntry): Promise<void> {
    const temp = join(this.dir, `.${randomBytes(6).toString('hex')}.tmp`);
    await writeFile(temp, JSON.stringify(entry), { mode: 0o600, flag: 'wx' });
    await rename(temp, this.path(previous));
  }

  async release(previous: string): Promise<void> {
    await rm(this.path(previous), { force: true });
  }
}
