import type { NodeHistoryEntry } from '../../api/node-client.js';
import { NanoPayError } from '../../errors.js';
import { ZERO_HASH, hashBlock, linkAsAccount, normalizeAddress, rawToXno, verifyBlock, type StateBlock } from '../../nano/index.js';
import type { HistoryRecord } from '../../wallet/history-log.js';
import { inconsistent } from '../ledger/inconsistent.js';
import { provedBalanceAfter } from '../ledger/proofs.js';
import type { Session } from '../session.js';

/** One block of an account's history, newest first. */
export interface HistoryItem {
  hash: string;
  account: string;
  /** send, receive, open, change or epoch (a legacy block: the node's word for it). */
  type: string;
  /** The recipient of a send, the sender of a receive; null for a change. */
  counterparty: string | null;
  amount: string;
  amount_raw: string;
  /** The balance after the block. */
  balance: string | null;
  balance_raw: string | null;
  /** ISO time: when the node saw the block (node), or when nanopay signed it (recorded). */
  time: string | null;
  /** The representative the block names (change and open blocks). */
  representative?: string;
  /** node: the hash recomputed from the block's fields and its signature checked against the account's key; recorded: a block nanopay signed itself. */
  verified: boolean;
  confirmed?: boolean;
  height?: number;
  /**
   * Signed and journaled by a run that did not finish, and not in the ledger
   * (yet): the next command that touches the account publishes it, or drops it
   * if the account moved past it.
   */
  unsettled?: true;
  /** The `--id` key it was sent under. */
  id?: string;
  /** The payment request (kept by nanopay, node backend) this receive paid. */
  request?: string;
  /** The credits top-up (transaction id) this send paid. */
  topup?: string;
  source: HistorySource;
}

/** node: the node's account_history, checked; recorded: what nanopay itself recorded for this profile. */
export type HistorySource = 'node' | 'recorded';

export interface HistoryInput {
  address?: string;
  wallet?: string;
  index?: number;
  signal?: AbortSignal;
}

export interface HistoryStream {
  account: string;
  source: HistorySource;
  /** Where the history comes from, in words (shown with it). */
  note: string;
  items: AsyncGenerator<HistoryItem>;
}

export interface HistoryResult extends Omit<HistoryStream, 'items'> {
  history: HistoryItem[];
  /** True when there are older blocks than those listed (see --all). */
  more: boolean;
}

const NODE_NOTE = "From the node's account_history; each block's hash and signature checked, amounts from the signed balances.";
const RECORDED_NOTE =
  'The service has no account history: these are the blocks nanopay recorded on this machine for this profile; blocks made by other programs or machines are missing.';

/** How many blocks are asked of the node at once when walking the whole history. */
const PAGE = 100;

function iso(seconds: number | undefined): string | null {
  return seconds === undefined || seconds <= 0 ? null : new Date(seconds * 1000).toISOString();
}

/** What nanopay knows of an account's blocks: --id keys and top-ups (its history log), and requests paid (node requests, looked up a page at a time). */
async function localNotes(session: Session, account: string): Promise<{ records: Map<string, HistoryRecord>; requestBySend: Map<string, string> }> {
  const records = new Map<string, HistoryRecord>();
  // Only what adds to the node's word is kept: the blocks sent under a key or paying a top-up.
  for await (const r of session.historyLog.newestFirst(session.profileName)) if (r.account === account && (r.id !== undefined || r.topup !== undefined)) records.set(r.hash, r);
  return { records, requestBySend: new Map() };
}

/** The requests the sends received in these entries paid (the store keys payments by the sending block's hash). */
async function requestsPaid(session: Session, entries: NodeHistoryEntry[]): Promise<Map<string, string>> {
  const links = entries.flatMap((e) => (e.block === null ? [] : [e.block.link.toUpperCase()]));
  return (await session.dataStore()).requests.claimedBy(links);
}

function notes(item: HistoryItem, link: string | undefined, local: Awaited<ReturnType<typeof localNotes>>): HistoryItem {
  const record = local.records.get(item.hash);
  const request = link === undefined ? undefined : local.requestBySend.get(link.toUpperCase());
  return {
    ...item,
    ...(record?.id === undefined ? {} : { id: record.id }),
    ...(record?.topup === undefined ? {} : { topup: record.topup }),
    ...((item.type === 'receive' || item.type === 'open') && request !== undefined ? { request } : {}),
  };
}

/**
 * A node's block, checked before it is shown: its hash recomputed from the
 * signed fields, its signature by the account's key (an epoch block, signed by
 * the network, only when it moves no money), and the chain unbroken. The
 * amount and the kind come from its balance against the block before it.
 */
function nodeItem(account: string, e: NodeHistoryEntry, before: bigint | undefined, local: Awaited<ReturnType<typeof localNotes>>): HistoryItem {
  const party = { party: 'node' as const, outcome: 'The history stops here.' };
  const base = { hash: e.hash, account, time: iso(e.localTimestamp), source: 'node' as const, ...(e.confirmed === undefined ? {} : { confirmed: e.confirmed }), ...(e.height === undefined ? {} : { height: e.height }) };
  const block = e.block;
  if (block === null || before === undefined) {
    // A legacy block (or one whose predecessor is not a checked state block): what the node says, marked unchecked.
    const amount = e.amountRaw ?? 0n;
    const balance = block === null ? null : BigInt(block.balance);
    return notes(
      { ...base, type: e.subtype, counterparty: e.account ?? null, amount: rawToXno(amount), amount_raw: amount.toString(), balance: balance === null ? null : rawToXno(balance), balance_raw: balance?.toString() ?? null, verified: false },
      block?.link,
      local,
    );
  }
  if (hashBlock(block) !== e.hash) throw inconsistent(`the fields it lists for block ${e.hash} of ${account} hash to ${hashBlock(block)}`, party);
  const balance = BigInt(block.balance);
  const delta = balance - before;
  const epoch = delta === 0n && block.link !== ZERO_HASH;
  const signed = verifyBlock(block);
  if (!signed && !epoch) throw inconsistent(`block ${e.hash} is not signed by the key of ${account}`, party);
  const opens = block.previous.toUpperCase() === ZERO_HASH;
  const type = delta < 0n ? 'send' : delta > 0n ? (opens ? 'open' : 'receive') : epoch ? 'epoch' : 'change';
  const counterparty = type === 'send' ? linkAsAccount(block.link) : type === 'receive' || type === 'open' ? (e.account ?? null) : null;
  const amount = delta < 0n ? -delta : delta;
  return notes(
    {
      ...base,
      type,
      counterparty,
      amount: rawToXno(amount),
      amount_raw: amount.toString(),
      balance: rawToXno(balance),
      balance_raw: balance.toString(),
      ...(type === 'change' || type === 'open' ? { representative: normalizeAddress(block.representative) } : {}),
      verified: signed,
    },
    type === 'receive' || type === 'open' ? block.link : undefined,
    local,
  );
}

/**
 * The node's account_history, a page at a time (`head` from the page before,
 * or its last block and `offset` 1), newest first. Each block is shown once the block before it is known (its
 * balance gives the amount): the next in the page, else the first of the next
 * page, else fetched by hash and checked.
 */
async function* nodeHistory(session: Session, account: string, pageSize: number): AsyncGenerator<HistoryItem> {
  const node = await session.nodeClient();
  const local = await localNotes(session, account);
  const party = { party: 'node' as const, outcome: 'The history stops here.' };
  let held: NodeHistoryEntry | undefined;
  let from: { head: string; offset?: number } | undefined;
  for (;;) {
    const page = await node.accountHistory(account, { count: pageSize, ...from });
    local.requestBySend = await requestsPaid(session, held === undefined ? page.entries : [held, ...page.entries]);
    for (const e of page.entries) {
      if (held !== undefined) {
        if (held.block !== null && e.block !== null && held.block.previous.toUpperCase() !== e.hash) {
          throw inconsistent(`block ${held.hash} of ${account} follows ${held.block.previous.toUpperCase()}, but the history lists ${e.hash} next`, party);
        }
        yield nodeItem(account, held, e.block === null ? undefined : BigInt(e.block.balance), local);
      }
      held = e;
    }
    const last = page.entries.at(-1);
    if (last === undefined) break;
    if (page.previous !== undefined) from = { head: page.previous };
    // A full page without "previous" (a proxy that drops it): go on past its last block.
    else if (page.entries.length === pageSize) from = { head: last.hash, offset: 1 };
    else break;
  }
  if (held !== undefined) yield nodeItem(account, held, await balanceBefore(session, held.block), local);
}

/** The balance before an account's oldest listed block: none for an open block, else its previous block's, proved (a legacy one from its chain). */
async function balanceBefore(session: Session, block: StateBlock | null): Promise<bigint | undefined> {
  if (block === null) return undefined;
  const previous = block.previous.toUpperCase();
  if (previous === ZERO_HASH) return 0n;
  return provedBalanceAfter(await session.nodeClient(), previous);
}

/** What nanopay recorded of the account's blocks, newest first (blocks it signed itself). */
async function* recordedHistory(session: Session, account: string): AsyncGenerator<HistoryItem> {
  for await (const r of session.historyLog.newestFirst(session.profileName)) {
    if (r.account !== account) continue;
    const type = r.subtype;
    yield {
      hash: r.hash,
      account,
      type,
      counterparty: r.counterparty ?? null,
      amount: rawToXno(BigInt(r.amountRaw)),
      amount_raw: r.amountRaw,
      balance: rawToXno(BigInt(r.balanceRaw)),
      balance_raw: r.balanceRaw,
      time: r.at,
      ...(type === 'change' || type === 'open' ? { representative: r.representative } : {}),
      verified: true,
      ...(r.id === undefined ? {} : { id: r.id }),
      ...(r.topup === undefined ? {} : { topup: r.topup }),
      source: 'recorded',
    };
  }
}

/** The account's block a run signed and journaled but did not see land, if any: it comes before everything in the ledger. */
async function* unsettled(session: Session, account: string, source: HistorySource): AsyncGenerator<HistoryItem> {
  const entry = await session.journal.read(account);
  if (entry === undefined) return;
  const landed = await (await session.api()).blockInfo(entry.hash).then(
    () => true,
    (error: unknown) => {
      if (error instanceof NanoPayError && error.status === 404) return false;
      throw error;
    },
  );
  // One that landed (a run that died before clearing its entry) is in the history already.
  if (landed) return;
  const counterparty = entry.subtype === 'send' ? linkAsAccount(entry.block.link) : (entry.counterparty ?? null);
  const amount = entry.amountRaw ?? '0';
  yield {
    hash: entry.hash,
    account,
    type: entry.subtype,
    counterparty,
    amount: rawToXno(BigInt(amount)),
    amount_raw: amount,
    balance: rawToXno(BigInt(entry.block.balance)),
    balance_raw: entry.block.balance,
    time: entry.createdAt,
    ...(entry.subtype === 'change' || entry.subtype === 'open' ? { representative: normalizeAddress(entry.block.representative) } : {}),
    verified: true,
    unsettled: true,
    ...(entry.sendId === undefined ? {} : { id: entry.sendId }),
    ...(entry.topupTransactionId === undefined ? {} : { topup: entry.topupTransactionId }),
    source,
  };
}

async function* concat<T>(...parts: AsyncGenerator<T>[]): AsyncGenerator<T> {
  for (const part of parts) yield* part;
}

/**
 * An account's sends and receives (and representative changes), newest first,
 * as a stream: on a node from its account_history, a page at a time and each
 * block checked; on the service from what nanopay recorded (the service offers
 * no history); a block signed but not settled comes first, marked unsettled.
 * `pageSize` is how many blocks are asked of the node at once.
 */
export async function historyStream(session: Session, input: HistoryInput & { pageSize?: number } = {}): Promise<HistoryStream> {
  const account = input.address === undefined ? await session.address(input.wallet, input.index) : normalizeAddress(input.address);
  if (session.backendKind() === 'node') {
    return { account, source: 'node', note: NODE_NOTE, items: concat(unsettled(session, account, 'node'), nodeHistory(session, account, input.pageSize ?? PAGE)) };
  }
  return { account, source: 'recorded', note: RECORDED_NOTE, items: concat(unsettled(session, account, 'recorded'), recordedHistory(session, account)) };
}

/** The newest `limit` blocks of the history (see historyStream), and whether there are older ones. */
export async function history(session: Session, input: HistoryInput & { limit: number }): Promise<HistoryResult> {
  // One more than asked, so the last one's amount is known without another read.
  const { items, ...stream } = await historyStream(session, { ...input, pageSize: Math.min(input.limit + 2, 1000) });
  const list: HistoryItem[] = [];
  let more = false;
  for await (const item of items) {
    if (list.length === input.limit) {
      more = true;
      break;
    }
    list.push(item);
  }
  await items.return(undefined);
  return { ...stream, history: list, more };
}
