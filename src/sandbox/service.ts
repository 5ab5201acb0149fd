import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import { NanoPayError } from '../errors.js';
import {
  MAX_RAW,
  addressToPublicKey,
  buildSendBlock,
  deriveAccount,
  generateSeed,
  hashBlock,
  linkAsAccount,
  normalizeAddress,
  parseHash,
  rawToXno,
  signBlock,
  xnoToRaw,
  type Account,
} from '../nano/index.js';
import { DEV_THRESHOLDS, LIVE_THRESHOLDS, type Thresholds } from '../work/index.js';
import { Ledger, blockInfoOf, parseBlock, type LedgerBlock } from './ledger.js';
import { CREDIT_TIERS, isTransactionId, parseTier } from '../api/contract.js';
import { FREE_CREDITS, tierPriceRaw } from './pricing.js';
import type { SandboxState, TopupRecord } from './state.js';

/** Payment request amounts are raised by 1..MAX_OFFSET raw, far below anything a person would notice. */
const MAX_OFFSET = 999_999n;


function unknownTransaction(id: string): NanoPayError {
  return new NanoPayError('INVALID_TRANSACTION_ID', `Unknown transaction id "${id.slice(0, 80)}"`);
}

/**
 * The emulated service: API keys and credits, the ledger, payment requests,
 * top-ups and the faucet. Methods answer in the remote's field names.
 */
export class SandboxService {
  readonly ledger: Ledger;
  readonly thresholds: Thresholds;
  private readonly genesis: Account;
  private readonly serviceAccount: Account;

  constructor(private readonly state: SandboxState) {
    this.thresholds = state.thresholds === 'live' ? LIVE_THRESHOLDS : DEV_THRESHOLDS;
    this.genesis = deriveAccount({ privateKey: state.genesisKey });
    this.serviceAccount = deriveAccount({ privateKey: state.serviceKey });
    if (state.ledger.blocks.length === 0) {
      this.ledger = new Ledger(this.thresholds);
      this.ledger.createGenesis({ address: this.genesis.address, sign: (b) => signBlock(b, this.genesis) });
    } else {
      this.ledger = Ledger.restore(this.thresholds, state.ledger);
    }
  }

  static fresh(thresholds: 'dev' | 'live'): SandboxState {
    return {
      version: 1,
      thresholds,
      genesisKey: deriveAccount({ seed: generateSeed(), index: 0 }).privateKey,
      serviceKey: deriveAccount({ seed: generateSeed(), index: 0 }).privateKey,
      apiKeys: {},
      payments: {},
      topups: {},
      ledger: { blocks: [] },
    };
  }

  /** The network a node on this ledger would name: its thresholds are that network's. */
  get network(): 'dev' | 'live' {
    return this.state.thresholds;
  }

  snapshot(): SandboxState {
    return { ...this.state, ledger: this.ledger.snapshot() };
  }

  // --- API keys and credits -------------------------------------------------

  authenticate(apiKey: string | undefined): string {
    if (apiKey === undefined || apiKey === '') {
      throw new NanoPayError('MISSING_API_KEY', 'An API key is required: send "Authorization: Bearer <key>" or "X-API-Key: <key>"');
    }
    if (this.state.apiKeys[apiKey] === undefined) throw new NanoPayError('INVALID_API_KEY', 'The API key is not valid');
    return apiKey;
  }

  requireCredits(apiKey: string, cost: number): void {
    const account = this.state.apiKeys[apiKey];
    if (account !== undefined && account.credits < cost) {
      throw new NanoPayError(
        'INSUFFICIENT_CREDITS',
        `This API key has ${account.credits} credits and the call costs ${cost}. Top up (free of credits): GET /credits/topup/{tier} for the price, then POST /credits/topup with the paying send block.`,
      );
    }
  }

  charge(apiKey: string, cost: number): void {
    const account = this.state.apiKeys[apiKey];
    if (account !== undefined) account.credits -= cost;
  }

  /** Test helper of the sandbox: set a key's credits (used to exercise exhaustion). */
  setCredits(apiKey: string, credits: number): void {
    const account = this.state.apiKeys[this.authenticate(apiKey)];
    if (account !== undefined) account.credits = credits;
  }

  createWallet(): Record<string, string> {
    const seed = generateSeed();
    const account = deriveAccount({ seed, index: 0 });
    const apiKey = randomBytes(24).toString('base64url');
    this.state.apiKeys[apiKey] = { credits: FREE_CREDITS, createdAt: Date.now() };
    return {
      address: account.address,
      public_key: account.publicKey,
      private_key: account.privateKey,
      'Wallet Private Seed': seed,
      api_key: apiKey,
    };
  }

  credits(apiKey: string, pricesAs: 'string' | 'number'): Record<string, string | number> {
    const out: Record<string, string | number> = { credits: this.state.apiKeys[apiKey]?.credits ?? 0 };
    for (const tier of CREDIT_TIERS) {
      const price = rawToXno(tierPriceRaw(tier));
      out[`current_credits_price_${tier}`] = pricesAs === 'string' ? price : Number(price);
    }
    return out;
  }

  // --- ledger reads ---------------------------------------------------------

  balance(address: string): Record<string, string> {
    const account = this.ledger.account(address);
    const pending = this.ledger.pendingFor(address).reduce((sum, r) => sum + r.amount, 0n);
    const balance = (account?.balance ?? 0n).toString();
    return { account: normalizeAddress(address), balance, balance_raw: balance, pending: pending.toString(), pending_raw: pending.toString() };
  }

  pending(address: string): { blocks: Record<string, string[]> } {
    return { blocks: { [normalizeAddress(address)]: this.ledger.pendingFor(address).map((r) => r.hash) } };
  }

  accountInfo(address: string): Record<string, string> {
    const account = this.ledger.account(address);
    if (account === undefined) throw new NanoPayError('ACCOUNT_NOT_FOUND', 'Account not found');
    return {
      frontier: account.frontier,
      open_block: account.openBlock,
      balance: account.balance.toString(),
      representative: account.representative,
      block_count: String(account.height),
      difficulty_send: this.thresholds.send,
      difficulty_receive: this.thresholds.receive,
    };
  }

  blockInfo(hash: string): Record<string, unknown> {
    const stored = this.ledger.blocks.get(parseHash(hash, 'Block hash'));
    if (stored === undefined) throw new NanoPayError('BLOCK_NOT_FOUND', 'Block not found');
    return blockInfoOf(stored, { ...stored.block, link_as_account: linkAsAccount(stored.block.link) });
  }

  activeDifficulty(): Record<string, string> {
    return {
      network_minimum: this.thresholds.send,
      network_receive_minimum: this.thresholds.receive,
      network_current: this.thresholds.send,
      network_receive_current: this.thresholds.receive,
      multiplier: '1',
    };
  }

  // --- ledger writes --------------------------------------------------------

  publish(block: unknown, subtype?: string): LedgerBlock {
    const stored = this.ledger.process(block, subtype === undefined ? {} : { subtype });
    this.matchPayment(stored);
    return stored;
  }

  /** The faucet: a send from genesis, signed by the sandbox and exempt from work (see ProcessOptions.skipWork). */
  fund(address: string, amountXno: string): Record<string, string> {
    const to = normalizeAddress(address);
    const amount = xnoToRaw(amountXno);
    const head = this.ledger.account(this.genesis.address);
    if (head === undefined) throw new NanoPayError('INTERNAL_ERROR', 'The sandbox has no genesis account');
    const block = buildSendBlock(
      { address: this.genesis.address, frontier: head.frontier, balance: head.balance, representative: head.representative },
      { to, amount },
    );
    const signed = { ...block, signature: signBlock(block, this.genesis), work: '0'.repeat(16) };
    const stored = this.ledger.process(signed, { skipWork: true });
    this.matchPayment(stored);
    return { hash: stored.hash, amount: rawToXno(amount), amount_raw: amount.toString() };
  }

  // --- payment requests -----------------------------------------------------

  paymentRequest(receiveAddress: string, amountXno: string, redirectUrl: string): Record<string, string> {
    const address = normalizeAddress(receiveAddress);
    const base = xnoToRaw(amountXno);
    if (base <= 0n) throw new NanoPayError('INVALID_NUMBER_FORMAT', 'The amount must be greater than zero');
    if (base + MAX_OFFSET > MAX_RAW) throw new NanoPayError('AMOUNT_TOO_LARGE', 'The amount leaves no room for the matching offset below 2^128-1 raw');
    const open = new Set(
      Object.values(this.state.payments)
        .filter((p) => p.paidBy === null && p.receiveAddress === address)
        .map((p) => p.amountRaw),
    );
    // A small raw offset (1..MAX_OFFSET) makes the amount unique among this address's open requests.
    let amount: bigint;
    do amount = base + 1n + BigInt(randomInt(Number(MAX_OFFSET)));
    while (open.has(amount.toString()));
    const id = randomUUID();
    this.state.payments[id] = { receiveAddress: address, amountRaw: amount.toString(), redirectUrl, createdAt: Date.now(), paidBy: null };
    return { receive_address: address, amount: rawToXno(amount), transaction_id: id };
  }

  paymentStatus(id: string): Record<string, string> {
    const request = isTransactionId(id) ? this.state.payments[id.toLowerCase()] : undefined;
    if (request === undefined) throw unknownTransaction(id);
    const paid = request.paidBy !== null;
    return {
      success: 'true',
      message: paid
        ? `The transaction has been paid (block ${request.paidBy}). Receive the pending block to complete the process.`
        : `Waiting for exactly ${rawToXno(BigInt(request.amountRaw))} XNO to ${request.receiveAddress}.`,
      amount: rawToXno(BigInt(request.amountRaw)),
      transaction_id: id.toLowerCase(),
      is_paid: paid ? 'true' : 'false',
      // Beyond the spec's fields, for checkout pages: which address to show, and the paying block.
      receive_address: request.receiveAddress,
      ...(request.paidBy === null ? {} : { block_hash: request.paidBy }),
    };
  }

  /** A send of exactly the requested amount to the requested address pays the oldest such request. */
  private matchPayment(stored: LedgerBlock): void {
    if (stored.subtype !== 'send') return;
    const destination = linkAsAccount(stored.block.link);
    const match = Object.values(this.state.payments)
      .filter((p) => p.paidBy === null && p.receiveAddress === destination && p.amountRaw === stored.amount.toString())
      .sort((a, b) => a.createdAt - b.createdAt)[0];
    if (match !== undefined) match.paidBy = stored.hash;
  }

  // --- top-ups and donations ------------------------------------------------

  topupOffer(apiKey: string, tierText: string): Record<string, string> {
    const tier = parseTier(tierText);
    const id = randomUUID();
    const amount = tierPriceRaw(tier);
    this.state.topups[id] = {
      tier,
      apiKey,
      paymentAddress: this.serviceAccount.address,
      amountRaw: amount.toString(),
      ledgerSize: this.ledger.order.length,
      paidBy: null,
      newBalance: null,
    };
    return { payment_address: this.serviceAccount.address, nano_amount: rawToXno(amount), transaction_id: id };
  }

  /**
   * Publishes the paying block and adds the credits, once. A block already in
   * the ledger (the payment landed, the answer was lost) still credits once if
   * it arrived after the offer and paid no other top-up; a repeat after that
   * returns the same result. A block that does not pay the offer exactly is
   * refused before anything is published.
   */
  topupSubmit(apiKey: string, transactionId: string, input: unknown, subtype: string | undefined): Record<string, number> {
    const topup = this.state.topups[transactionId];
    if (topup === undefined || topup.apiKey !== apiKey) throw unknownTransaction(transactionId);
    if (topup.paidBy !== null) return { topped_up_credits: topup.tier, new_credits_balance: topup.newBalance ?? 0 };
    const account = this.state.apiKeys[apiKey];
    if (account === undefined) throw new NanoPayError('INVALID_API_KEY', 'The API key is not valid');

    const landed = this.ledger.blocks.get(hashBlock(parseBlock(input)));
    let payment: LedgerBlock;
    if (landed !== undefined) {
      if (this.ledger.order.indexOf(landed.hash) < topup.ledgerSize || Object.values(this.state.topups).some((t) => t.paidBy === landed.hash)) {
        throw new NanoPayError('PAYMENT_MISMATCH', `Block ${landed.hash} is already in the ledger and did not pay this top-up`);
      }
      this.checkPays(topup, landed);
      payment = landed;
    } else {
      const verified = this.ledger.verify(input, subtype === undefined ? {} : { subtype });
      this.checkPays(topup, verified.stored);
      this.ledger.apply(verified);
      this.matchPayment(verified.stored);
      payment = verified.stored;
    }
    account.credits += topup.tier;
    topup.paidBy = payment.hash;
    topup.newBalance = account.credits;
    return { topped_up_credits: topup.tier, new_credits_balance: account.credits };
  }

  private checkPays(topup: TopupRecord, block: LedgerBlock): void {
    if (block.subtype !== 'send' || block.block.link !== addressToPublicKey(topup.paymentAddress) || block.amount !== BigInt(topup.amountRaw)) {
      throw new NanoPayError(
        'PAYMENT_MISMATCH',
        `The block must send exactly ${rawToXno(BigInt(topup.amountRaw))} XNO to ${topup.paymentAddress}; nothing was published`,
      );
    }
  }

  donationAddress(): { address: string } {
    return { address: this.serviceAccount.address };
  }

  /** The whole ledger, for the demo and for people poking at the sandbox. */
  dump(): Record<string, unknown> {
    return {
      accounts: [...this.ledger.accounts.values()].map((a) => ({
        address: a.address,
        balance: a.balance.toString(),
        frontier: a.frontier,
        height: a.height,
        representative: a.representative,
      })),
      blocks: this.ledger.order.map((hash) => {
        const s = this.ledger.blocks.get(hash) as LedgerBlock;
        return { hash, account: s.account, subtype: s.subtype, amount: s.amount.toString(), balance: s.balance.toString(), height: s.height, previous: s.block.previous, link: s.block.link };
      }),
      receivables: [...this.ledger.receivables.values()].filter((r) => !r.received).map((r) => ({ hash: r.hash, destination: linkAsAccount(r.destination), amount: r.amount.toString() })),
      genesis: this.genesis.address,
      service: this.serviceAccount.address,
    };
  }
}
