import { describe, expect, it } from 'vitest';
import { UnlockGate } from '../../../src/agent/unlock-gate.js';
import { NanoPayError } from '../../../src/errors.js';

/** An unlock the test finishes when it says so. */
function held(): { unlock: () => Promise<string>; started: () => boolean; finish: (ok?: boolean) => void } {
  let started = false;
  let settle!: (ok: boolean) => void;
  const done = new Promise<boolean>((resolve) => (settle = resolve));
  return {
    unlock: async () => {
      started = true;
      if (!(await done)) throw new Error('wrong password');
      return 'store';
    },
    started: () => started,
    finish: (ok = true) => settle(ok),
  };
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('the unlock gate', () => {
  it('runs two unlocks at once, lets two more wait their turn in order, and refuses the next at once with AGENT_BUSY (503)', async () => {
    const gate = new UnlockGate(2, 2);
    const unlocks = Array.from({ length: 4 }, held);
    const results = unlocks.map((u) => gate.run(u.unlock));
    await turn();
    expect(unlocks.map((u) => u.started())).toEqual([true, true, false, false]);
    const refused = await gate.run(async () => 'never').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(NanoPayError);
    expect(refused).toMatchObject({ code: 'AGENT_BUSY', status: 503 });

    // A failed unlock frees its place too; the first in line takes it.
    unlocks[1]?.finish(false);
    await expect(results[1]).rejects.toThrow('wrong password');
    await turn();
    expect(unlocks.map((u) => u.started())).toEqual([true, true, true, false]);
    unlocks[0]?.finish();
    await turn();
    expect(unlocks[3]?.started()).toBe(true);
    unlocks[2]?.finish();
    unlocks[3]?.finish();
    expect(await Promise.all([results[0], results[2], results[3]])).toEqual(['store', 'store', 'store']);
    // All places free again.
    const again = [held(), held(), held()];
    const more = again.map((u) => gate.run(u.unlock));
    await turn();
    expect(again.map((u) => u.started())).toEqual([true, true, false]);
    again.forEach((u) => u.finish());
    await Promise.all(more);
  });
});
