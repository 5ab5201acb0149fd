import { rawToXno } from '../nano/index.js';
import { receiveAllPending } from './chain.js';
import { settleJournal } from './recovery.js';
import type { Session } from './session.js';

export interface ReceiveInput {
  wallet?: string;
  index?: number;
  /** Pending blocks below this many raw are left alone (dust). */
  minimumRaw?: bigint;
  signal?: AbortSignal;
}

export interface ReceivedItem {
  hash: string;
  source: string;
  subtype: 'open' | 'receive';
  amount: string;
  amount_raw: string;
}

export interface ReceiveResult {
  account: string;
  received: ReceivedItem[];
  total: string;
  total_raw: string;
}

/** Receives every pending block of the account (an open block first for a new account). */
export async function receive(session: Session, input: ReceiveInput = {}): Promise<ReceiveResult> {
  const ctx = await session.context(input.signal);
  const account = await session.account(input.wallet, input.index);
  const minimumRaw = input.minimumRaw ?? BigInt(session.profile().receiveMinimum ?? '1');
  const blocks = await ctx.lock(account.address, async () => {
    await settleJournal(ctx, account.address);
    return receiveAllPending(ctx, account, minimumRaw);
  });
  const total = blocks.reduce((sum, b) => sum + b.amountRaw, 0n);
  return {
    account: account.address,
    received: blocks.map((b) => ({ hash: b.hash, source: b.sourceHash, subtype: b.subtype, amount: rawToXno(b.amountRaw), amount_raw: b.amountRaw.toString() })),
    total: rawToXno(total),
    total_raw: total.toString(),
  };
}
