import { NanoPayError } from '../errors.js';

/**
 * The least time between two reads that wake-ups (a confirmation, a reconnect)
 * cause. A confirmation is only a reason to look, and anyone who can reach the
 * WebSocket (or the node itself) can send a flood of them: each costs at most
 * one read in this time, however many arrive.
 */
const MIN_WAKE_GAP_MS = 250;

/**
 * How many reads wake-ups may cause at once before MIN_WAKE_GAP_MS paces them:
 * the look a watch takes when its WebSocket connects and the confirmation that
 * follows (a payment made as the watch begins), or two payments a moment apart,
 * are not held a gap apart. A flood still costs one read per MIN_WAKE_GAP_MS.
 */
const WAKE_BURST = 2;

/**
 * A wait that ends early when woken (a confirmation, a reconnect), at most
 * WAKE_BURST times at once and then once per MIN_WAKE_GAP_MS, and fails with
 * CANCELLED on the signal. Wakes during a check count once.
 */
export class Wakeup {
  private pending = false;
  private resolve: (() => void) | undefined;
  /** The reads wakes caused are paced up to here: each one moves it MIN_WAKE_GAP_MS on from now or from where it was. */
  private paced = -Infinity;

  wake(): void {
    this.pending = true;
    this.resolve?.();
  }

  async wait(ms: number, signal?: AbortSignal): Promise<void> {
    const deadline = Date.now() + ms;
    for (;;) {
      if (signal?.aborted) throw new NanoPayError('CANCELLED', 'Stopped watching');
      const now = Date.now();
      const earliest = this.paced - (WAKE_BURST - 1) * MIN_WAKE_GAP_MS;
      if (now >= deadline || (this.pending && now >= earliest)) break;
      await this.sleep((this.pending ? Math.min(deadline, earliest) : deadline) - now, signal);
    }
    if (this.pending) this.paced = Math.max(this.paced, Date.now()) + MIN_WAKE_GAP_MS;
    this.pending = false;
  }

  /** Sleeps `ms`, or until woken or aborted. */
  private async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    await new Promise<void>((resolve) => {
      this.resolve = resolve;
      timer = setTimeout(resolve, ms);
      onAbort = resolve;
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    clearTimeout(timer);
    if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort);
    this.resolve = undefined;
  }
}

/**
 * A task run on wake-ups: never two runs at once, and runs start at least
 * `minGapMs` apart; wakes during a run make one more run after it. `run` starts
 * it now unless it is running (for a periodic poll, which must not double a read).
 */
export class PacedTask {
  private running = false;
  private again = false;
  private started = -Infinity;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly task: () => Promise<void>,
    private readonly minGapMs = MIN_WAKE_GAP_MS,
    private readonly now: () => number = Date.now,
  ) {}

  get busy(): boolean {
    return this.running;
  }

  wake(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer !== undefined) return;
    const wait = this.started + this.minGapMs - this.now();
    if (wait <= 0) return void this.run();
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.run();
    }, wait);
    this.timer.unref();
  }

  async run(): Promise<void> {
    if (this.running) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.running = true;
    this.started = this.now();
    try {
      await this.task();
    } finally {
      this.running = false;
    }
    if (this.again) {
      this.again = false;
      this.wake();
    }
  }
}
