import { nextWork } from '../ops/precache.js';
import { Session, type SessionOptions } from '../ops/session.js';
import { WorkCache, generateWork } from '../work/index.js';

export interface ToolsetSession {
  session: Session;
  /** Makes the next block's work in the background; call it at start and after every write. */
  refreshWork(): void;
}

/**
 * A long-running session for the toolset: unlocked once at start (failing
 * fast on a wrong password or no wallet), with work made ahead while idle.
 */
export async function openToolsetSession(options: Omit<SessionOptions, 'work'>, log: (line: string) => void): Promise<ToolsetSession> {
  const cache = new WorkCache((root, threshold, signal) => generateWork(root, threshold, signal === undefined ? {} : { signal }));
  const session = new Session({ ...options, work: cache.provider });
  const account = await session.account();
  await session.api();
  log(`wallet unlocked: ${account.wallet} account ${account.index} (${account.address})`);
  const refreshWork = (): void => {
    nextWork(session)
      .then(async ({ root, threshold }) => {
        await cache.precache(root, threshold);
        log(`work ready for the next block (root ${root.slice(0, 16)}…)`);
      })
      .catch((error: unknown) => log(`could not precompute work: ${error instanceof Error ? error.message : String(error)}`));
  };
  refreshWork();
  return { session, refreshWork };
}
