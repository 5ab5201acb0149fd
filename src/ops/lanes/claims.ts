import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { NanoPayError } from '../../errors.js';
import { tryLease } from '../../wallet/lock.js';
import type { Lane } from './accounts.js';

/**
 * A lane this process holds: nobody else (no other call of this process, no
 * other process) signs on its account until it is given back. A claim is a
 * lease file per lane (wallet/lock.ts tryLease): one whose process died, or
 * whose time ran out, is taken over by the next caller.
 */
export interface LaneClaim {
  lane: Lane;
  /** Gives the lane back; a second call does nothing. */
  release(): Promise<void>;
}

/** Claim files this process holds, so its own callers pass them by without reading the file. */
const held = new Set<string>();
let wakeWaiters: () => void = () => undefined;
/** Resolves when this process gives a lane back. */
let givenBack = new Promise<void>((resolve) => (wakeWaiters = resolve));

function wake(): void {
  const waiters = wakeWaiters;
  givenBack = new Promise<void>((resolve) => (wakeWaiters = resolve));
  waiters();
}

/** Claims `lane` if it is free (until `untilMs` at the latest); undefined when another call or process holds it. */
export async function tryClaim(dir: string, lane: Lane, untilMs: number): Promise<LaneClaim | undefined> {
  const path = join(dir, `${lane.address}.claim`);
  if (held.has(path)) return undefined;
  held.add(path);
  const release = await tryLease(path, untilMs).catch((error: unknown) => {
    held.delete(path);
    throw error;
  });
  if (release === undefined) {
    held.delete(path);
    return undefined;
  }
  let released = false;
  return {
    lane,
    release: async () => {
      if (released) return;
      released = true;
      try {
        await release();
      } finally {
        held.delete(path);
        wake();
      }
    },
  };
}

/** How often lanes given back by other processes are looked for while waiting. */
const POLL_MS = 40;

/** Waits until a lane may have been given back (by this process at once, by another within POLL_MS), or the deadline; throws LANES_BUSY past it. */
export async function waitForLane(deadline: number, what: string, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted === true) throw new NanoPayError('CANCELLED', `Cancelled while waiting for ${what}`);
  const left = deadline - Date.now();
  if (left <= 0) {
    throw new NanoPayError('LANES_BUSY', `${what} stayed busy for the whole wait; nothing was paid`, {
      hint: 'Each lane carries one payment at a time: add lanes (nanopay lanes set N), or pay fewer at once.',
    });
  }
  await Promise.race([givenBack, sleep(Math.min(POLL_MS, left), undefined, signal === undefined ? {} : { signal }).catch(() => undefined)]);
}

/** Claims `lane`, waiting while others hold it, up to `waitMs`. */
export async function claimWaiting(dir: string, lane: Lane, untilMs: () => number, waitMs: number, signal?: AbortSignal): Promise<LaneClaim> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const claim = await tryClaim(dir, lane, untilMs());
    if (claim !== undefined) return claim;
    await waitForLane(deadline, `Lane ${lane.number} (${lane.address})`, signal);
  }
}

/** Who holds a lane, as its claim file says: the process and when the claim ends; undefined when it is free. */
export async function claimHolder(dir: string, lane: Lane): Promise<{ pid: number; until: string } | undefined> {
  const text = await readFile(join(dir, `${lane.address}.claim`), 'utf8').catch(() => undefined);
  if (text === undefined || text === '') return undefined;
  const [pid, , , until] = text.split('\n');
  return { pid: Number(pid), until: new Date(Number(until)).toISOString() };
}
