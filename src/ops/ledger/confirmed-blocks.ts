import type { StateBlock } from '../../nano/index.js';

/** How many blocks are remembered per backend (about a kilobyte each), the oldest forgotten first. */
const MAX_BLOCKS = 2048;

/** By backend object: what one node confirmed says nothing of another ledger. */
const memories = new WeakMap<object, Map<string, StateBlock>>();

/**
 * Remembers a block this process checked in full (its hash computed from its
 * contents here, its signature by its account's key, or made here) and that
 * `backend` said is confirmed. Confirmation is final, so when the backend
 * names that block an account's frontier again (a lane's next payment, a
 * payer's next payment to a paywall), its contents need not be fetched and
 * checked again: readAccountHead takes them from here.
 */
export function rememberConfirmed(backend: object, hash: string, block: StateBlock): void {
  let memory = memories.get(backend);
  if (memory === undefined) memories.set(backend, (memory = new Map()));
  memory.delete(hash);
  memory.set(hash, block);
  if (memory.size > MAX_BLOCKS) memory.delete(memory.keys().next().value as string);
}

/** The block `hash` as remembered for `backend` (confirmed, checked), or undefined. */
export function confirmedBlock(backend: object, hash: string): StateBlock | undefined {
  return memories.get(backend)?.get(hash.toUpperCase());
}
