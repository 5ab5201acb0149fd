import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Wakeup } from '../../../src/timing/wakeups.js';

/** src/timing/wakeups.ts: reads that wake-ups cause, paced after a burst of WAKE_BURST. */
const MIN_WAKE_GAP_MS = 250;
const WAKE_BURST = 2;

/** A watch loop on the fake clock: each wait's end (a read), in ms since the start. */
function watching(wakeup: Wakeup, waitMs: number): { reads: number[]; stop(): void } {
  const start = Date.now();
  const reads: number[] = [];
  const stop = new AbortController();
  void (async () => {
    for (;;) {
      await wakeup.wait(waitMs, stop.signal);
      reads.push(Date.now() - start);
    }
  })().catch(() => undefined);
  return { reads, stop: () => stop.abort() };
}

describe('Wakeup', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('a confirmation right after the look a (re)connect took is read at once; a third wake then waits its turn', async () => {
    const wakeup = new Wakeup();
    const watch = watching(wakeup, 60_000);
    // The WebSocket connected: a look.
    wakeup.wake();
    await vi.advanceTimersByTimeAsync(10);
    // The payment's confirmation, a moment later: not held back by the connect's look.
    wakeup.wake();
    await vi.advanceTimersByTimeAsync(0);
    expect(watch.reads).toEqual([0, 10]);
    // The pace runs from the first of the burst.
    wakeup.wake();
    await vi.advanceTimersByTimeAsync(MIN_WAKE_GAP_MS - 10 - 1);
    expect(watch.reads).toHaveLength(WAKE_BURST);
    await vi.advanceTimersByTimeAsync(1);
    expect(watch.reads).toEqual([0, 10, MIN_WAKE_GAP_MS]);
    watch.stop();
  });

  it('a flood of wakes costs one read per MIN_WAKE_GAP_MS after the burst, and a quiet while gives the burst back', async () => {
    const wakeup = new Wakeup();
    const watch = watching(wakeup, 60_000);
    for (let t = 0; t < 2000; t += 2) {
      wakeup.wake();
      await vi.advanceTimersByTimeAsync(2);
    }
    expect(watch.reads.length).toBeLessThanOrEqual(WAKE_BURST + 2000 / MIN_WAKE_GAP_MS);
    expect(watch.reads.length).toBeGreaterThanOrEqual(2000 / MIN_WAKE_GAP_MS);
    await vi.advanceTimersByTimeAsync(WAKE_BURST * MIN_WAKE_GAP_MS);
    const before = watch.reads.length;
    wakeup.wake();
    await vi.advanceTimersByTimeAsync(0);
    wakeup.wake();
    await vi.advanceTimersByTimeAsync(0);
    expect(watch.reads.length).toBe(before + WAKE_BURST);
    watch.stop();
  });

  it('without a wake, a wait lasts its time', async () => {
    const wakeup = new Wakeup();
    const watch = watching(wakeup, 1000);
    await vi.advanceTimersByTimeAsync(2999);
    expect(watch.reads).toEqual([1000, 2000]);
    watch.stop();
  });
});
