import { addressToPublicKey, hashBlock, verifyBlock, type StateBlock } from '../../nano/index.js';
import type { HistoryRecord } from '../../wallet/history-log.js';
import { LIVE_THRESHOLDS } from '../../work/index.js';
import type { OpsContext } from '../context.js';
import type { AccountHead } from './chain.js';

/** The signed block a history line records, when the line holds all of it. */
function blockOf(record: HistoryRecord): StateBlock | undefined {
  if (record.signed === undefined) return undefined;
  const { previous, link, signature, work } = record.signed;
  return { type: 'state', account: record.account, previous, representative: record.representative, balance: record.balanceRaw, link, signature, work };
}

/**
 * The account's head as this profile made it, read from no backend: its
 * newest block in the profile's history (a block of ours that landed), checked
 * as a head the backend names is (it hashes to the hash recorded, it is the
 * account's, and the account's key signed it), with the thresholds it was made
 * for (the live base values when its line does not say). Undefined when the
 * history holds no such block of the account. It is the head unless the
 * account moved since without this profile (another machine or profile): a
 * block built on it is then a fork, which the ledger refuses, so nothing moves.
 */
export async function recordedHead(ctx: Pick<OpsContext, 'history' | 'profile'>, address: string): Promise<AccountHead | undefined> {
  const key = addressToPublicKey(address);
  for await (const record of ctx.history.newestFirst(ctx.profile)) {
    if (addressToPublicKey(record.account) !== key) continue;
    // Only the account's newest block can be its head: an older line with the whole block is not.
    const block = blockOf(record);
    if (block === undefined || hashBlock(block) !== record.hash.toUpperCase() || !verifyBlock(block)) return undefined;
    return {
      state: { address, frontier: record.hash.toUpperCase(), balance: BigInt(block.balance), representative: block.representative },
      block,
      thresholds: record.thresholds ?? LIVE_THRESHOLDS,
      confirmed: false,
    };
  }
  return undefined;
}
