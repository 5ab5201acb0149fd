import { receiveAllPending } from '../ledger/chain.js';
import { settleJournal } from '../ledger/recovery.js';
import type { OpsContext } from '../context.js';
import type { ActiveAccount, Session } from '../session.js';
import { markReceived, nodePaymentStatus } from './node-requests.js';

/**
 * Receives what waits for one of the wallet's accounts before its money is
 * spent (a sweep, a refund from the account that was paid): a request of it is
 * read first (on a node, so a payment is matched and dated while it still
 * waits), then every proved pending block is received holding the account's
 * lock, and the blocks pay the open requests of their amount. Returns what was
 * received (raw).
 */
export async function receiveTakings(session: Session, ctx: OpsContext, signer: ActiveAccount, requestId?: string): Promise<bigint> {
  if (requestId !== undefined && session.backendKind() === 'node') await nodePaymentStatus(session, await session.nodeClient(), requestId);
  const blocks = await ctx.lock(signer.address, async () => {
    await settleJournal(ctx, signer.address, signer);
    return (await receiveAllPending(ctx, signer, 1n)).received;
  });
  await markReceived(session, signer.address, blocks);
  return blocks.reduce((sum, b) => sum + b.amountRaw, 0n);
}
