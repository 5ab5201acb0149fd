import { rawToXno } from '../../nano/index.js';
import { receiveAllPending, type ReceivedBlock } from '../ledger/chain.js';
import { Wakeup } from '../../timing/wakeups.js';
import { SAFETY_POLL_MS, confirmations } from '../ledger/confirmations.js';
import { freshAccounts, markReceived } from '../requests/node-requests.js';
import { settleJournal } from '../ledger/recovery.js';
import type { ActiveAccount, Session } from '../session.js';

export interface ReceiveInput {
  wallet?: string;
  index?: number;
  /** Pending blocks below this many raw are left alone (dust). */
  minimumRaw?: bigint;
  signal?: AbortSignal;
}

export interface ReceivedItem {
  /** The account that received (the active one, or a request's fresh account). */
  account: string;
  hash: string;
  source: string;
  subtype: 'open' | 'receive';
  amount: string;
  amount_raw: string;
}

/** A waiting block that was not received: nanopay could not prove it (see ops/ledger/proofs.ts), so it counts for nothing. */
export interface NotReceivedItem {
  account: string;
  hash: string;
  code: string;
  message: string;
}

export interface ReceiveResult {
  account: string;
  received: ReceivedItem[];
  total: string;
  total_raw: string;
  /** Present when some waiting block could not be received; the others were. */
  not_received?: NotReceivedItem[];
}

/** The accounts receive covers: the one named or active, and on a node the fresh accounts of its wallet's requests. */
async function accountsToReceive(session: Session, input: ReceiveInput): Promise<ActiveAccount[]> {
  const main = await session.account(input.wallet, input.index);
  if (session.backendKind() !== 'node') return [main];
  const fresh = (await freshAccounts(session, main.wallet)).filter((i) => i !== main.index);
  return [main, ...(await Promise.all(fresh.map((i) => session.account(main.wallet, i))))];
}

function item(account: string, b: ReceivedBlock): ReceivedItem {
  return { account, hash: b.hash, source: b.sourceHash, subtype: b.subtype, amount: rawToXno(b.amountRaw), amount_raw: b.amountRaw.toString() };
}

/** Receives every pending block of the account (an open block first for a new account), and of its wallet's fresh request accounts. */
export async function receive(session: Session, input: ReceiveInput = {}): Promise<ReceiveResult> {
  const ctx = await session.context(input.signal);
  const accounts = await accountsToReceive(session, input);
  const minimumRaw = input.minimumRaw ?? BigInt(session.profile().receiveMinimum ?? '1');
  const received: ReceivedItem[] = [];
  const notReceived: NotReceivedItem[] = [];
  for (const account of accounts) {
    const blocks = await ctx.lock(account.address, async () => {
      await settleJournal(ctx, account.address, account);
      return receiveAllPending(ctx, account, minimumRaw);
    });
    if (session.backendKind() === 'node') await markReceived(session, account.address, blocks.received);
    received.push(...blocks.received.map((b) => item(account.address, b)));
    notReceived.push(...blocks.refused.map((r) => ({ account: account.address, hash: r.hash, code: r.error.code, message: r.error.message })));
  }
  const total = received.reduce((sum, b) => sum + BigInt(b.amount_raw), 0n);
  return { account: (accounts[0] as ActiveAccount).address, received, total: rawToXno(total), total_raw: total.toString(), ...(notReceived.length === 0 ? {} : { not_received: notReceived }) };
}

export interface ReceiveWatchOptions extends ReceiveInput {
  intervalMs: number;
  timeoutMs?: number;
  /** Each run of receive that received something, or found a block it cannot receive (each such block once). */
  onReceived?: (result: ReceiveResult) => void;
  /** Called with the accounts watched before each wait, and with undefined when it ends (a spinner shows only then, never over the work's). */
  onWaiting?: (accounts: string[] | undefined) => void;
}

/**
 * Keeps receiving until the timeout or the signal: at each interval, or where
 * the node's WebSocket is known, the moment a send to one of the accounts is
 * confirmed and after every (re)connect. Returns everything received; the
 * signal ends it with CANCELLED (what was received was reported as it came).
 */
export async function watchReceive(session: Session, options: ReceiveWatchOptions): Promise<ReceiveResult> {
  const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
  const wake = new Wakeup();
  let watched = new Set((await accountsToReceive(session, options)).map((a) => a.address));
  const feed = await confirmations(session, [...watched], () => wake.wake(), (c) => c.subtype === 'send' && c.linkAsAccount !== undefined && watched.has(c.linkAsAccount));
  const all: ReceivedItem[] = [];
  const refused = new Set<string>();
  try {
    for (;;) {
      const { not_received: notReceived = [], ...result } = await receive(session, options);
      const newlyRefused = notReceived.filter((r) => !refused.has(r.hash));
      for (const r of newlyRefused) refused.add(r.hash);
      if (result.received.length > 0 || newlyRefused.length > 0) {
        all.push(...result.received);
        options.onReceived?.({ ...result, ...(newlyRefused.length === 0 ? {} : { not_received: newlyRefused }) });
      }
      // A request made meanwhile may have added a fresh account.
      const now = new Set((await accountsToReceive(session, options)).map((a) => a.address));
      if (now.size !== watched.size) feed?.follow([...now]);
      watched = now;
      const remaining = deadline - Date.now();
      if (remaining <= 0) break;
      const wait = feed?.live() ? Math.max(options.intervalMs, SAFETY_POLL_MS) : options.intervalMs;
      options.onWaiting?.([...watched]);
      try {
        await wake.wait(Math.min(wait, remaining), options.signal);
      } finally {
        options.onWaiting?.(undefined);
      }
    }
  } finally {
    feed?.close();
  }
  const total = all.reduce((sum, b) => sum + BigInt(b.amount_raw), 0n);
  return { account: [...watched][0] as string, received: all, total: rawToXno(total), total_raw: total.toString() };
}
