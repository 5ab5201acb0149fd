import { closeSync, openSync } from 'node:fs';
import { fsyncFd } from '../fs/secure-fs.js';

/**
 * Makes a SQLite database's commits durable with fsyncs of its write-ahead log
 * made on libuv's threads, not on the event loop: the connection runs with
 * synchronous = NORMAL (a commit writes the log and returns), and a write is
 * answered only once `durable()` resolved, which is an fsync of the log begun
 * after it (fsync flushes the file's writes, whatever descriptor made them),
 * what synchronous = FULL does inside the commit, holding the event loop for
 * the disk. Commits made while an fsync runs share the next one.
 */
export class WalSync {
  private fd: number | undefined;
  /** The fsync running, if one is. */
  private running: Promise<void> | undefined;
  /** The fsync that starts once the running one ends: it covers every commit made meanwhile. */
  private next: Promise<void> | undefined;

  constructor(
    private readonly walPath: string,
    private readonly fsync: (fd: number) => Promise<void> = fsyncFd,
  ) {}

  /** Resolves once every commit made before the call is on disk. */
  durable(): Promise<void> {
    if (this.running === undefined) return this.start();
    this.next ??= this.running.then(
      () => this.start(),
      () => this.start(),
    );
    return this.next;
  }

  private start(): Promise<void> {
    this.next = undefined;
    const run = (async () => {
      // Opened on the first commit: the log exists from then on, for as long as the connection is open.
      this.fd ??= openSync(this.walPath, 'r');
      await this.fsync(this.fd);
    })();
    this.running = run;
    void run.then(
      () => this.settled(run),
      () => this.settled(run),
    );
    return run;
  }

  private settled(run: Promise<void>): void {
    if (this.running === run) this.running = undefined;
  }

  /** Closes the log's descriptor once the fsyncs asked for are done. */
  async close(): Promise<void> {
    await (this.next ?? this.running)?.catch(() => undefined);
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}
