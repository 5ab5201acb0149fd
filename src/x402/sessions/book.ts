import { open, rename, rm, writeFile, type FileHandle } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { NanoPayError } from '../../errors.js';
import { alive } from '../../wallet/lock.js';
import { ensurePrivateDir, readIfExists } from '../../fs/secure-fs.js';
import type { Voucher } from './wire.js';

/** A session as its seller keeps it. Amounts are raw decimal strings (the book is JSON lines). */
export interface SellerSession {
  id: string;
  network: string;
  payer: string;
  payTo: string;
  sessionKey: string;
  /** The payer's signature of the opening (openMessage), kept for the receipt. */
  openSignature: string;
  /** Deposit blocks settled into the session, the opening one first. */
  deposits: { hash: string; raw: string }[];
  /** Deposits being settled: marked before, so one the ledger took while the seller died counts when presented again. */
  pending?: { hash: string; raw: string }[];
  /** What the seller charged so far: never above the highest voucher's `spent`, nor the deposits. */
  charged: string;
  /** The last counter taken (a call served or not): a voucher at or below it is never taken again. */
  counter: number;
  /** The voucher of the last call charged, as the buyer signed it: the proof of `charged`. */
  voucher?: Voucher;
  openedAt: string;
  lastUsedAt: string;
  expiresAt: string;
  idleSeconds: number;
  state: 'opening' | 'open' | 'closing' | 'closed';
  /** Why it closed: the buyer asked, it sat idle, it expired, the seller closed it. */
  reason?: string;
  refund?: { hash: string | null; raw: string };
  closedAt?: string;
}

/** Lines the log may hold (besides four a session) before it is compacted. */
const COMPACT_AT = 100_000;

/** One line of the book: a session's whole state after a change (the last line of an id wins). */
interface Line {
  s: SellerSession;
}

/**
 * The seller's sessions: in memory for the microseconds a call may take,
 * and a log of JSON lines on disk written before anything is answered.
 * Appends are committed in groups: every line of one turn of the event loop
 * goes out in one write and one fdatasync, and each waiter is answered after
 * it, so a voucher a buyer was served on survives a kill or a power cut, and
 * many calls at once share the cost. On start the log is read back and
 * written again compact (one line per session).
 */
export class SessionBook {
  private readonly sessions = new Map<string, SellerSession>();
  private handle: FileHandle | undefined;
  private queued: { line: string; done: () => void; failed: (error: unknown) => void }[] = [];
  private flushing = false;
  /** Lines in the log: past a few per session it is written again compact (between two batches). */
  private lines = 0;

  private constructor(
    private readonly path: string,
    private readonly compactAt: number,
  ) {}

  /** The sessions as the log holds them, read only (a paywall may be writing it). */
  static async read(dir: string): Promise<Map<string, SellerSession>> {
    const sessions = new Map<string, SellerSession>();
    const text = (await readIfExists(join(dir, 'sessions.log'))) ?? '';
    for (const row of text.split('\n')) {
      if (row.trim() === '') continue;
      try {
        const { s } = JSON.parse(row) as Line;
        sessions.set(s.id, s);
      } catch {
        // A line cut short by a crash mid-write was never committed: nobody was answered on it.
      }
    }
    return sessions;
  }

  static async open(dir: string, compactAt = COMPACT_AT): Promise<SessionBook> {
    await ensurePrivateDir(dir);
    await holdBook(join(dir, 'sessions.lock'));
    const book = new SessionBook(join(dir, 'sessions.log'), compactAt);
    for (const [id, s] of await SessionBook.read(dir)) book.sessions.set(id, s);
    await book.compact();
    return book;
  }

  get(id: string): SellerSession | undefined {
    return this.sessions.get(id);
  }

  all(): SellerSession[] {
    return [...this.sessions.values()];
  }

  /** Sets the session's state in memory at once, and resolves once it is on disk. */
  put(session: SellerSession): Promise<void> {
    this.sessions.set(session.id, session);
    return new Promise((done, failed) => {
      this.queued.push({ line: `${JSON.stringify({ s: session } satisfies Line)}\n`, done, failed });
      if (!this.flushing) setImmediate(() => void this.flush());
      this.flushing = true;
    });
  }

  /** The log written again with one line per session (its last state), in place of the old one at once (a rename). */
  private async compact(): Promise<void> {
    const fresh = `${this.path}.new`;
    const handle = await open(fresh, 'w', 0o600);
    await handle.writeFile([...this.sessions.values()].map((s) => `${JSON.stringify({ s } satisfies Line)}\n`).join(''));
    await handle.datasync();
    await handle.close();
    await rename(fresh, this.path);
    await this.handle?.close();
    this.handle = await open(this.path, 'a', 0o600);
    this.lines = this.sessions.size;
  }

  private async flush(): Promise<void> {
    const batch = this.queued;
    this.queued = [];
    try {
      const handle = this.handle;
      if (handle === undefined) throw new Error('The session book is closed');
      await handle.write(batch.map((q) => q.line).join(''));
      await handle.datasync();
      this.lines += batch.length;
      for (const q of batch) q.done();
    } catch (error) {
      for (const q of batch) q.failed(error);
    }
    // Every state is on disk twice over (the old lines and the compact ones) until the rename: a crash keeps one.
    if (this.lines > Math.max(this.compactAt, 4 * this.sessions.size)) await this.compact().catch(() => undefined);
    if (this.queued.length > 0) return this.flush();
    this.flushing = false;
  }

  async close(): Promise<void> {
    while (this.flushing) await new Promise((resolve) => setImmediate(resolve));
    await this.handle?.close();
    this.handle = undefined;
    await rm(join(dirname(this.path), 'sessions.lock'), { force: true });
  }
}

/**
 * One seller process keeps the book: a second paywall with sessions of the
 * same profile would know only its own sessions and write over the other's
 * lines. Held by a file naming the process; one left by a process that died
 * on this host is taken over.
 */
async function holdBook(lock: string): Promise<void> {
  const mine = JSON.stringify({ pid: process.pid, host: hostname() });
  for (;;) {
    try {
      await writeFile(lock, mine, { flag: 'wx', mode: 0o600 });
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const held = JSON.parse((await readIfExists(lock)) || '{}') as { pid?: number; host?: string };
    if (typeof held.pid === 'number' && (held.host !== hostname() || alive(held.pid))) {
      throw new NanoPayError('CONFLICT', `Another paywall with sessions of this profile runs (process ${held.pid}${held.host === hostname() ? '' : ` on ${held.host}`}); one process keeps a seller's sessions`, {
        hint: 'Stop it first, or sell sessions from one paywall (it can front several routes).',
      });
    }
    await rm(lock, { force: true });
  }
}
