import { NanoPayError } from '../errors.js';
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

/** The toolset's session as its servers hold it: opened at start, or again at each call while what stops it lasts. */
export interface ToolsetHolder {
  /** The session; opened now if it was not (what stopped it may be fixed: a wallet made, a session unlocked), else the setup error. */
  session(): Promise<Session>;
  /** Makes the next block's work ahead (after a write); nothing while there is no session. */
  refreshWork(): void;
}

/**
 * Opens the toolset's session for a server that must answer even when it
 * cannot serve (an MCP client shows only "connection closed" for a server
 * that exits, and the agent behind it learns nothing): a setup failure (no
 * wallet, no API key, no password source or a wrong one) is logged, and every
 * call then tries again, answering the failure and its hint (what to run)
 * until it succeeds. `what` names the server in the failure.
 */
export async function holdToolsetSession(options: SessionOptions, log: (line: string) => void, what: string): Promise<ToolsetHolder> {
  let opened: ToolsetSession | undefined;
  let opening: Promise<ToolsetSession> | undefined;
  const open = (): Promise<ToolsetSession> => {
    opening ??= openToolsetSession(options, log).then(
      (ready) => (opened = ready),
      (error: unknown) => {
        opening = undefined;
        if (!(error instanceof NanoPayError)) throw error;
        throw new NanoPayError(error.code, `${what} cannot serve: ${error.message}`, { ...(error.hint === undefined ? {} : { hint: error.hint }) });
      },
    );
    return opening;
  };
  try {
    await open();
  } catch (error) {
    if (!(error instanceof NanoPayError)) throw error;
    log(`${error.message}${error.hint === undefined ? '' : ` (${error.hint})`}; every call answers this until it can`);
  }
  return { session: async () => (opened ?? (await open())).session, refreshWork: () => opened?.refreshWork() };
}
