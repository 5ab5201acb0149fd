import { NanoPayError, redactUrl } from '../errors.js';
import { normalizeAddress, type StateBlock, type Subtype } from '../nano/index.js';
import { NETWORK_THRESHOLDS } from '../work/index.js';
import { serviceOnly, type LedgerBackend } from './backend.js';
import { confirmedFlag, seenAtOf, type RemoteAccountInfo, type RemoteBalance, type RemoteBlockInfo, type RemoteDifficulty } from './client.js';
import { asObject, bigIntField, hexField, ledgerBlock, optStr, stateBlock, str, type Json } from './shape.js';
import { exchange } from './transport.js';

/** How a provider wants its key: an Authorization header (Bearer or Basic), or a `key` field in the body. */
export type NodeAuthScheme = 'bearer' | 'basic' | 'key';

export interface NodeOptions {
  url: string;
  auth?: { scheme: NodeAuthScheme; secret: string };
  timeoutMs?: number;
  /** Bound of one call, its retries included. */
  deadlineMs?: number;
  retries?: number;
}

/** A receivable block as the node lists it; the amount when it says. */
export interface Receivable {
  hash: string;
  amountRaw?: bigint;
}

/** The node's `process` refusals, by the words it uses, and what each means for us. */
const PROCESS_ERRORS: [RegExp, string, string][] = [
  [/^fork/i, 'BLOCK_FORK', 'another block already follows the same previous block (a fork)'],
  [/^old block/i, 'BLOCK_EXISTS', 'the block is already in the ledger'],
  [/^gap previous/i, 'BLOCK_GAP_PREVIOUS', 'the node does not know the previous block'],
  [/^gap source/i, 'BLOCK_GAP_SOURCE', 'the node does not know the send this block receives'],
  [/^bad signature/i, 'BLOCK_BAD_SIGNATURE', 'the signature does not match the block'],
  [/^block work is (less than threshold|insufficient)/i, 'BLOCK_INSUFFICIENT_WORK', 'the proof of work is below the network threshold'],
  [/^negative spend/i, 'BLOCK_NEGATIVE_SPEND', 'the block spends more than the balance'],
  [/^unreceivable/i, 'BLOCK_UNRECEIVABLE', 'the block receives a send that is not receivable by this account'],
  [/^balance and amount delta do not match/i, 'BLOCK_BALANCE_MISMATCH', 'the balance change does not match the amount'],
  [/^block is invalid/i, 'INVALID_BLOCK', 'the node found the block invalid'],
];

/** A node or proxy that lacks an action (or forbids it): try the older name. */
const UNKNOWN_ACTION = /unknown command|action .* not allowed/i;

function shortText(text: string): string {
  return text.replace(/\s+/g, ' ').trim().slice(0, 200);
}

/**
 * A Nano node's RPC (JSON POST `{"action": …}`), as a LedgerBackend. Real
 * nodes' ways are handled: errors as HTTP 200 with `{"error": "…"}` (or a
 * number), "Account not found" for an unopened account, `"blocks": ""` for
 * none, 429/500 with a text body from providers, `pending` where `receivable`
 * is unknown. Thresholds are the network's fixed ones.
 */
export class NodeClient implements LedgerBackend {
  readonly kind = 'node' as const;
  /** The node's `version` answer (null when it gave none), asked once. */
  private version: Promise<Json | null> | undefined;

  constructor(private readonly options: NodeOptions) {}

  private where(action: string): string {
    return `${action} at ${redactUrl(this.options.url)}`;
  }

  /** One RPC call; `safe` reads are retried on transport failures, `process` never. */
  async rpc(action: string, params: Record<string, unknown>, safe = true): Promise<Json> {
    const body: Record<string, unknown> = { action, ...params };
    const headers: Record<string, string> = {};
    const auth = this.options.auth;
    if (auth?.scheme === 'bearer') headers.authorization = `Bearer ${auth.secret}`;
    if (auth?.scheme === 'basic') headers.authorization = `Basic ${auth.secret.includes(':') ? Buffer.from(auth.secret).toString('base64') : auth.secret}`;
    if (auth?.scheme === 'key') body.key = auth.secret;
    const { status, text } = await exchange({
      url: this.options.url,
      method: 'POST',
      headers,
      body,
      timeoutMs: this.options.timeoutMs ?? 15_000,
      ...(this.options.deadlineMs === undefined ? {} : { deadlineMs: this.options.deadlineMs }),
      retries: safe ? (this.options.retries ?? 2) : 0,
      party: 'node',
      where: this.where(action),
      hint: 'Check the node URL (NANOPAY_NODE_URL or nanopay config set node-url) and your network.',
    });
    return this.answer(action, status, text);
  }

  private answer(action: string, status: number, text: string): Json {
    const where = this.where(action);
    if (status === 429) throw new NanoPayError('RATE_LIMIT_EXCEEDED', `The node is rate-limiting ${where}`, { hint: 'Wait a moment, or use a node or provider key with a higher limit.' });
    if (status === 401 || status === 403) throw new NanoPayError('UNAUTHORIZED', `The node refused ${where} (HTTP ${status})`, { hint: 'Check node-auth and node-auth-scheme (or NANOPAY_NODE_AUTH).' });
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      const code = status >= 400 ? 'REQUEST_ERROR' : 'PARSE_ERROR';
      throw new NanoPayError(code, `The node answered ${where} with HTTP ${status} and no JSON${text.trim() === '' ? '' : `: "${shortText(text).slice(0, 80)}"`}`);
    }
    const body = asObject(parsed, where);
    if (body.error !== undefined && body.error !== null && body.error !== '') {
      const message = typeof body.error === 'string' ? body.error : `${String(body.error)}${typeof body.message === 'string' ? ` ${body.message}` : ''}`;
      throw this.refusal(action, shortText(message));
    }
    if (status >= 400) throw new NanoPayError('REQUEST_ERROR', `The node answered ${where} with HTTP ${status}`);
    return body;
  }

  private refusal(action: string, message: string): NanoPayError {
    if (/^account not found/i.test(message)) return new NanoPayError('ACCOUNT_NOT_FOUND', 'Account not found');
    if (/^block not found/i.test(message)) return new NanoPayError('BLOCK_NOT_FOUND', 'Block not found');
    if (/^bad account|invalid address/i.test(message)) return new NanoPayError('INVALID_ADDRESS', `The node refused the address: ${message}`);
    if (UNKNOWN_ACTION.test(message)) return new NanoPayError('UNKNOWN_ACTION', `The node does not offer ${action}: ${message}`);
    if (action === 'process') {
      const known = PROCESS_ERRORS.find(([pattern]) => pattern.test(message));
      if (known !== undefined) return new NanoPayError(known[1], `The node refused the block: ${known[2]} ("${message}")`);
    }
    return new NanoPayError('REQUEST_ERROR', `The node refused ${this.where(action)}: ${message}`);
  }

  /** `action`, or its older name on nodes and proxies that do not know it (`receivable` was `pending` before V23). */
  async rpcOrOlder(action: string, older: string, params: Record<string, unknown>): Promise<Json> {
    try {
      return await this.rpc(action, params);
    } catch (error) {
      if (!(error instanceof NanoPayError && error.code === 'UNKNOWN_ACTION')) throw error;
      return this.rpc(older, params);
    }
  }

  /**
   * `receivable` (or `pending`): at most 1000 blocks of at least `minimumRaw`
   * each (so that smaller ones, dust anyone can send cheaply, cannot push a
   * payment out of the answer).
   */
  async receivable(address: string, minimumRaw = 1n): Promise<Receivable[]> {
    const d = await this.rpcOrOlder('receivable', 'pending', { account: address, count: '1000', threshold: minimumRaw.toString(), source: 'true' });
    return parseReceivable(d.blocks, this.where('receivable'));
  }

  async pending(address: string): Promise<string[]> {
    return (await this.receivable(address)).map((r) => r.hash);
  }

  async accountInfo(address: string): Promise<RemoteAccountInfo | null> {
    const what = this.where('account_info');
    let d: Json;
    try {
      d = await this.rpc('account_info', { account: address, representative: 'true', receivable: 'true' });
    } catch (error) {
      if (error instanceof NanoPayError && error.code === 'ACCOUNT_NOT_FOUND') return null;
      throw error;
    }
    const version = optStr(d, 'account_version', what);
    return {
      frontier: hexField(d, 'frontier', 32, what).toUpperCase(),
      balanceRaw: bigIntField(d, 'balance', what),
      representative: str(d, 'representative', what),
      ...(version !== undefined && /^\d$/.test(version) ? { epoch: Number(version) } : {}),
    };
  }

  async balance(address: string): Promise<RemoteBalance> {
    const what = this.where('account_info');
    const account = normalizeAddress(address);
    try {
      const d = await this.rpc('account_info', { account, representative: 'true', receivable: 'true' });
      // Nodes before V23 call it "pending".
      const receivable = d.receivable !== undefined ? bigIntField(d, 'receivable', what) : d.pending !== undefined ? bigIntField(d, 'pending', what) : undefined;
      return { account, balanceRaw: bigIntField(d, 'balance', what), pendingRaw: receivable ?? sum(await this.receivable(account)) };
    } catch (error) {
      if (!(error instanceof NanoPayError && error.code === 'ACCOUNT_NOT_FOUND')) throw error;
      return { account, balanceRaw: 0n, pendingRaw: sum(await this.receivable(account)) };
    }
  }

  async blockInfo(hash: string): Promise<RemoteBlockInfo> {
    const what = this.where('block_info');
    const d = await this.rpc('block_info', { hash, json_block: 'true' });
    const successor = optStr(d, 'successor', what);
    const contents = ledgerBlock(d.contents, what);
    return {
      hash: hash.toUpperCase(),
      account: str(d, 'block_account', what),
      amountRaw: bigIntField(d, 'amount', what),
      balanceRaw: bigIntField(d, 'balance', what),
      // A legacy block has no subtype: its type says what it does.
      subtype: optStr(d, 'subtype', what) ?? contents.type,
      contents,
      confirmed: confirmedFlag(d, what),
      ...seenAtOf(d),
      ...(successor === undefined ? {} : { successor: hexField(d, 'successor', 32, what).toUpperCase() }),
    };
  }

  async publish(signed: StateBlock, subtype: Subtype, hash: string): Promise<void> {
    const d = await this.rpc('process', { json_block: 'true', subtype, block: signed }, false);
    const answered = optStr(d, 'hash', this.where('process'));
    if (answered?.toUpperCase() !== hash) throw new NanoPayError('INVALID_DATA', `The node answered process without confirming block ${hash}`);
  }

  /**
   * The network's fixed thresholds (active_difficulty is deprecated, and does not know a block's epoch), epoch
   * 1's included: the network's the node names in `version`, else the live ones.
   */
  async activeDifficulty(): Promise<RemoteDifficulty> {
    const network = await this.network();
    return { ...(network === 'dev' || network === 'beta' ? NETWORK_THRESHOLDS[network] : NETWORK_THRESHOLDS.live) };
  }

  /** The `network` field of the node's `version` ("live", "beta", "test", "dev"); null when it does not say. */
  async network(): Promise<string | null> {
    this.version ??= this.rpc('version', {}).catch(() => null);
    const name = (await this.version)?.network;
    return typeof name === 'string' && /^[a-z0-9-]{1,32}$/.test(name) ? name : null;
  }

  /** One attempt, no retry: a readiness probe says at once why the node cannot be reached. */
  async ping(): Promise<void> {
    await this.rpc('version', {}, false);
  }

  /**
   * One page of `account_history` (raw, newest first): `count` blocks from
   * `head` (the frontier when absent), and `previous`, where the next page
   * starts, while there are more. State blocks come with their signed fields
   * (rebuilt with `address` as their account); the rest is what the node says.
   */
  async accountHistory(address: string, page: { count: number; head?: string; offset?: number }): Promise<NodeHistoryPage> {
    const what = this.where('account_history');
    const d = await this.rpc('account_history', {
      account: address,
      count: String(page.count),
      raw: 'true',
      ...(page.head === undefined ? {} : { head: page.head }),
      ...(page.offset === undefined || page.offset === 0 ? {} : { offset: String(page.offset) }),
    });
    // Nodes answer "" for an empty history.
    const list = d.history === '' || d.history === undefined || d.history === null ? [] : d.history;
    if (!Array.isArray(list)) throw new NanoPayError('INVALID_DATA', `The node answered ${what} with an unexpected shape: "history" should be a list`);
    const entries = list.map((item) => historyEntry(address, asObject(item, what), what));
    const previous = optStr(d, 'previous', what);
    return { entries, ...(previous === undefined ? {} : { previous: hexField(d, 'previous', 32, what).toUpperCase() }) };
  }

  /** The node as one more work server; the caller validates the nonce like any other. */
  async workGenerate(root: string, threshold: string): Promise<string> {
    const d = await this.rpc('work_generate', { hash: root, difficulty: threshold }, false);
    return str(d, 'work', this.where('work_generate'));
  }

  paymentRequest(): never {
    throw new NanoPayError('INTERNAL_ERROR', 'Payment requests on a node are kept by nanopay (ops/node-requests)');
  }

  paymentStatus(): never {
    throw new NanoPayError('INTERNAL_ERROR', 'Payment requests on a node are kept by nanopay (ops/node-requests)');
  }

  credits(): never {
    throw serviceOnly('Credits');
  }

  topupOffer(): never {
    throw serviceOnly('Buying credits');
  }

  topupSubmit(): never {
    throw serviceOnly('Buying credits');
  }

  donationAddress(): never {
    throw serviceOnly('The donation address');
  }
}

/** A block of `account_history` as the node gives it with raw: the block's fields and the node's own summary of it. */
export interface NodeHistoryEntry {
  hash: string;
  /** The state block, rebuilt from the signed fields (null for a legacy block). */
  block: StateBlock | null;
  /** The node's words: send, receive, open, change, epoch (legacy blocks: their type). */
  subtype: string;
  /** The node's claim: the recipient of a send, the sender of a receive. */
  account?: string;
  /** The node's claim of the amount. */
  amountRaw?: bigint;
  localTimestamp?: number;
  height?: number;
  confirmed?: boolean;
}

export interface NodeHistoryPage {
  entries: NodeHistoryEntry[];
  previous?: string;
}

function historyEntry(address: string, e: Json, what: string): NodeHistoryEntry {
  const hash = hexField(e, 'hash', 32, what).toUpperCase();
  const isState = e.type === 'state';
  const block: StateBlock | null = isState
    ? stateBlock({ account: address, previous: e.previous, representative: e.representative, balance: e.balance, link: e.link, signature: e.signature, work: e.work }, what)
    : null;
  const subtype = optStr(e, isState ? 'subtype' : 'type', what) ?? 'unknown';
  const account = optStr(e, 'account', what);
  const timestamp = optStr(e, 'local_timestamp', what);
  const height = optStr(e, 'height', what);
  return {
    hash,
    block,
    subtype,
    ...(account === undefined ? {} : { account }),
    ...(typeof e.amount === 'string' && /^\d+$/.test(e.amount) ? { amountRaw: BigInt(e.amount) } : {}),
    ...(timestamp === undefined || !/^\d+$/.test(timestamp) ? {} : { localTimestamp: Number(timestamp) }),
    ...(height === undefined || !/^\d+$/.test(height) ? {} : { height: Number(height) }),
    ...(e.confirmed === undefined ? {} : { confirmed: confirmedFlag(e, what) }),
  };
}

function sum(list: Receivable[]): bigint {
  return list.reduce((total, r) => total + (r.amountRaw ?? 0n), 0n);
}

const HASH = /^[0-9a-fA-F]{64}$/;

/** `blocks` in any form nodes give it: "" or [] for none, hashes, hash → amount, or hash → {amount, source}. */
function parseReceivable(blocks: unknown, what: string): Receivable[] {
  if (blocks === undefined || blocks === null || blocks === '') return [];
  const wrong = (): never => {
    throw new NanoPayError('INVALID_DATA', `The node answered ${what} with an unexpected shape: "blocks" should list block hashes`);
  };
  if (Array.isArray(blocks)) return blocks.map((h) => (typeof h === 'string' && HASH.test(h) ? { hash: h.toUpperCase() } : wrong()));
  if (typeof blocks !== 'object') return wrong();
  return Object.entries(blocks as Json).map(([hash, value]) => {
    if (!HASH.test(hash)) wrong();
    const amount = typeof value === 'object' && value !== null ? (value as Json).amount : value;
    return { hash: hash.toUpperCase(), amountRaw: bigIntField({ amount }, 'amount', what) };
  });
}
