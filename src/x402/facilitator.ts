import { setTimeout as sleep } from 'node:timers/promises';
import type { LedgerBackend } from '../api/backend.js';
import { NanoPayError } from '../errors.js';
import { isDefinitiveRejection } from '../ops/ledger/chain.js';
import { rememberConfirmed } from '../ops/ledger/confirmed-blocks.js';
import { X402Refusal, chequeOf, sendThreshold, verifyNanoPayment, type NanoCheque, type X402Ledger } from './nano-exact.js';
import { backendNetwork } from './network.js';
import { timed, type PhaseClock } from './phases.js';
import {
  X402_ASSET,
  X402_SCHEME,
  X402_VERSION,
  parsePaymentPayload,
  parseRequirements,
  type PaymentPayload,
  type PaymentRequirements,
  type SettleResponse,
  type SupportedResponse,
  type VerifyResponse,
} from './protocol.js';
import type { SettlementRecord } from './settlements.js';

/** What settling needs of the ledger: reads, and publishing a block. */
export type SettlingLedger = X402Ledger & Pick<LedgerBackend, 'publish'>;

export interface FacilitatorOptions {
  /** The network named (--network, x402-network) for a node that does not say; one that says must agree. */
  network?: string;
  /** The most a settlement waits for the block's confirmation, below the requirement's maxTimeoutSeconds. Default 30 s: clients should allow more. */
  confirmTimeoutMs?: number;
  /** The first confirmation read after the one at once (the scheme's "about half a second"). Default 500 ms. */
  firstPollMs?: number;
  /** Between the later confirmation reads (the scheme's "every second"). Default 1000 ms. */
  pollMs?: number;
  /**
   * Resolves when the node's WebSocket says `hash` (on `account`'s chain) is
   * confirmed, or never: a wait between reads ends early on it. `done` stops
   * following the account.
   */
  confirmation?: (hash: string, account: string) => { seen: Promise<void>; done(): void };
  now?: () => number;
  /** Waits between reads (tests give a clock of their own). */
  wait?: (ms: number) => Promise<void>;
}

/** Where a settlement stands (GET /settlements/:hash of the facilitator). */
export interface SettlementStatus {
  /** The block hash asked about. */
  transaction: string;
  status: 'settled' | 'pending' | 'refused' | 'unknown';
  network: string;
  /** When it was settled, or claimed (pending). */
  at?: string;
  reason?: string;
}

/** A verified payment, ready to settle. */
export interface Verified {
  cheque: NanoCheque;
  requirements: PaymentRequirements;
}

/**
 * The Nano `exact` scheme's verify and settle, as a facilitator serves them
 * and as a paywall runs them in-process. Settlement claims the payer's
 * `previous` in the persistent record before publishing, so a block (or a
 * rival block on the same previous) settles at most once, even with
 * concurrent or repeated requests; it answers success only once the ledger
 * confirms the block.
 */
export class NanoSettler {
  /** Previous hashes being verified (by a paywall) or settled by this process right now. */
  private readonly settling = new Set<string>();
  private readonly confirmTimeoutMs: number;
  private readonly firstPollMs: number;
  private readonly pollMs: number;
  private readonly now: () => number;
  private readonly wait: (ms: number) => Promise<void>;
  private named: Promise<string> | undefined;

  constructor(
    private readonly ledger: SettlingLedger,
    private readonly record: SettlementRecord,
    private readonly options: FacilitatorOptions = {},
  ) {
    this.confirmTimeoutMs = options.confirmTimeoutMs ?? 30_000;
    this.firstPollMs = options.firstPollMs ?? 500;
    this.pollMs = options.pollMs ?? 1000;
    this.now = options.now ?? Date.now;
    this.wait = options.wait ?? ((ms) => sleep(ms));
  }

  /** The network this settler settles on (nano:mainnet only on the live network), asked of the backend once. */
  network(): Promise<string> {
    this.named ??= backendNetwork(this.ledger, this.options.network);
    return this.named;
  }

  async supported(): Promise<SupportedResponse> {
    const [network, workThreshold] = await Promise.all([this.network(), sendThreshold(this.ledger)]);
    return { kinds: [{ x402Version: X402_VERSION, scheme: X402_SCHEME, network, extra: { asset: X402_ASSET, work: 'required', workThreshold } }], extensions: [], signers: {} };
  }

  /**
   * Verifies, also refusing a block whose previous is being settled or was
   * settled. `held`: the payload's cheque, found signed, whose previous the
   * caller holds already (a paywall holds it from before verification, see
   * Paywall.admit).
   */
  async check(payment: PaymentPayload, requirements: PaymentRequirements, held?: NanoCheque, clock?: PhaseClock): Promise<Verified> {
    const cheque = await verifyNanoPayment(this.ledger, payment, requirements, await this.network(), held, clock);
    const previous = cheque.block.previous;
    if (held === undefined && this.settling.has(previous)) throw new X402Refusal('transaction_in_flight', `A block on ${previous} is being settled`);
    const entry = await timed(clock, 'record', () => this.record.read(previous));
    if (entry?.state === 'settled') throw new X402Refusal('transaction_already_settled', `A block on ${previous} was already settled (${entry.hash})`);
    // A settlement of this very block cut short by a crash may be taken over (see SettlementRecord.claim).
    const resumable = entry?.abandoned === true && entry.hash === cheque.hash;
    if (entry !== undefined && !resumable) throw new X402Refusal('transaction_in_flight', `A block on ${previous} is being settled`);
    return { cheque, requirements };
  }

  async verify(payment: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse> {
    try {
      const { cheque } = await this.check(payment, requirements);
      return { isValid: true, payer: cheque.payer };
    } catch (error) {
      if (error instanceof X402Refusal) return { isValid: false, invalidReason: error.reason, invalidMessage: error.message, ...payerOf(payment) };
      throw error;
    }
  }

  async settle(payment: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse> {
    const failed = failure(payerOf(payment).payer, await this.network());
    let verified: Verified;
    try {
      verified = await this.check(payment, requirements);
    } catch (error) {
      if (!(error instanceof X402Refusal)) throw error;
      // Our own settlement of this very block, cut short after publishing (settlement_pending): finished now, once.
      if (error.reason === 'transaction_already_settled') return (await this.resume(payment, requirements)) ?? failed(error.reason, error.message);
      return failed(error.reason, error.message);
    }
    if (!this.reserve(verified)) return failed('transaction_in_flight', `A block on ${verified.cheque.block.previous} is being settled`);
    try {
      return await this.settleReserved(verified);
    } finally {
      this.release(verified);
    }
  }

  /**
   * A block on the ledger whose claim here is still pending for that very hash:
   * a settlement of ours whose publish had no clear answer. Once the ledger
   * confirms it, it is marked settled and answered success, by one call only.
   */
  private async resume(payment: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse | undefined> {
    let cheque: NanoCheque;
    try {
      cheque = chequeOf(payment.payload);
    } catch {
      return undefined;
    }
    const entry = await this.record.read(cheque.block.previous);
    if (entry?.state !== 'pending' || entry.hash !== cheque.hash) return undefined;
    const verified: Verified = { cheque, requirements };
    if (!this.reserve(verified)) return undefined;
    try {
      if (!(await this.confirmed(verified)) || !(await this.record.settle(cheque.block.previous, cheque.hash, new Date(this.now())))) return undefined;
      return { success: true, payer: cheque.payer, transaction: cheque.hash, network: await this.network(), amount: requirements.amount };
    } finally {
      this.release(verified);
    }
  }

  /** Holds the payer's previous for this process (from verify to settle); false when another request holds it. */
  reserve(verified: Pick<Verified, 'cheque'>): boolean {
    const previous = verified.cheque.block.previous;
    if (this.settling.has(previous)) return false;
    this.settling.add(previous);
    return true;
  }

  release(verified: Pick<Verified, 'cheque'>): void {
    this.settling.delete(verified.cheque.block.previous);
  }

  /**
   * Settles a verified payment whose previous this process holds (reserve):
   * claims it in the record (the guard across processes and restarts),
   * publishes, and answers success once the ledger confirms the block.
   */
  async settleReserved(verified: Verified, clock?: PhaseClock): Promise<SettleResponse> {
    const { block, hash, payer } = verified.cheque;
    const previous = block.previous;
    const failed = failure(payer, await this.network());
    const claim = await timed(clock, 'claim', () => this.record.claim(previous, hash, new Date(this.now())));
    if (claim !== true) {
      return claim.state === 'settled'
        ? failed('transaction_already_settled', `A block on ${previous} was already settled (${claim.hash})`)
        : failed('transaction_in_flight', `A block on ${previous} is being settled`);
    }
    // Followed before publishing, so a confirmation that comes at once is not missed.
    const heard = this.options.confirmation?.(hash, payer);
    try {
      return await this.publishAndConfirm(verified, heard?.seen, clock);
    } finally {
      heard?.done();
    }
  }

  private async publishAndConfirm(verified: Verified, heard: Promise<void> | undefined, clock: PhaseClock | undefined): Promise<SettleResponse> {
    const { block, hash, payer } = verified.cheque;
    const previous = block.previous;
    const network = await this.network();
    const failed = failure(payer, network);
    try {
      await timed(clock, 'publish', () => this.ledger.publish(block, 'send', hash));
    } catch (error) {
      if (!(error instanceof NanoPayError && error.code === 'BLOCK_EXISTS')) {
        if (isDefinitiveRejection(error)) {
          const message = `The ledger refused the block: ${(error as Error).message}`;
          await this.record.refuse(previous, hash, message);
          return failed('invalid_transaction_state', message);
        }
        // Unknown outcome: the claim stays, so the block is never settled twice.
        return failed('settlement_pending', `Publishing ${hash} had no clear outcome: ${error instanceof Error ? error.message : String(error)}`, hash);
      }
    }
    if (!(await timed(clock, 'confirm', () => this.confirmed(verified, heard)))) {
      return failed('settlement_pending', `The block ${hash} was published but not confirmed within ${this.timeoutMs(verified)} ms`, hash);
    }
    // Verified here in full and now confirmed: the payer's next payment builds on it, and its head is known without a read.
    rememberConfirmed(this.ledger, hash, block);
    if (!(await timed(clock, 'settled', () => this.record.settle(previous, hash, new Date(this.now()))))) return failed('transaction_already_settled', `A block on ${previous} was already settled`);
    return { success: true, payer, transaction: hash, network, amount: verified.requirements.amount };
  }

  /**
   * Where a settlement of the block `hash` stands, for a caller that lost the
   * answer (it timed out): settled (this settler settled it, or claimed it and
   * the ledger shows it confirmed), pending (claimed, published or being
   * published, not yet seen confirmed: present the same block again, never a
   * new one), refused (the ledger refused it for good: it can never land), or
   * unknown (never claimed here: this settler published nothing of it). Reads
   * only: the record and, for a pending claim, the ledger.
   */
  async status(hash: string): Promise<SettlementStatus> {
    const network = await this.network();
    const claimed = await this.record.lookup(hash);
    const answer = (status: SettlementStatus['status'], more: Partial<SettlementStatus> = {}): SettlementStatus => ({ transaction: hash, status, network, ...more });
    if (claimed === undefined) return answer('unknown');
    if (claimed.refused !== undefined) return answer('refused', { reason: claimed.refused });
    const entry = await this.record.read(claimed.previous);
    if (entry === undefined || entry.hash !== hash) return answer('refused', { reason: `Another block on its previous ${claimed.previous} took its place` });
    if (entry.state === 'settled') return answer('settled', { at: entry.at });
    const info = await this.ledger.blockInfo(hash).catch(() => undefined);
    if (info?.confirmed === true) return answer('settled', { reason: 'Confirmed on the ledger; its settlement here was cut short' });
    return answer('pending', { at: entry.at, reason: entry.abandoned === true ? 'Its settlement was cut short: present the same block to /settle again' : 'Published or being published, not yet seen confirmed' });
  }

  /** The requirement's maxTimeoutSeconds, within confirmTimeoutMs. */
  private timeoutMs(verified: Verified): number {
    return Math.min(verified.requirements.maxTimeoutSeconds * 1000, this.confirmTimeoutMs);
  }

  /**
   * Whether the ledger confirms the block in time, read as the scheme advises:
   * at once (a ledger that confirms at once, like the sandbox, answers
   * without a wait), then about half a second after publishing, then every
   * second, up to the requirement's maxTimeoutSeconds; a WebSocket
   * confirmation of the block ends a wait early (it is a reason to read, not
   * a verdict).
   */
  private async confirmed(verified: Verified, heard?: Promise<void>): Promise<boolean> {
    const until = this.now() + this.timeoutMs(verified);
    for (let reads = 0; ; reads++) {
      const info = await this.ledger.blockInfo(verified.cheque.hash).catch(() => undefined);
      if (info?.confirmed === true) return true;
      const left = until - this.now();
      if (left <= 0) return false;
      const wait = this.wait(Math.min(reads === 0 ? this.firstPollMs : this.pollMs, left));
      await (heard === undefined ? wait : Promise.race([wait, heard]));
      // Heard once: later reads wait their turn again.
      heard = undefined;
    }
  }
}

/** A failed settlement's answer, for `payer` on `network`. */
function failure(payer: string | undefined, network: string): (reason: string, message: string, transaction?: string) => SettleResponse {
  return (reason, message, transaction = '') => ({ success: false, errorReason: reason, errorMessage: message, ...(payer === undefined ? {} : { payer }), transaction, network });
}

function payerOf(payment: PaymentPayload): { payer?: string } {
  const block = payment.payload.block;
  const account = typeof block === 'object' && block !== null ? (block as Record<string, unknown>).account : undefined;
  return typeof account === 'string' ? { payer: account } : {};
}

/** `{x402Version, paymentPayload, paymentRequirements}` as HTTPFacilitatorClient posts it; a bad shape is an X402Refusal. */
export function facilitatorRequest(body: Record<string, unknown>): { payment: PaymentPayload; requirements: PaymentRequirements } {
  try {
    return { payment: parsePaymentPayload(body.paymentPayload), requirements: parseRequirements(body.paymentRequirements, 'paymentRequirements') };
  } catch (error) {
    if (error instanceof NanoPayError) {
      const version = (body.paymentPayload as { x402Version?: unknown } | undefined)?.x402Version;
      throw new X402Refusal(version !== undefined && version !== X402_VERSION ? 'invalid_x402_version' : 'invalid_payload', error.message);
    }
    throw error;
  }
}
