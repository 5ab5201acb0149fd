import { NanoPayError } from '../errors.js';
import type { LedgerBlock, StateBlock, Subtype } from '../nano/block.js';
import { CREDIT_TIERS, type CreditTier } from './contract.js';
import { call, markedCall, type CallOptions, type HttpOptions } from './http.js';
import type { LedgerBackend } from './backend.js';
import { DEV_THRESHOLDS } from '../work/index.js';
import { asObject, bigIntField, bool, hexField, ledgerBlock, optStr, str, type Json } from './shape.js';

export interface RemoteWallet {
  address: string;
  publicKey: string;
  privateKey: string;
  seed: string;
  apiKey: string;
}

export interface RemoteBalance {
  account: string;
  balanceRaw: bigint;
  pendingRaw: bigint;
}

export interface RemoteAccountInfo {
  frontier: string;
  balanceRaw: bigint;
  representative: string;
  /** The thresholds the service wants, when it reports them. */
  difficultySend?: string;
  difficultyReceive?: string;
  /** The account's epoch, when the backend says (a node's account_version): below 2, its blocks need epoch 1's work. */
  epoch?: number;
}

export interface RemoteBlockInfo {
  hash: string;
  account: string;
  amountRaw: bigint;
  balanceRaw: bigint;
  subtype: string;
  /** The block itself: a state block, or a legacy one (a ledger's first blocks). */
  contents: LedgerBlock;
  /** The next block of the account, when the service says (64 zeros for none). */
  successor?: string;
  /** Whether the network confirmed the block, as the backend says ("confirmed"); false when it does not say. */
  confirmed: boolean;
  /** When the backend's node first saw the block (its local_timestamp), in ms; absent when it does not say (or says 0). */
  seenAt?: number;
}

export interface RemoteDifficulty {
  send: string;
  receive: string;
  /** A node's: what blocks of accounts not yet at epoch 2 need. */
  epoch1?: string;
}

export interface RemotePaymentRequest {
  transactionId: string;
  receiveAddress: string;
  amount: string;
}

export interface RemotePaymentStatus {
  transactionId: string;
  isPaid: boolean;
  message: string;
  amount?: string;
  /** Optional extras the spec does not show (the sandbox reports them): the request's address, the paying block, an expiry. */
  receiveAddress?: string;
  blockHash?: string;
  /** Milliseconds since the epoch; the service may send ISO 8601 or Unix seconds. */
  expiresAt?: number;
}

export interface RemoteTopupOffer {
  paymentAddress: string;
  amountXno: string;
  transactionId: string;
}


export interface RemoteCredits {
  credits: number;
  prices: Record<CreditTier, string>;
}

/** The node's answer for an account with no block yet; any other failure stays a failure. */
function isAccountNotFound(error: unknown): boolean {
  return error instanceof NanoPayError && (error.code === 'ACCOUNT_NOT_FOUND' || /account not found/i.test(error.message));
}

/** A block's "confirmed" flag (a boolean or "true"/"false"); a backend that does not say has not confirmed it to us. */
export function confirmedFlag(d: Json, what: string): boolean {
  return d.confirmed === undefined || d.confirmed === null ? false : bool(d, 'confirmed', what);
}

/** A block's `local_timestamp` (Unix seconds as text or a number) in ms; a missing, zero or odd one is not known, not a failure. */
export function seenAtOf(d: Json): { seenAt?: number } {
  const v = d.local_timestamp;
  const seconds = typeof v === 'number' ? v : typeof v === 'string' && /^\d{1,12}$/.test(v) ? Number(v) : 0;
  return seconds > 0 ? { seenAt: seconds * 1000 } : {};
}

/** `expires_at` as ISO 8601 text or Unix seconds; absent when the service has no expiry. */
function expiryOf(d: Json, what: string): number | undefined {
  const v = d.expires_at;
  if (v === undefined || v === null) return undefined;
  const ms = typeof v === 'number' ? v * 1000 : typeof v === 'string' ? Date.parse(v) : NaN;
  if (!Number.isFinite(ms)) throw new NanoPayError('INVALID_DATA', `The service answered ${what} with an unexpected shape: "expires_at" should be a date`);
  return ms;
}

/** The Protected API. One form per endpoint: the spec's documented ones. */
export class ApiClient implements LedgerBackend {
  readonly kind = 'service' as const;

  constructor(private readonly options: HttpOptions) {}

  get baseUrl(): string {
    return this.options.baseUrl;
  }

  withApiKey(apiKey: string): ApiClient {
    return new ApiClient({ ...this.options, apiKey });
  }

  async createWallet(): Promise<RemoteWallet> {
    const what = 'POST /wallet/create';
    const d = await call(this.options, { method: 'POST', path: '/wallet/create', safe: false, auth: false });
    return {
      address: str(d, 'address', what),
      publicKey: hexField(d, 'public_key', 32, what),
      privateKey: hexField(d, 'private_key', 32, what),
      seed: hexField(d, 'Wallet Private Seed', 32, what),
      apiKey: str(d, 'api_key', what),
    };
  }

  async balance(address: string): Promise<RemoteBalance> {
    const what = 'GET /wallet/balance';
    const d = await call(this.options, { method: 'GET', path: `/wallet/balance/${encodeURIComponent(address)}`, safe: true });
    return { account: str(d, 'account', what), balanceRaw: bigIntField(d, 'balance_raw', what), pendingRaw: bigIntField(d, 'pending_raw', what) };
  }

  /** Hashes of blocks waiting to be received by `address`. */
  async pending(address: string): Promise<string[]> {
    const what = 'POST /wallet/pending';
    const d = await call(this.options, { method: 'POST', path: '/wallet/pending', body: { address }, safe: true });
    const blocks = asObject(d.blocks ?? {}, what);
    const list = blocks[address] ?? Object.values(blocks)[0] ?? [];
    if (!Array.isArray(list) || list.some((h) => typeof h !== 'string' || !/^[0-9a-fA-F]{64}$/.test(h))) {
      throw new NanoPayError('INVALID_DATA', `The service answered ${what} with an unexpected shape: "blocks" should map to hashes`);
    }
    return (list as string[]).map((h) => h.toUpperCase());
  }

  /** null for an account that has no block yet (the node says "Account not found"). */
  async accountInfo(address: string): Promise<RemoteAccountInfo | null> {
    const what = 'POST /account/info';
    let d: Json;
    try {
      d = await call(this.options, { method: 'POST', path: '/account/info', body: { address }, safe: true });
    } catch (error) {
      if (isAccountNotFound(error)) return null;
      throw error;
    }
    const difficultySend = optStr(d, 'difficulty_send', what);
    const difficultyReceive = optStr(d, 'difficulty_receive', what);
    return {
      frontier: hexField(d, 'frontier', 32, what).toUpperCase(),
      balanceRaw: bigIntField(d, 'balance', what),
      representative: str(d, 'representative', what),
      ...(difficultySend === undefined ? {} : { difficultySend }),
      ...(difficultyReceive === undefined ? {} : { difficultyReceive }),
    };
  }

  async blockInfo(hash: string): Promise<RemoteBlockInfo> {
    const what = 'POST /block/info';
    const d = await call(this.options, { method: 'POST', path: '/block/info', body: { hash }, safe: true });
    const successor = d.successor === undefined || d.successor === null || d.successor === '' ? undefined : hexField(d, 'successor', 32, what).toUpperCase();
    return {
      ...(successor === undefined ? {} : { successor }),
      hash: hash.toUpperCase(),
      account: str(d, 'block_account', what),
      amountRaw: bigIntField(d, 'amount', what),
      balanceRaw: bigIntField(d, 'balance', what),
      subtype: str(d, 'subtype', what),
      contents: ledgerBlock(d.contents, what),
      confirmed: confirmedFlag(d, what),
      ...seenAtOf(d),
    };
  }

  /** Publishes; the answer must name the block (`{hash}`) or at least say `success`. */
  async publish(signed: StateBlock, subtype: Subtype, hash: string): Promise<void> {
    const what = 'POST /block/publish';
    const d = await call(this.options, { method: 'POST', path: '/block/publish', body: { subtype, block: signed }, safe: false });
    const answered = optStr(d, 'hash', what);
    if (answered !== undefined ? answered.toUpperCase() !== hash : !(d.success === true || d.success === 'true')) {
      throw new NanoPayError('INVALID_DATA', `The service answered ${what} without confirming block ${hash}`);
    }
  }

  /** The thresholds the network currently asks for, or null when the service does not say. */
  async activeDifficulty(): Promise<RemoteDifficulty | null> {
    return (await this.difficulty()).thresholds;
  }

  private async difficulty(): Promise<{ thresholds: RemoteDifficulty | null; sandbox: boolean }> {
    const what = 'GET /network/active-difficulty';
    const { data: d, sandbox } = await markedCall(this.options, { method: 'GET', path: '/network/active-difficulty', safe: true });
    const send = optStr(d, 'network_current', what) ?? optStr(d, 'network_minimum', what);
    const receive = optStr(d, 'network_receive_current', what) ?? optStr(d, 'network_receive_minimum', what);
    return { thresholds: send === undefined || receive === undefined ? null : { send, receive }, sandbox };
  }

  /**
   * The service settles on the live network. The sandbox (its answers marked
   * Nanopay-Sandbox: 1) never does: it is "dev" at the dev thresholds, "test"
   * at the live ones, as its node's `version` says.
   */
  async network(): Promise<string> {
    const { thresholds, sandbox } = await this.difficulty();
    if (!sandbox) return 'live';
    return thresholds?.send === DEV_THRESHOLDS.send ? 'dev' : 'test';
  }

  async paymentRequest(input: { receiveAddress: string; amount: string; redirectUrl?: string }): Promise<RemotePaymentRequest> {
    const what = 'POST /payment/request';
    const d = await call(this.options, {
      method: 'POST',
      path: '/payment/request',
      body: { receive_address: input.receiveAddress, amount: input.amount, redirect_url: input.redirectUrl ?? '' },
      safe: false,
    });
    return { transactionId: str(d, 'transaction_id', what), receiveAddress: str(d, 'receive_address', what), amount: str(d, 'amount', what) };
  }

  async paymentStatus(transactionId: string, options: Pick<CallOptions, 'signal' | 'once'> = {}): Promise<RemotePaymentStatus> {
    const what = 'GET /payment/status';
    const d = await call(this.options, { method: 'GET', path: `/payment/status/${encodeURIComponent(transactionId)}`, safe: true, ...options });
    const amount = optStr(d, 'amount', what);
    const receiveAddress = optStr(d, 'receive_address', what);
    const blockHash = d.block_hash === undefined || d.block_hash === null ? undefined : hexField(d, 'block_hash', 32, what).toUpperCase();
    const expiresAt = expiryOf(d, what);
    return {
      transactionId: optStr(d, 'transaction_id', what) ?? transactionId,
      isPaid: bool(d, 'is_paid', what),
      message: optStr(d, 'message', what) ?? '',
      ...(amount === undefined ? {} : { amount }),
      ...(receiveAddress === undefined ? {} : { receiveAddress }),
      ...(blockHash === undefined ? {} : { blockHash }),
      ...(expiresAt === undefined ? {} : { expiresAt }),
    };
  }

  async credits(): Promise<RemoteCredits> {
    const what = 'GET /credits/info';
    const d = await call(this.options, { method: 'GET', path: '/credits/info', safe: true });
    const credits = bigIntField(d, 'credits', what);
    const prices = Object.fromEntries(CREDIT_TIERS.map((n) => [n, str(d, `current_credits_price_${n}`, what)])) as Record<CreditTier, string>;
    return { credits: Number(credits), prices };
  }

  /** Reading the credits is free on the service (a status read would cost one); one attempt, no retry: a readiness probe says at once why the service cannot be reached. */
  async ping(): Promise<void> {
    await call(this.options, { method: 'GET', path: '/credits/info', safe: false });
  }

  async topupOffer(tier: CreditTier): Promise<RemoteTopupOffer> {
    const what = 'GET /credits/topup';
    const d = await call(this.options, { method: 'GET', path: `/credits/topup/${tier}`, safe: false });
    return { paymentAddress: str(d, 'payment_address', what), amountXno: str(d, 'nano_amount', what), transactionId: str(d, 'transaction_id', what) };
  }

  async topupSubmit(signed: StateBlock, transactionId: string): Promise<{ toppedUp: number; newBalance: number }> {
    const what = 'POST /credits/topup';
    const d = await call(this.options, {
      method: 'POST',
      path: '/credits/topup',
      body: { subtype: 'send', block: signed, transaction_id: transactionId },
      safe: false,
    });
    return { toppedUp: Number(bigIntField(d, 'topped_up_credits', what)), newBalance: Number(bigIntField(d, 'new_credits_balance', what)) };
  }

  async donationAddress(): Promise<string> {
    const d = await call(this.options, { method: 'GET', path: '/donate/address', safe: true });
    return str(d, 'address', 'GET /donate/address');
  }

  /** The sandbox's faucet; a real service has none. */
  async fund(address: string, amountXno: string): Promise<{ hash: string; amountRaw: bigint }> {
    const what = 'POST /sandbox/fund';
    const d = await call(this.options, { method: 'POST', path: '/sandbox/fund', body: { address, amount: amountXno }, safe: false, auth: false });
    return { hash: hexField(d, 'hash', 32, what).toUpperCase(), amountRaw: bigIntField(d, 'amount_raw', what) };
  }
}
