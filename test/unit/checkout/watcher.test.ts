import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { CheckoutWatcher } from '../../../src/checkout/watcher.js';
import type { CheckoutObservation, CheckoutRequest } from '../../../src/ops/requests/checkout.js';

const A = 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj';
const B = 'nano_1111111111111111111111111111111111111111111111111111hifc8npp';

function requestTo(address: string, id: string): CheckoutRequest {
  return { transaction_id: id, receive_address: address, amount: '1', amount_raw: '1000000000000000000000000000000', uri: `nano:${address}?amount=1000000000000000000000000000000` };
}

/** A reader whose answers the test releases one by one. */
function gatedReader(): { read: (id: string) => Promise<CheckoutObservation>; calls: string[]; answer(observation: CheckoutObservation): void } {
  const calls: string[] = [];
  const waiting: ((o: CheckoutObservation) => void)[] = [];
  return {
    calls,
    read: (id) => {
      calls.push(id);
      return new Promise((resolve) => waiting.push(resolve));
    },
    answer: (observation) => waiting.shift()?.(observation),
  };
}

const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

/** src/timing/wakeups.ts: the least time between two reads that wake-ups cause. */
const MIN_WAKE_GAP_MS = 250;

/** The watcher's clock, moved by the test: wake-ups read at most once per MIN_WAKE_GAP_MS of it. */
function testClock(): { now: () => number; pass(ms: number): void } {
  let time = 1_000_000;
  return { now: () => time, pass: (ms) => void (time += ms) };
}

describe('CheckoutWatcher.wake', () => {
  it('reads the watched, open requests to the confirmed address at once, and no others', async () => {
    const reader = gatedReader();
    const clock = testClock();
    const watcher = new CheckoutWatcher({ read: reader.read, intervalMs: 3_600_000, viewGraceMs: 10_000, now: clock.now });
    watcher.start();
    watcher.add(requestTo(A, 'a-watched'), { state: 'waiting' });
    watcher.add(requestTo(A, 'a-unwatched'), { state: 'waiting' });
    watcher.add(requestTo(B, 'b-watched'), { state: 'waiting' });
    watcher.add(requestTo(A, 'a-paid'), { state: 'paid' });
    watcher.view('a-watched');
    watcher.view('b-watched');
    watcher.view('a-paid');

    watcher.wake(A);
    expect(reader.calls).toEqual(['a-watched']);
    reader.answer({ state: 'waiting' });
    await settle();
    clock.pass(MIN_WAKE_GAP_MS);
    // Without an address (a reconnect): every watched, open request.
    watcher.wake();
    expect(reader.calls).toEqual(['a-watched', 'a-watched', 'b-watched']);
    watcher.stop();
  });

  it('a wake during a read reads once more after it (that read may predate the payment); none after stop', async () => {
    const reader = gatedReader();
    const clock = testClock();
    const watcher = new CheckoutWatcher({ read: reader.read, intervalMs: 3_600_000, viewGraceMs: 10_000, now: clock.now });
    watcher.start();
    watcher.add(requestTo(A, 'r'), { state: 'waiting' });
    const views: string[] = [];
    watcher.subscribe('r', (view) => views.push(view.state));

    watcher.wake(A);
    watcher.wake(A);
    watcher.wake(A);
    expect(reader.calls).toHaveLength(1);
    clock.pass(MIN_WAKE_GAP_MS);
    reader.answer({ state: 'waiting' });
    await settle();
    // The three wakes during the first read make one more read, not three.
    expect(reader.calls).toHaveLength(2);
    reader.answer({ state: 'paid', block_hash: 'B'.repeat(64) });
    await settle();
    expect(views).toEqual(['paid']);
    // Paid is final: not read again.
    watcher.wake(A);
    expect(reader.calls).toHaveLength(2);

    watcher.add(requestTo(B, 's'), { state: 'waiting' });
    watcher.view('s');
    watcher.stop();
    watcher.wake(B);
    expect(reader.calls).toHaveLength(2);
  });

  it('a flood of wakes is a reason to look, not a read each: one read, then at most one more per MIN_WAKE_GAP_MS', async () => {
    const reader = gatedReader();
    const watcher = new CheckoutWatcher({ read: reader.read, intervalMs: 3_600_000, viewGraceMs: 10_000 });
    watcher.start();
    watcher.add(requestTo(A, 'r'), { state: 'waiting' });
    watcher.view('r');
    for (let i = 0; i < 1000; i++) watcher.wake(A);
    expect(reader.calls).toHaveLength(1);
    reader.answer({ state: 'waiting' });
    await settle();
    for (let i = 0; i < 1000; i++) watcher.wake(A);
    // The read that follows waits for the gap since the first read started.
    expect(reader.calls).toHaveLength(1);
    await sleep(MIN_WAKE_GAP_MS + 50);
    expect(reader.calls).toHaveLength(2);
    reader.answer({ state: 'waiting' });
    await settle();
    expect(reader.calls).toHaveLength(2);
    watcher.stop();
  });
});

describe('CheckoutWatcher.prune', () => {
  it('forgets the requests nobody looked at or followed for the idle time, and keeps the others', () => {
    const clock = testClock();
    const watcher = new CheckoutWatcher({ read: async () => ({ state: 'waiting' }), intervalMs: 1000, viewGraceMs: 10_000, now: clock.now });
    watcher.add(requestTo(A, 'idle'), { state: 'waiting' });
    watcher.add(requestTo(A, 'viewed'), { state: 'waiting' });
    watcher.add(requestTo(B, 'followed'), { state: 'waiting' });
    const stop = watcher.subscribe('followed', () => undefined);
    clock.pass(9 * 60_000);
    watcher.view('viewed');
    clock.pass(2 * 60_000);
    expect(watcher.prune(10 * 60_000)).toBe(1);
    expect(watcher.request('idle')).toBeUndefined();
    expect(watcher.request('viewed')).toBeDefined();
    expect(watcher.request('followed')).toBeDefined();
    stop();
    clock.pass(11 * 60_000);
    expect(watcher.prune(10 * 60_000)).toBe(2);
    expect([watcher.request('viewed'), watcher.request('followed')]).toEqual([undefined, undefined]);
  });
});
