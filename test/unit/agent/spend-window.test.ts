import { describe, expect, it } from 'vitest';
import { Confirmations } from '../../../src/agent/confirmations.js';
import { SPEND_WINDOW_MS } from '../../../src/agent/spend-window.js';

describe('the chat\'s window of spends made without a confirmation', () => {
  it('counts spends of the last hour and those under way; forgets one that moved nothing, and one older than the window', () => {
    let now = 1_000_000;
    const { spends } = new Confirmations(5 * 60_000, () => now);
    const first = spends.admit(60n, 100n);
    expect(first).toBeDefined();
    // Under way, it counts already: a second spend that would exceed the threshold is not admitted.
    expect(spends.admit(50n, 100n)).toBeUndefined();
    const failed = spends.admit(40n, 100n);
    failed?.end(false);
    expect(spends.totalRaw()).toBe(60n);
    first?.end(true);
    first?.end(true);
    expect(spends.totalRaw()).toBe(60n);
    now += SPEND_WINDOW_MS - 1;
    expect(spends.admit(41n, 100n)).toBeUndefined();
    now += 1;
    expect(spends.totalRaw()).toBe(0n);
    expect(spends.admit(100n, 100n)).toBeDefined();
  });
});
