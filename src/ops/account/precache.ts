import { workRoot } from '../../nano/index.js';
import { readAccountHead } from '../ledger/chain.js';
import type { Session } from '../session.js';

/**
 * The root and threshold of the active account's next block: its frontier (or
 * its key when unopened), at the send threshold, which also covers a receive.
 */
export async function nextWork(session: Session): Promise<{ root: string; threshold: string }> {
  const ctx = await session.context();
  const address = await session.address();
  const { state, thresholds } = await readAccountHead(ctx, address);
  return { root: workRoot({ account: address, previous: state.frontier ?? '0'.repeat(64) }), threshold: thresholds.send };
}
