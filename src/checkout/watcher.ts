import { NanoPayError } from '../errors.js';
import { PacedTask } from '../timing/wakeups.js';
import type { CheckoutObservation, CheckoutReader, CheckoutRequest } from '../ops/checkout.js';
import { sameView, viewOf, type CheckoutView } from './view.js';

export interface WatcherOptions {
  read: CheckoutReader;
  /** One status read per watched request per interval, however many pages show it. */
  intervalMs: number;
  /** A page view keeps its request watched this long (pages without JavaScript reload within it). */
  viewGraceMs: number;
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
  lastFailure?: string;
}

/**
 * The shared poller: knows the requests it was given (and no others, so a
 * viewer cannot make it read, and spend credits on, anything else), reads the
 * status of those someone watches at one interval, and tells the watchers of
 * each change. Paid and expired are final: they are not read again. A wake
 * (a payment to an address confirmed, from the node's WebSocket) reads at once
 * instead of at the next interval, but only as a reason to look: a flood of
 * wakes costs at most one read per MIN_WAKE_GAP_MS; the interval goes on behind it.
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
    const entry: Entry = { request, observation, view, lastViewed: -Infinity, listeners: new Set(), reads: new PacedTask(() => this.read(entry), undefined, this.now) };
    this.entries.set(id, entry);
  }

  request(id: string): CheckoutRequest | undefined {
    return this.entries.get(id.toLowerCase())?.request;
  }

  /** The current view of a request, for a page being shown: it counts as watching for a while. */
  view(id: string): CheckoutView | undefined {
    const entry = this.entries.get(id.toLowerCase());
    if (entry === undefined) return undefined;
    entry.lastViewed = this.now();
    this.refresh(entry);
    return entry.view;
  }

  /** Follows a request's changes until the returned function is called. */
  subscribe(id: string, listener: Listener): () => void {
    const entry = this.entries.get(id.toLowerCase());
    if (entry === undefined) throw new NanoPayError('NOT_FOUND', 'Unknown checkout');
    entry.listeners.add(listener);
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

  /** The addresses of the requests it knows. */
  addresses(): string[] {
    return [...new Set([...this.entries.values()].map((e) => e.request.receive_address))];
  }

  /** One round: reads every watched, open request once (a read still under way is not doubled). */
  async tick(): Promise<void> {
    const due = [...this.entries.values()].filter((e) => !e.reads.busy && this.isOpen(e) && this.isWatched(e));
    await Promise.all(due.map((entry) => entry.reads.run()));
  }

  private isOpen(entry: Entry): boolean {
    this.refresh(entry);
    return entry.view.state === 'waiting';
  }

  private isWatched(entry: Entry): boolean {
    return entry.listeners.size > 0 || this.now() - entry.lastViewed <= this.options.viewGraceMs;
  }

  private async read(entry: Entry): Promise<void> {
    // A paced read may come due after a stop, or once the request is final.
    if (this.stopped || !this.isOpen(entry)) return;
    try {
      entry.observation = await this.options.read(entry.request.transaction_id);
      delete entry.lastFailure;
      this.refresh(entry);
    } catch (error) {
      const failure = error instanceof NanoPayError ? `${error.code}: ${error.message}` : 'unexpected error';
      // A lasting failure (no credits, a key revoked) is logged once, not every round.
      if (failure !== entry.lastFailure) this.options.log?.(`status of ${entry.request.transaction_id} failed (${failure}); retrying`);
      entry.lastFailure = failure;
    }
  }

  /** Recomputes the view (an expiry can pass between reads) and tells the watchers when it changed. */
  private refresh(entry: Entry): void {
    const view = viewOf(entry.observation, this.now());
    if (sameView(view, entry.view)) return;
    entry.view = view;
    for (const listener of entry.listeners) listener(view);
  }
}
