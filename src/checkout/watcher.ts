import { NanoPayError } from '../errors.js';
import { PacedTask } from '../timing/wakeups.js';
import type { CheckoutObservation, CheckoutReader, CheckoutRequest } from '../ops/requests/checkout.js';
import { isFinal, sameView, troubleOf, viewOf, type CheckoutView } from './view.js';

export interface WatcherOptions {
  read: CheckoutReader;
  /** One status read per watched request per interval, however many pages show it. */
  intervalMs: number;
  /** A page view keeps its request watched this long (pages without JavaScript reload within it). */
  viewGraceMs: number;
  /** After this long without anyone looking (a page opened, or its live updates), reads slow down. Default 2 minutes. */
  activeMs?: number;
  /** The longest time between reads of a watched request, however idle or failing. Default 60 s. */
  slowestMs?: number;
  log?: (line: string) => void;
  now?: () => number;
}

type Listener = (view: CheckoutView) => void;

interface Entry {
  request: CheckoutRequest;
  observation: CheckoutObservation;
  view: CheckoutView;
  lastViewed: number;
  listeners: Set<Listener>;
  /** The request's reads: one at a time, and those wake-ups cause spaced (a wake during a read, which may predate the payment, reads once more after it). */
  reads: PacedTask;
  /** When someone last looked: a page opened by a person (not an automatic reload), or its live updates. */
  lastLooked: number;
  /** Rounds since the last read, for reads that have slowed down. */
  roundsSinceRead: number;
  failuresInARow: number;
  lastFailure?: string;
  /** What the page says while the status cannot be read. */
  trouble?: string;
}

/**
 * The shared poller: knows the requests it was given (and no others, so a
 * viewer cannot make it read, and spend credits on, anything else), reads the
 * status of those someone watches at one interval, and tells the watchers of
 * each change. Paid (or paid late) is final: it is not read again; an expired,
 * under- or overpaid request is, while watched (a late payment, the rest). A wake
 * (a payment to an address confirmed, from the node's WebSocket) reads at once
 * instead of at the next interval, but only as a reason to look: a flood of
 * wakes costs at most one read per MIN_WAKE_GAP_MS; the interval goes on behind it.
 *
 * Reads cost the shop (a credit each on the service), so a page nobody looks
 * at does not drain them: after `activeMs` without a look, a request is read
 * every 2, 4, 8… rounds (each minute doubles it) up to `slowestMs`; failures in
 * a row slow reads the same way. A look (a page opened, live updates
 * connected) brings it back to every round, with a read at once when the last
 * is a round old. A status that cannot be read is shown on the page, and why.
 */
export class CheckoutWatcher {
  private readonly entries = new Map<string, Entry>();
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly options: WatcherOptions) {
    this.now = options.now ?? Date.now;
  }

  add(request: CheckoutRequest, observation: CheckoutObservation): void {
    const id = request.transaction_id.toLowerCase();
    const view = viewOf(observation, this.now());
    const entry: Entry = {
      request,
      observation,
      view,
      lastViewed: -Infinity,
      lastLooked: this.now(),
      roundsSinceRead: 0,
      failuresInARow: 0,
      listeners: new Set(),
      reads: new PacedTask(() => this.read(entry), undefined, this.now),
    };
    this.entries.set(id, entry);
  }

  /** What was learnt of a request elsewhere (the shop's monitor recorded a change): its pages show it now. */
  observe(id: string, observation: CheckoutObservation): void {
    const entry = this.entries.get(id.toLowerCase());
    if (entry === undefined) return;
    entry.observation = observation;
    this.refresh(entry);
  }

  request(id: string): CheckoutRequest | undefined {
    return this.entries.get(id.toLowerCase())?.request;
  }

  /**
   * The current view of a request, for a page being shown: it counts as
   * watching for a while, and (unless an automatic reload) as someone looking.
   */
  view(id: string, options: { looked?: boolean } = {}): CheckoutView | undefined {
    const entry = this.entries.get(id.toLowerCase());
    if (entry === undefined) return undefined;
    entry.lastViewed = this.now();
    if (options.looked !== false) this.looked(entry);
    this.refresh(entry);
    return entry.view;
  }

  /** Follows a request's changes until the returned function is called; someone is looking. */
  subscribe(id: string, listener: Listener): () => void {
    const entry = this.entries.get(id.toLowerCase());
    if (entry === undefined) throw new NanoPayError('NOT_FOUND', 'Unknown checkout');
    entry.listeners.add(listener);
    this.looked(entry);
    return () => {
      entry.listeners.delete(listener);
      entry.lastViewed = this.now();
    };
  }

  start(): void {
    this.stopped = false;
    this.timer ??= setInterval(() => void this.tick(), this.options.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * A payment to `address` may just have landed (any address when undefined:
   * a connection to the node came or went, so something may have been missed):
   * reads its watched, open requests soon (paced), or once more after a read under way.
   */
  wake(address?: string): void {
    if (this.stopped) return;
    for (const entry of this.entries.values()) {
      if (address !== undefined && entry.request.receive_address !== address) continue;
      if (this.isOpen(entry) && this.isWatched(entry)) entry.reads.wake();
    }
  }

  /**
   * Forgets the requests nobody has looked at or followed for `idleMs` (the shop server, which
   * serves every request of its store, would otherwise keep each one for its lifetime). A page
   * opened later adds it again.
   */
  prune(idleMs: number): number {
    const now = this.now();
    let forgotten = 0;
    for (const [id, entry] of this.entries) {
      if (entry.listeners.size > 0 || entry.reads.busy || now - Math.max(entry.lastViewed, entry.lastLooked) <= idleMs) continue;
      this.entries.delete(id);
      forgotten++;
    }
    return forgotten;
  }

  /** One round: reads every watched, open request that is due (a read still under way is not doubled). */
  async tick(): Promise<void> {
    const due = [...this.entries.values()].filter((e) => {
      if (e.reads.busy || !this.isOpen(e)) return false;
      // Counted while nobody watches too, so a page opened later reads a stale status at once.
      e.roundsSinceRead += 1;
      return this.isWatched(e) && e.roundsSinceRead >= this.roundsBetweenReads(e);
    });
    await Promise.all(due.map((entry) => entry.reads.run()));
  }

  /** 1 while someone looks and reads succeed; doubling with each idle minute and each failure in a row, up to `slowestMs`. */
  private roundsBetweenReads(entry: Entry): number {
    const activeMs = this.options.activeMs ?? 120_000;
    const idle = this.now() - entry.lastLooked;
    const idleSteps = idle <= activeMs ? 0 : Math.ceil((idle - activeMs) / 60_000);
    const slowest = Math.max(1, Math.floor((this.options.slowestMs ?? 60_000) / this.options.intervalMs));
    return Math.min(slowest, 2 ** Math.min(Math.max(idleSteps, entry.failuresInARow), 20));
  }

  /** Someone opened the page or its live updates: reads go back to every round, and a stale status is read now. */
  private looked(entry: Entry): void {
    entry.lastLooked = this.now();
    if (!this.stopped && entry.roundsSinceRead >= 1 && this.isOpen(entry)) entry.reads.wake();
  }

  private isOpen(entry: Entry): boolean {
    this.refresh(entry);
    return !isFinal(entry.view.state);
  }

  private isWatched(entry: Entry): boolean {
    return entry.listeners.size > 0 || this.now() - entry.lastViewed <= this.options.viewGraceMs;
  }

  private async read(entry: Entry): Promise<void> {
    // A paced read may come due after a stop, or once the request is final.
    if (this.stopped || !this.isOpen(entry)) return;
    entry.roundsSinceRead = 0;
    try {
      entry.observation = await this.options.read(entry.request.transaction_id);
      delete entry.lastFailure;
      delete entry.trouble;
      entry.failuresInARow = 0;
    } catch (error) {
      const code = error instanceof NanoPayError ? error.code : 'INTERNAL_ERROR';
      const failure = error instanceof NanoPayError ? `${error.code}: ${error.message}` : 'unexpected error';
      // A lasting failure (no credits, a key revoked) is logged once, not every round.
      if (failure !== entry.lastFailure) this.options.log?.(`status of ${entry.request.transaction_id} failed (${failure}); retrying`);
      entry.lastFailure = failure;
      entry.failuresInARow += 1;
      const trouble = troubleOf(code, entry.failuresInARow);
      if (trouble !== undefined) entry.trouble = trouble;
    }
    this.refresh(entry);
  }

  /** Recomputes the view (an expiry can pass between reads) and tells the watchers when it changed. */
  private refresh(entry: Entry): void {
    const seen = viewOf(entry.observation, this.now());
    const view = !isFinal(seen.state) && entry.trouble !== undefined ? { ...seen, trouble: entry.trouble } : seen;
    if (sameView(view, entry.view)) return;
    entry.view = view;
    for (const listener of entry.listeners) listener(view);
  }
}
