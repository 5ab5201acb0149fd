import { NanoPayError } from '../errors.js';
import { ZERO_HASH, isValidAddress, linkAsAccount, normalizeAddress, parseHash } from '../nano/index.js';
import { workValue } from '../work/index.js';
import { blockInfoOf, type LedgerBlock } from './ledger.js';
import type { SandboxService } from './service.js';

type Body = Record<string, unknown>;

/** A node's answer to a failed action: HTTP 200 with `{"error": "…"}`, in the node's own words. */
class NodeRefusal extends Error {}

/** The node's wording for each ledger rejection. */
const PROCESS_WORDS: Record<string, string> = {
  BLOCK_FORK: 'Fork',
  BLOCK_EXISTS: 'Old block',
  BLOCK_GAP_PREVIOUS: 'Gap previous block',
  BLOCK_BAD_SIGNATURE: 'Bad signature',
  BLOCK_INSUFFICIENT_WORK: 'Block work is less than threshold',
  BLOCK_BALANCE_MISMATCH: 'Balance and amount delta do not match',
  BLOCK_UNRECEIVABLE: 'Unreceivable',
  BLOCK_ALREADY_RECEIVED: 'Unreceivable',
};

/** Work the sandbox makes itself, at its easy thresholds only; harder requests are refused as public nodes do. */
const MAX_WORK_ATTEMPTS = 1 << 18;

function account(body: Body): string {
  const value = body.account;
  if (typeof value !== 'string' || !isValidAddress(value)) throw new NodeRefusal('Bad account number');
  return normalizeAddress(value);
}

function hash(body: Body): string {
  try {
    return parseHash(String(body.hash ?? ''), 'Block hash');
  } catch {
    throw new NodeRefusal('Bad hash number');
  }
}

const yes = (value: unknown): boolean => value === true || value === 'true';

function contents(stored: LedgerBlock): Record<string, string> {
  return { ...stored.block, link_as_account: linkAsAccount(stored.block.link), subtype: stored.subtype } as Record<string, string>;
}

/** The block of a confirmation message, in the node's form. */
export function confirmationMessage(stored: LedgerBlock): Record<string, unknown> {
  return {
    topic: 'confirmation',
    time: String(Date.now()),
    message: { account: stored.account, amount: stored.amount.toString(), hash: stored.hash, confirmation_type: 'active_quorum', block: contents(stored) },
  };
}

function receivable(service: SandboxService, body: Body): Record<string, unknown> {
  const list = service.ledger.pendingFor(account(body));
  const threshold = BigInt(/^\d+$/.test(String(body.threshold ?? '')) ? String(body.threshold) : '0');
  const count = Number(body.count ?? '-1');
  const chosen = list.filter((r) => r.amount >= threshold).slice(0, count > 0 ? count : undefined);
  // Like a node: "" for none; hashes without threshold or source; amounts (and sources) with them.
  if (chosen.length === 0) return { blocks: '' };
  if (yes(body.source)) return { blocks: Object.fromEntries(chosen.map((r) => [r.hash, { amount: r.amount.toString(), source: r.source }])) };
  if (body.threshold !== undefined) return { blocks: Object.fromEntries(chosen.map((r) => [r.hash, r.amount.toString()])) };
  return { blocks: chosen.map((r) => r.hash) };
}

/** The `accounts` of a batch action: each one the node could decode, or undefined in its place (the node names it as given). */
function accountsOf(body: Body): { given: string; address: string | undefined }[] {
  const list = Array.isArray(body.accounts) ? body.accounts : [];
  return list.map((value: unknown) => {
    const given = String(value);
    return { given, address: typeof value === 'string' && isValidAddress(value) ? normalizeAddress(value) : undefined };
  });
}

/** A batch answer as a node builds it: an empty map is left out, and an answer with nothing in it is its "Empty response" error. */
function batchAnswer(maps: Record<string, Record<string, unknown>>): Record<string, unknown> {
  const kept = Object.fromEntries(Object.entries(maps).filter(([, map]) => Object.keys(map).length > 0));
  if (Object.keys(kept).length === 0) throw new NodeRefusal('Empty response');
  return kept;
}

/**
 * accounts_receivable as the reference node (V27.1) answers it: per account, in hash order, at most `count`
 * blocks (of at least `threshold` when one is given); hashes alone without threshold, source or sorting,
 * else hash → amount (→ {amount, source} with source). Accounts with none are left out, and `blocks` is ""
 * when none has any (the docs show an object). Keys are the accounts in their nano_ form; one account the
 * node cannot decode fails the whole call.
 */
function accountsReceivable(service: SandboxService, body: Body): Record<string, unknown> {
  const threshold = BigInt(/^\d+$/.test(String(body.threshold ?? '')) ? String(body.threshold) : '0');
  const count = /^\d+$/.test(String(body.count ?? '')) ? Number(body.count) : Infinity;
  const simple = threshold === 0n && !yes(body.source) && !yes(body.sorting);
  const blocks: Record<string, unknown> = {};
  for (const { address } of accountsOf(body)) {
    if (address === undefined) throw new NodeRefusal('Bad account number');
    const chosen = service.ledger
      .pendingFor(address)
      .filter((r) => simple || r.amount >= threshold)
      .sort((a, b) => (a.hash < b.hash ? -1 : 1))
      .slice(0, count);
    if (yes(body.sorting) && !simple) chosen.sort((a, b) => (a.amount > b.amount ? -1 : a.amount < b.amount ? 1 : 0));
    if (chosen.length === 0) continue;
    blocks[address] = simple
      ? chosen.map((r) => r.hash)
      : Object.fromEntries(chosen.map((r) => [r.hash, yes(body.source) ? { amount: r.amount.toString(), source: r.source } : r.amount.toString()]));
  }
  return { blocks: Object.keys(blocks).length === 0 ? '' : blocks };
}

/** accounts_balances as the node answers it: balances by the account as given, what it cannot decode in `errors`. */
function accountsBalances(service: SandboxService, body: Body): Record<string, unknown> {
  const balances: Record<string, unknown> = {};
  const errors: Record<string, unknown> = {};
  for (const { given, address } of accountsOf(body)) {
    if (address === undefined) errors[given] = 'Bad account number';
    else {
      const waiting = service.ledger.pendingFor(address).reduce((sum, r) => sum + r.amount, 0n).toString();
      balances[given] = { balance: (service.ledger.account(address)?.balance ?? 0n).toString(), pending: waiting, receivable: waiting };
    }
  }
  return batchAnswer({ balances, errors });
}

/** accounts_frontiers as the node answers it: heads by the account's nano_ form, unopened ("Account not found") and undecodable accounts in `errors` by the account as given. */
function accountsFrontiers(service: SandboxService, body: Body): Record<string, unknown> {
  const frontiers: Record<string, unknown> = {};
  const errors: Record<string, unknown> = {};
  for (const { given, address } of accountsOf(body)) {
    const record = address === undefined ? undefined : service.ledger.account(address);
    if (address === undefined) errors[given] = 'Bad account number';
    else if (record === undefined) errors[given] = 'Account not found';
    else frontiers[address] = record.frontier;
  }
  return batchAnswer({ frontiers, errors });
}

function accountInfo(service: SandboxService, body: Body): Record<string, unknown> {
  const address = account(body);
  const record = service.ledger.account(address);
  if (record === undefined) throw new NodeRefusal('Account not found');
  const waiting = service.ledger.pendingFor(address).reduce((sum, r) => sum + r.amount, 0n).toString();
  return {
    frontier: record.frontier,
    open_block: record.openBlock,
    representative_block: record.frontier,
    balance: record.balance.toString(),
    modified_timestamp: String(service.ledger.blocks.get(record.frontier)?.timestamp ?? 0),
    block_count: String(record.height),
    account_version: '2',
    confirmation_height: String(record.height),
    ...(yes(body.representative) ? { representative: record.representative } : {}),
    ...(yes(body.receivable) || yes(body.pending) ? { receivable: waiting, pending: waiting } : {}),
  };
}

function blockInfo(service: SandboxService, body: Body): Record<string, unknown> {
  const stored = service.ledger.blocks.get(hash(body));
  if (stored === undefined) throw new NodeRefusal('Block not found');
  const block = contents(stored);
  return blockInfoOf(stored, yes(body.json_block) ? block : JSON.stringify(block));
}

function processBlock(service: SandboxService, body: Body): Record<string, unknown> {
  let block = body.block;
  if (typeof block === 'string' && !yes(body.json_block)) {
    try {
      block = JSON.parse(block) as unknown;
    } catch {
      throw new NodeRefusal('Block is invalid');
    }
  }
  try {
    return { hash: service.publish(block, typeof body.subtype === 'string' ? body.subtype : undefined).hash };
  } catch (error) {
    if (error instanceof NanoPayError) throw new NodeRefusal(PROCESS_WORDS[error.code] ?? 'Block is invalid');
    throw error;
  }
}

function workGenerate(service: SandboxService, body: Body): Record<string, unknown> {
  const root = hash(body);
  const difficulty = typeof body.difficulty === 'string' && /^[0-9a-fA-F]{16}$/.test(body.difficulty) ? body.difficulty.toLowerCase() : service.thresholds.send;
  const start = BigInt(Math.floor(Math.random() * 2 ** 48));
  for (let i = 0n; i < BigInt(MAX_WORK_ATTEMPTS); i++) {
    const work = ((start + i) & 0xffff_ffff_ffff_ffffn).toString(16).padStart(16, '0');
    if (BigInt(`0x${workValue(root, work)}`) >= BigInt(`0x${difficulty}`)) return { work, difficulty: workValue(root, work), multiplier: '1', hash: root };
  }
  throw new NodeRefusal('Work generation is disabled');
}

/**
 * A block as account_history lists it: with `raw`, its signed fields and the
 * node's summary (subtype, the other account, the amount); without, only
 * the summary, and nothing for a change block (a node leaves those out).
 */
function historyItem(service: SandboxService, stored: LedgerBlock, raw: boolean): Record<string, unknown> | undefined {
  const b = stored.block;
  // As a node: an open block is a "receive" in account_history (the genesis block aside).
  const subtype = stored.subtype === 'open' ? 'receive' : stored.subtype;
  const other =
    stored.subtype === 'send'
      ? { account: linkAsAccount(b.link), amount: stored.amount.toString() }
      : stored.subtype === 'open' || stored.subtype === 'receive'
        ? { ...(service.ledger.receivables.get(b.link) === undefined ? {} : { account: service.ledger.receivables.get(b.link)?.source }), amount: stored.amount.toString() }
        : {};
  const where = { local_timestamp: String(stored.timestamp), height: String(stored.height), hash: stored.hash, confirmed: true };
  if (!raw) return subtype === 'send' || subtype === 'receive' ? { type: subtype, ...other, ...where } : undefined;
  return { type: 'state', representative: b.representative, link: b.link, balance: b.balance, previous: b.previous, subtype, ...other, ...where, work: b.work, signature: b.signature };
}

/**
 * account_history as a node walks it: from `head` (else the account's frontier)
 * towards the open block (`reverse`: from the open block, or `head`, towards the
 * frontier), skipping `offset` blocks, at most `count`; `previous` (`next` when
 * reversed) names where the following page starts.
 */
function accountHistory(service: SandboxService, body: Body): Record<string, unknown> {
  const reverse = yes(body.reverse);
  let address: string;
  let at: string | null;
  if (body.head !== undefined) {
    const head = service.ledger.blocks.get(hash({ hash: body.head }));
    if (head === undefined) throw new NodeRefusal('Block not found');
    address = head.account;
    at = head.hash;
  } else {
    address = account(body);
    const record = service.ledger.account(address);
    if (record === undefined && reverse) throw new NodeRefusal('Account not found');
    at = record === undefined ? null : reverse ? record.openBlock : record.frontier;
  }
  const count = Number(body.count);
  if (!Number.isInteger(count) || count < 0) throw new NodeRefusal('Invalid count limit');
  let offset = body.offset === undefined ? 0 : Number(body.offset);
  if (!Number.isInteger(offset) || offset < 0) throw new NodeRefusal('Invalid offset');
  const history: Record<string, unknown>[] = [];
  let remaining = count;
  while (at !== null && remaining > 0) {
    const stored = service.ledger.blocks.get(at) as LedgerBlock;
    const item = offset > 0 ? undefined : historyItem(service, stored, yes(body.raw));
    if (offset > 0) offset--;
    else if (item !== undefined) {
      history.push(item);
      remaining--;
    }
    const next = reverse ? stored.successor : stored.block.previous;
    at = next === null || next === ZERO_HASH ? null : next;
  }
  return { account: address, history, ...(at === null ? {} : { [reverse ? 'next' : 'previous']: at }) };
}

const ACTIONS: Record<string, (service: SandboxService, body: Body) => Record<string, unknown>> = {
  account_info: accountInfo,
  account_history: accountHistory,
  account_balance: (s, b) => {
    const address = account(b);
    const waiting = s.ledger.pendingFor(address).reduce((sum, r) => sum + r.amount, 0n).toString();
    return { balance: (s.ledger.account(address)?.balance ?? 0n).toString(), pending: waiting, receivable: waiting };
  },
  receivable,
  pending: receivable,
  accounts_receivable: accountsReceivable,
  accounts_pending: accountsReceivable,
  accounts_balances: accountsBalances,
  accounts_frontiers: accountsFrontiers,
  block_info: blockInfo,
  process: processBlock,
  work_generate: workGenerate,
  // The network decides the work thresholds a client uses, and the x402 network named: "dev", or at live thresholds
  // "test" (Nano's test network works at live levels). Never "live": the sandbox's money is never real.
  version: (s) => ({ node_vendor: 'nanopay sandbox', network: s.network === 'live' ? 'test' : 'dev', rpc_version: '1' }),
};

/**
 * The sandbox's node side: `POST /` with `{"action": …}` on the same ledger
 * as the service side. Answers are bare JSON as a node's, and a refusal is
 * HTTP 200 with `{"error": "…"}` in the node's words.
 */
export function nodeRpc(service: SandboxService, body: Body): Record<string, unknown> {
  const action = typeof body.action === 'string' ? body.action : '';
  const handler = Object.hasOwn(ACTIONS, action) ? ACTIONS[action] : undefined;
  if (handler === undefined) return { error: 'Unknown command' };
  try {
    return handler(service, body);
  } catch (error) {
    if (error instanceof NodeRefusal) return { error: error.message };
    throw error;
  }
}
