import { confirmations } from '../ops/ledger/confirmations.js';
import { PacedTask } from '../timing/wakeups.js';
import { nextWork } from '../ops/account/precache.js';
import { Session, type SessionOptions } from '../ops/session.js';

export interface ToolsetSession {
  session: Session;
  /** Makes the next block's work in the background; call it at start and after every write. */
  refreshWork(): void;
}

/**
 * A long-running session for the toolset: unlocked once at start (failing
 * fast on a wrong password or no wallet), with work made ahead while idle by
 * the configured provider (NANO_WORK_MODE holds here as in the CLI), and
 * made again when the account's chain moves under it (node WebSocket).
 */
export async function openToolsetSession(options: SessionOptions, log: (line: string) => void): Promise<ToolsetSession> {
  const session = new Session(options);
  const account = await session.account();
  await session.api();
  log(`wallet unlocked: ${account.wallet} account ${account.index} (${account.address})`);
  const ahead = session.workAhead();
  // One refresh at a time, spaced: a flood of (forged) confirmations must not become a flood of reads and work.
  const refresh = new PacedTask(async () => {
    try {
      const { root, threshold } = await nextWork(session);
      await ahead.precache(root, threshold);
      log(`work ready for the next block (root ${root.slice(0, 16)}…)`);
    } catch (error) {
      log(`could not precompute work: ${error instanceof Error ? error.message : String(error)}`);
    }
  });
  const refreshWork = (): void => refresh.wake();
  refreshWork();
  // Where the node's WebSocket is known, a block of this account made elsewhere (another process) makes the work anew at once.
  await confirmations(session, [account.address], refreshWork, (c) => c.account === account.address);
  return { session, refreshWork };
}
