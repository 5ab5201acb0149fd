import { writeFile as writeFileThen } from 'node:fs';
import { link, rm, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { ensurePrivateDir, linkUnsupported, readIfExistsSync } from '../fs/secure-fs.js';
import { alive } from '../wallet/lock.js';

/** Where one payer's `previous` stands: a settlement under way (or cut short), or done. */
export interface SettlementEntry {
  hash: string;
  state: 'pending' | 'settled';
  /** ISO time the block was claimed for settlement (a settled entry is its claim, settled). */
  at: string;
  /** A pending claim whose settling process is known to be gone (it died on this host): the same block may be settled again. */
  abandoned?: boolean;
}

/** Who holds a pending claim, to tell one cut short by a crash from one under way; and the previous it is under, for lookup. */
interface ClaimFile extends SettlementEntry {
  previous?: string;
  pid?: number;
  host?: string;
}

/**
 * The persistent record of settlements, by the `previous` each block builds
 * on: only one block can ever follow a previous, so one claim per previous
 * settles a block (and any rival block on the same previous) at most once,
 * across restarts and processes. Kept behind this interface so it can move to
 * another store.
 */
export interface SettlementRecord {
  /**
   * Claims `previous` for `hash`: true when this call got it (or took over an
   * abandoned claim of the same hash), else the entry already there.
   */
  claim(previous: string, hash: string, now: Date): Promise<true | SettlementEntry>;
  read(previous: string): Promise<SettlementEntry | undefined>;
  /** Marks `previous` settled by `hash`, once: true for the one call that did, false when it already was. */
  settle(previous: string, hash: string, now: Date): Promise<boolean>;
  /** Drops a claim whose block the ledger refused for good (it can never land), remembering why for lookup. */
  refuse(previous: string, hash: string, reason: string): Promise<void>;
  /** The previous a block this record claimed builds on, and why it was refused if it was; undefined for a block never claimed here. */
  lookup(hash: string): Promise<ClaimedBlock | undefined>;
}

/** A block a settlement record claimed: the previous its claim is under, and the refusal that dropped it. */
export interface ClaimedBlock {
  previous: string;
  refused?: string;
}

const HASH = /^[0-9A-F]{64}$/;

/**
 * One small file per claimed previous; the claim is an O_EXCL create, so two
 * processes cannot both get it. Not fsynced: once a block is published the
 * ledger itself refuses it again (its previous is no longer the frontier), so
 * these files guard what the ledger cannot see (settlements in flight, across
 * processes), and a power cut that loses one loses nothing the ledger does not
 * hold. (Four fsyncs per payment cost ~35 ms on this machine.) A claimed
 * block's file (`HASH.block`, for lookup) and a settled previous's mark
 * (`PREVIOUS.settled`) are second names of its claim: one file per payment,
 * as a new file costs an inode (hundreds of microseconds of kernel time on a busy ext4) and a link does not.
 */
export class FileSettlementRecord implements SettlementRecord {
  /** Made (and checked private) once, not on every claim. */
  private ready: Promise<void> | undefined;

  constructor(private readonly dir: string) {}

  private path(previous: string, kind: 'claim' | 'settled' | 'block' = 'claim'): string {
    if (!HASH.test(previous)) throw new Error(`not a block hash: ${previous}`);
    return join(this.dir, `${previous}.${kind === 'claim' ? 'json' : kind}`);
  }

  /**
   * Creates `path` only if it does not exist (O_EXCL): false when it did. One
   * call of fs.writeFile (open, write, close on libuv's threads): half the main
   * thread's time of a FileHandle's three promises, on every paid request.
   */
  private async create(path: string, entry: SettlementEntry): Promise<boolean> {
    this.ready ??= ensurePrivateDir(this.dir);
    await this.ready.catch((error: unknown) => {
      this.ready = undefined;
      throw error;
    });
    try {
      await writeExclusive(path, JSON.stringify(entry));
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw error;
    }
  }

  async claim(previous: string, hash: string, now: Date): Promise<true | SettlementEntry> {
    const claim: ClaimFile = { hash, previous, state: 'pending', at: now.toISOString(), pid: process.pid, host: hostname() };
    if (!(await this.create(this.path(previous), claim))) {
      // A claim being written this instant reads as empty: pending, by someone else.
      const found = (await this.read(previous)) ?? { hash: '', state: 'pending', at: now.toISOString() };
      if (found.state !== 'pending' || found.abandoned !== true || found.hash !== hash) return found;
      // Cut short by a crash: taken over. Two takers at once both settle the same block; the settled mark lets one answer success.
      await writeFile(this.path(previous), JSON.stringify(claim), { mode: 0o600 });
    }
    // Made before anything is published: a block the record answers for by its hash (lookup). A second name of the
    // claim (which holds the previous), not a file of its own: a new file costs an inode, a link does not.
    await nameAgain(this.path(previous), this.path(hash, 'block'), JSON.stringify({ previous } satisfies ClaimedBlock));
    return true;
  }

  async read(previous: string): Promise<SettlementEntry | undefined> {
    for (const kind of ['settled', 'claim'] as const) {
      const text = readIfExistsSync(this.path(previous, kind));
      if (text === undefined || text.trim() === '') continue;
      const { pid, host, previous: _previous, ...entry } = JSON.parse(text) as ClaimFile;
      // The settled mark is the claim under a second name: its name, not its text, says settled.
      if (kind === 'settled') return { ...entry, state: 'settled' };
      const gone = entry.state === 'pending' && typeof pid === 'number' && host === hostname() && !alive(pid);
      return gone ? { ...entry, abandoned: true } : entry;
    }
    return undefined;
  }

  /**
   * The settled mark: a second name of the claim, made only where there is
   * none (link fails on an existing name as O_EXCL does, and allocates no
   * inode), so exactly one settlement of a previous ever answers success.
   */
  async settle(previous: string, hash: string, now: Date): Promise<boolean> {
    const mark = JSON.stringify({ hash, state: 'settled', at: now.toISOString() } satisfies SettlementEntry);
    try {
      return await nameAgain(this.path(previous), this.path(previous, 'settled'), mark);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    // No claim file under it (a record an earlier version left): a mark of its own.
    return this.create(this.path(previous, 'settled'), { hash, state: 'settled', at: now.toISOString() });
  }

  async refuse(previous: string, hash: string, reason: string): Promise<void> {
    // The claim's name goes first: the block's name (the same file) is then rewritten alone.
    await rm(this.path(previous), { force: true });
    await writeFile(this.path(hash, 'block'), JSON.stringify({ previous, refused: reason } satisfies ClaimedBlock), { mode: 0o600 });
  }

  async lookup(hash: string): Promise<ClaimedBlock | undefined> {
    const text = readIfExistsSync(this.path(hash, 'block'));
    if (text === undefined || text.trim() === '') return undefined;
    const { previous, refused } = JSON.parse(text) as ClaimedBlock;
    return { previous, ...(refused === undefined ? {} : { refused }) };
  }
}

/**
 * Gives the file `from` the second name `to` unless `to` exists: false then
 * (a claim taken over keeps its block's name; a previous is settled once).
 * Where the file system has no hard links, `to` is a new file holding `text`.
 */
async function nameAgain(from: string, to: string, text: string): Promise<boolean> {
  try {
    await link(from, to);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    if (!linkUnsupported(error)) throw error;
  }
  return writeExclusive(to, text).then(
    () => true,
    (error: NodeJS.ErrnoException) => {
      if (error.code === 'EEXIST') return false;
      throw error;
    },
  );
}

/** A new file (0600) with `text`; EEXIST when there is one. */
function writeExclusive(path: string, text: string): Promise<void> {
  return new Promise((resolve, reject) => writeFileThen(path, text, { flag: 'wx', mode: 0o600 }, (error) => (error === null ? resolve() : reject(error))));
}
