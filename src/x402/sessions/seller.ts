import { MAX_RAW, addressToPublicKey, normalizeAddress } from '../../nano/index.js';
import type { NanoSettler } from '../facilitator.js';
import { X402Refusal, chequeOf, nanoRequirement } from '../nano-exact.js';
import { X402_ASSET, X402_VERSION, isObject, type PaymentRequirements, type SettleResponse } from '../protocol.js';
import type { SellerSession, SessionBook } from './book.js';
import { SESSION_SCHEME, closeMessage, openMessage, receiptMessage, verifyAccountSignature, verifySessionSignature, voucherMessage, type Voucher } from './wire.js';

/** What a seller offers: the least deposit, and how long a session lives (in all, and without a call). */
export interface SessionTerms {
  minDepositRaw: bigint;
  idleSeconds: number;
  expirySeconds: number;
}

export interface SessionSellerOptions {
  payTo: string;
  settler: NanoSettler;
  book: SessionBook;
  terms: SessionTerms;
  /** The send threshold deposits need, stated in the requirement. */
  workThreshold: string;
  /** Sends `raw` back to the session's payer, once per session whatever the retries (an idempotent send); the block's hash. */
  refund: (session: SellerSession, raw: bigint) => Promise<string | null>;
  /** The seller's Nano account key's signature of a receipt message. */
  signReceipt: (message: Uint8Array) => Promise<string>;
  now?: () => number;
  log?: (message: string, fields: Record<string, string | number | null>) => void;
}

/** A call admitted on a voucher: charged once it is served (charge), or let go (release). */
export interface AdmittedCall {
  session: SellerSession;
  voucher: Voucher;
  /** What the voucher lets this call cost at most: its `spent` less what was charged before. */
  ceilingRaw: bigint;
}

/** The signed close of a session: what the buyer and the seller keep. */
export interface SessionReceipt {
  scheme: typeof SESSION_SCHEME;
  network: string;
  session: string;
  payer: string;
  pay_to: string;
  session_key: string;
  open_signature: string;
  deposits: { hash: string; amount_raw: string }[];
  deposit_raw: string;
  spent_raw: string;
  refund_raw: string;
  refund_block: string | null;
  final_voucher: Voucher | null;
  reason: string;
  closed_at: string;
  seller_signature: string;
}

const refuse = (reason: string, message: string): never => {
  throw new X402Refusal(reason, message);
};
const HEX64 = /^[0-9A-Fa-f]{64}$/;
const HEX128 = /^[0-9A-Fa-f]{128}$/;
const RAW = /^\d{1,39}$/;

const sumDeposits = (s: SellerSession): bigint => s.deposits.reduce((sum, d) => sum + BigInt(d.raw), 0n);

/** A voucher in the payload, every field well formed. */
function parseVoucher(payload: Record<string, unknown>): Voucher {
  const { session, counter, spent, request, signature } = payload;
  if (typeof session !== 'string' || !HEX64.test(session)) refuse('invalid_payload', 'payload.session must be the 64-hex session id');
  if (typeof counter !== 'number' || !Number.isSafeInteger(counter) || counter < 1) refuse('invalid_payload', 'payload.counter must be a whole number from 1');
  if (typeof spent !== 'string' || !RAW.test(spent) || BigInt(spent) > MAX_RAW) refuse('invalid_payload', 'payload.spent must be decimal raw');
  if (typeof request !== 'string' || !HEX64.test(request)) refuse('invalid_payload', 'payload.request must be the 64-hex request digest');
  if (typeof signature !== 'string' || !HEX128.test(signature)) refuse('invalid_payload', 'payload.signature must be 128 hex');
  return { session: (session as string).toUpperCase(), counter: counter as number, spent: spent as string, request: (request as string).toUpperCase(), signature: (signature as string).toUpperCase() };
}

/**
 * The seller's side of `nano-session`: opens a session on a deposit settled
 * as an `exact` payment is, admits each call on a voucher (checked in
 * memory: a signature check and a few comparisons), charges it durably
 * before the answer leaves, and refunds what was not spent when the buyer
 * closes, or the session sits idle or expires. Every change is written to
 * the book before it is answered, and a close cut short resumes to the same
 * refund (the refund is an idempotent send keyed by the session).
 */
export class SessionSeller {
  private readonly payTo: string;
  private readonly now: () => number;
  /** Sessions with a call under way: one at a time each, so a voucher's ceiling is exact. */
  private readonly busy = new Set<string>();
  /** Closes under way, so a sweep and a buyer's close do not refund twice in one process. */
  private readonly closing = new Map<string, Promise<SellerSession>>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: SessionSellerOptions) {
    this.payTo = normalizeAddress(options.payTo);
    this.now = options.now ?? Date.now;
  }

  /** The requirement offered beside `exact`: the price per call (a metered route's ceiling), and where sessions open. */
  async requirement(priceRaw: bigint, sessionsUrl: string, unitRaw?: bigint): Promise<PaymentRequirements> {
    const { terms } = this.options;
    const minDeposit = terms.minDepositRaw > priceRaw ? terms.minDepositRaw : priceRaw;
    return {
      scheme: SESSION_SCHEME,
      network: await this.options.settler.network(),
      amount: priceRaw.toString(),
      asset: X402_ASSET,
      payTo: this.payTo,
      maxTimeoutSeconds: 300,
      extra: {
        sessions: sessionsUrl,
        minDeposit: minDeposit.toString(),
        idleSeconds: terms.idleSeconds,
        expirySeconds: terms.expirySeconds,
        workThreshold: this.options.workThreshold,
        ...(unitRaw === undefined ? {} : { unit: unitRaw.toString() }),
      },
    };
  }

  /** What a session's state says to the buyer (GET, and every opening answer). */
  view(s: SellerSession): Record<string, unknown> {
    const deposit = sumDeposits(s);
    return {
      session: s.id,
      state: s.state,
      network: s.network,
      payer: s.payer,
      pay_to: s.payTo,
      deposit_raw: deposit.toString(),
      spent_raw: s.charged,
      remaining_raw: (deposit - BigInt(s.charged)).toString(),
      counter: s.counter,
      // The highest voucher taken: the proof of spent_raw, which a buyer that lost count checks with its session key.
      voucher: s.voucher ?? null,
      expires_at: s.expiresAt,
      idle_seconds: s.idleSeconds,
      ...(s.refund === undefined ? {} : { refund_raw: s.refund.raw, refund_block: s.refund.hash }),
    };
  }

  get(id: string): SellerSession | undefined {
    return this.options.book.get(id.toUpperCase());
  }

  /**
   * Opens a session (no `id`) or tops one up on a deposit: the buyer's signed
   * send to payTo, verified and settled as an `exact` payment of that amount.
   * The session's id is the opening block's hash, so presenting the same
   * opening again (a buyer that lost the answer) gets the same session.
   */
  async deposit(body: Record<string, unknown>, id?: string): Promise<{ session: SellerSession; settlement: SettleResponse }> {
    const network = await this.options.settler.network();
    const payload = isObject(body.payload) ? body.payload : refuse('invalid_payload', 'The body must be an x402 payment payload with "payload"');
    if (body.x402Version !== X402_VERSION) refuse('invalid_x402_version', 'Only x402 version 2 is supported');
    const cheque = chequeOf(payload);
    const raw = typeof payload.deposit === 'string' && RAW.test(payload.deposit) ? BigInt(payload.deposit) : refuse('invalid_payload', 'payload.deposit must be the deposit in decimal raw');
    const existing = this.get(id ?? cheque.hash);
    if (id !== undefined && existing === undefined) refuse('session_unknown', `No session ${id}`);
    if (existing !== undefined && existing.deposits.some((d) => d.hash === cheque.hash)) return { session: existing, settlement: this.depositSettled(existing, cheque.hash, network) };
    const resuming = existing?.pending?.some((d) => d.hash === cheque.hash) === true;
    if (existing !== undefined && existing.state !== 'open' && !resuming) refuse('session_closed', `The session ${existing.id} is ${existing.state}`);
    if (existing !== undefined && cheque.payer !== existing.payer) refuse('invalid_payload', 'A top-up must come from the session payer');
    if (cheque.block.link !== addressToPublicKey(this.payTo)) refuse('invalid_recipient', `The deposit does not pay ${this.payTo}`);
    const now = new Date(this.now()).toISOString();
    let marked = existing;
    if (existing === undefined) {
      if (raw < this.options.terms.minDepositRaw) refuse('invalid_amount', `The least deposit is ${this.options.terms.minDepositRaw} raw`);
      const sessionKey = typeof payload.sessionKey === 'string' && HEX64.test(payload.sessionKey) ? payload.sessionKey.toUpperCase() : refuse('invalid_payload', 'payload.sessionKey must be 64 hex');
      const openSignature = typeof payload.signature === 'string' ? payload.signature.toUpperCase() : '';
      if (!verifyAccountSignature(cheque.payer, openMessage(network, this.payTo, cheque.hash, sessionKey), openSignature)) {
        refuse('invalid_signature', "payload.signature is not the payer account's signature of the opening");
      }
      marked = {
        id: cheque.hash,
        network,
        payer: cheque.payer,
        payTo: this.payTo,
        sessionKey,
        openSignature,
        deposits: [],
        charged: '0',
        counter: 0,
        openedAt: now,
        lastUsedAt: now,
        expiresAt: new Date(this.now() + this.options.terms.expirySeconds * 1000).toISOString(),
        idleSeconds: this.options.terms.idleSeconds,
        state: 'opening',
      };
    }
    const sessionId = (marked as SellerSession).id;
    // No call, close or other deposit of the session meanwhile: a close counts every deposit settled.
    if (this.busy.has(sessionId)) refuse('session_busy', `The session ${sessionId} has a call or deposit under way`);
    this.busy.add(sessionId);
    try {
      // Marked before settling: a deposit the ledger took while the seller died is counted when it is presented again.
      if (!resuming) await this.options.book.put({ ...(marked as SellerSession), pending: [...(marked?.pending ?? []), { hash: cheque.hash, raw: raw.toString() }] });
      const requirement = nanoRequirement(this.payTo, raw, network, this.options.workThreshold);
      const settlement = await this.options.settler.settle({ x402Version: X402_VERSION, accepted: requirement, payload: { block: cheque.block } }, requirement);
      const settled = settlement.success || (await this.confirmedOnLedger(cheque.hash));
      if (!settled) {
        await this.settledPending(sessionId, cheque.hash, false);
        return refuse(settlement.errorReason ?? 'settlement_failed', settlement.errorMessage ?? 'The deposit was not settled');
      }
      const session = await this.settledPending(sessionId, cheque.hash, true);
      this.options.log?.(`session ${session.id}: deposit ${raw} raw from ${session.payer}`, { event: 'session_deposit', session: session.id, amount_raw: raw.toString(), block: cheque.hash });
      return { session, settlement: this.depositSettled(session, cheque.hash, network) };
    } finally {
      this.busy.delete(sessionId);
    }
  }

  /** A pending deposit's outcome recorded: counted into the session (opening it), or dropped (an opening that failed closes with nothing to refund). */
  private async settledPending(id: string, hash: string, settled: boolean): Promise<SellerSession> {
    const current = this.get(id) as SellerSession;
    const deposit = (current.pending ?? []).find((d) => d.hash === hash);
    const pending = (current.pending ?? []).filter((d) => d.hash !== hash);
    const now = new Date(this.now()).toISOString();
    const next: SellerSession = !settled
      ? current.state === 'opening'
        ? { ...current, pending, state: 'closed', reason: 'deposit not settled', refund: { hash: null, raw: '0' }, closedAt: now }
        : { ...current, pending }
      : { ...current, state: current.state === 'opening' ? 'open' : current.state, pending, deposits: [...current.deposits, ...(deposit === undefined ? [] : [deposit])], lastUsedAt: now };
    await this.options.book.put(next);
    return next;
  }

  /** Deposits a crash left pending, decided by the ledger: settled ones counted, others dropped once the payment's time is over. */
  private async resolvePending(s: SellerSession): Promise<void> {
    this.busy.add(s.id);
    try {
      for (const d of s.pending ?? []) {
        const status = await this.options.settler.status(d.hash).catch(() => undefined);
        if (status?.status === 'settled') await this.settledPending(s.id, d.hash, true);
        else if (status?.status === 'refused' || (status?.status === 'unknown' && this.now() - Date.parse(s.lastUsedAt) > 300_000)) await this.settledPending(s.id, d.hash, false);
      }
    } finally {
      this.busy.delete(s.id);
    }
  }

  private depositSettled(s: SellerSession, hash: string, network: string): SettleResponse {
    return { success: true, payer: s.payer, transaction: hash, network, amount: s.deposits.find((d) => d.hash === hash)?.raw ?? '0' };
  }

  private async confirmedOnLedger(hash: string): Promise<boolean> {
    const status = await this.options.settler.status(hash).catch(() => undefined);
    return status?.status === 'settled';
  }

  /**
   * Admits a call on the voucher in `payload` for a request whose digest is
   * `request` and whose price (a metered route's ceiling) is `priceRaw`:
   * the session open and in its time, the counter above the last, the
   * request the one named, the voucher's spent within the deposits and
   * leaving at least the price over what was charged, and the session key's
   * signature. Throws an X402Refusal. The session takes no other call until
   * this one is charged or released.
   */
  admit(payload: Record<string, unknown>, request: string, priceRaw: bigint): AdmittedCall {
    const voucher = parseVoucher(payload);
    const s = this.get(voucher.session);
    if (s === undefined) return refuse('session_unknown', `No session ${voucher.session}`);
    if (s.state !== 'open') refuse('session_closed', `The session ${s.id} is ${s.state}`);
    const now = this.now();
    if (now >= Date.parse(s.expiresAt) || now - Date.parse(s.lastUsedAt) >= s.idleSeconds * 1000) refuse('session_expired', `The session ${s.id} has expired`);
    if (this.busy.has(s.id)) refuse('session_busy', `The session ${s.id} has a call under way; a session takes one call at a time`);
    if (voucher.counter <= s.counter) refuse('voucher_replayed', `The counter ${voucher.counter} is not above the last one taken (${s.counter})`);
    if (voucher.request !== request) refuse('voucher_mismatch', 'The voucher names another request than this one');
    const spent = BigInt(voucher.spent);
    if (spent > sumDeposits(s)) refuse('insufficient_funds', `The voucher spends ${spent} raw, above the session's deposits of ${sumDeposits(s)} raw: top it up`);
    const ceiling = spent - BigInt(s.charged);
    if (ceiling < priceRaw) refuse('invalid_amount', `The voucher allows ${ceiling < 0n ? 0n : ceiling} raw for this call; it costs ${priceRaw} raw`);
    if (!verifySessionSignature(s.sessionKey, voucherMessage(voucher), voucher.signature)) refuse('invalid_signature', 'The voucher is not signed by the session key');
    this.busy.add(s.id);
    return { session: s, voucher, ceilingRaw: ceiling };
  }

  /**
   * Charges an admitted call `raw` (the price, or a metered call's units
   * within its ceiling) and keeps its voucher: on disk before this resolves,
   * so nothing is served that the seller could lose.
   */
  async charge(call: AdmittedCall, raw: bigint): Promise<SettleResponse> {
    const amount = raw > call.ceilingRaw ? call.ceilingRaw : raw;
    const s = this.get(call.session.id) as SellerSession;
    const charged = BigInt(s.charged) + amount;
    const next: SellerSession = { ...s, charged: charged.toString(), counter: call.voucher.counter, voucher: call.voucher, lastUsedAt: new Date(this.now()).toISOString() };
    try {
      await this.options.book.put(next);
    } finally {
      this.busy.delete(s.id);
    }
    return {
      success: true,
      payer: s.payer,
      transaction: s.id,
      network: s.network,
      amount: amount.toString(),
      session: { id: s.id, counter: call.voucher.counter, spent_raw: charged.toString(), remaining_raw: (sumDeposits(s) - charged).toString() },
    };
  }

  /** The call was not served: nothing charged, but its counter is used (the voucher is never taken again). */
  async release(call: AdmittedCall): Promise<void> {
    const s = this.get(call.session.id) as SellerSession;
    try {
      await this.options.book.put({ ...s, counter: call.voucher.counter });
    } finally {
      this.busy.delete(s.id);
    }
  }

  /** The buyer closes its session: its session key's signature of the close. */
  async closeByBuyer(id: string, signature: unknown): Promise<SellerSession> {
    const s = this.get(id) ?? refuse('session_unknown', `No session ${id}`);
    if (typeof signature !== 'string' || !verifySessionSignature(s.sessionKey, closeMessage(s.id), signature)) refuse('invalid_signature', 'The close is not signed by the session key');
    return this.close(s.id, 'closed by the buyer');
  }

  /**
   * Ends a session and refunds deposits − charged to the payer, once: the
   * state "closing" is on disk before the refund is sent, and the refund is
   * keyed by the session, so a close cut short by a crash is finished by the
   * next (sweep at start) with the same block, never a second one.
   */
  close(id: string, reason: string): Promise<SellerSession> {
    const under = this.closing.get(id);
    if (under !== undefined) return under;
    const run = this.closeOnce(id, reason).finally(() => this.closing.delete(id));
    this.closing.set(id, run);
    return run;
  }

  private async closeOnce(id: string, reason: string): Promise<SellerSession> {
    let s = this.get(id) ?? refuse('session_unknown', `No session ${id}`);
    if (s.state === 'closed') return s;
    while (this.busy.has(s.id)) await new Promise((resolve) => setTimeout(resolve, 5));
    s = this.get(id) as SellerSession;
    if (s.state === 'open') {
      s = { ...s, state: 'closing', reason };
      await this.options.book.put(s);
    }
    const refundRaw = sumDeposits(s) - BigInt(s.charged);
    const hash = refundRaw > 0n ? await this.options.refund(s, refundRaw) : null;
    const closed: SellerSession = { ...s, state: 'closed', refund: { hash, raw: refundRaw.toString() }, closedAt: new Date(this.now()).toISOString() };
    await this.options.book.put(closed);
    this.options.log?.(`session ${id} closed (${closed.reason ?? reason}): spent ${closed.charged} raw, refunded ${refundRaw} raw`, {
      event: 'session_closed',
      session: id,
      spent_raw: closed.charged,
      refund_raw: refundRaw.toString(),
      refund_block: hash,
    });
    return closed;
  }

  /** The closed session's receipt, signed with the seller's key. */
  receipt(s: SellerSession): Promise<SessionReceipt> {
    return sessionReceipt(s, this.options.signReceipt);
  }

  /** Closes sessions past their idle time or expiry, and finishes closes cut short; every `everyMs` until stop. */
  start(everyMs = 1000): void {
    const sweep = (): void => {
      const now = this.now();
      for (const s of this.options.book.all()) {
        if (s.state === 'closed' || this.busy.has(s.id) || this.closing.has(s.id)) continue;
        if ((s.pending ?? []).length > 0) {
          void this.resolvePending(s).catch(() => undefined);
          continue;
        }
        const over = s.state === 'opening' ? undefined : s.state === 'closing' ? s.reason ?? 'closing' : now >= Date.parse(s.expiresAt) ? 'expired' : now - Date.parse(s.lastUsedAt) >= s.idleSeconds * 1000 ? 'idle' : undefined;
        if (over === undefined) continue;
        this.close(s.id, over).catch((error: unknown) =>
          this.options.log?.(`session ${s.id}: the refund failed (${error instanceof Error ? error.message : String(error)}); tried again next sweep`, { event: 'session_refund_failed', session: s.id }),
        );
      }
    };
    sweep();
    this.timer = setInterval(sweep, everyMs);
    this.timer.unref();
  }

  /** Stops the sweeps and closes the book once its writes are on disk (a server's drain). */
  async shutdown(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    await Promise.allSettled([...this.closing.values()]);
    await this.options.book.close();
  }
}

/** A closed session's receipt, signed by `sign` (the seller's account key over receiptMessage). */
export async function sessionReceipt(s: SellerSession, sign: (message: Uint8Array) => Promise<string>): Promise<SessionReceipt> {
  if (s.state !== 'closed' || s.refund === undefined) refuse('session_open', `The session ${s.id} is not closed yet`);
  const refund = s.refund as { hash: string | null; raw: string };
  const unsigned: Omit<SessionReceipt, 'seller_signature'> = {
    scheme: SESSION_SCHEME,
    network: s.network,
    session: s.id,
    payer: s.payer,
    pay_to: s.payTo,
    session_key: s.sessionKey,
    open_signature: s.openSignature,
    deposits: s.deposits.map((d) => ({ hash: d.hash, amount_raw: d.raw })),
    deposit_raw: sumDeposits(s).toString(),
    spent_raw: s.charged,
    refund_raw: refund.raw,
    refund_block: refund.hash,
    final_voucher: s.voucher ?? null,
    reason: s.reason ?? 'closed',
    closed_at: s.closedAt as string,
  };
  return { ...unsigned, seller_signature: await sign(receiptMessage(unsigned)) };
}
