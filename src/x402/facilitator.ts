import { setTimeout as sleep } from 'node:timers/promises';
import type { LedgerBackend } from '../api/backend.js';
import { NanoPayError } from '../errors.js';
import { isDefinitiveRejection } from '../ops/ledger/chain.js';
import { X402Refusal, chequeOf, sendThreshold, verifyNanoPayment, type NanoCheque, type X402Ledger } from './nano-exact.js';
import {
  X402_ASSET,
  X402_NETWORK,
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
  /** How long a settlement waits for the block's confirmation. Default 30 s: clients should allow more. */
  confirmTimeoutMs?: number;
  /** Between confirmation reads. Default 100 ms. */
  pollMs?: number;
  now?: () => number;
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
  /** Previous hashes being settled by this process right now. */
  private readonly settling = new Set<string>();
  private readonly confirmTimeoutMs: number;
  private readonly pollMs: number;
  private readonly now: () => number;

  constructor(
    private readonly ledger: SettlingLedger,
    private readonly record: SettlementRecord,
    options: FacilitatorOptions = {},
  ) {
    this.confirmTimeoutMs = options.confirmTimeoutMs ?? 30_000;
    this.pollMs = options.pollMs ?? 100;
    this.now = options.now ?? Date.now;
  }

  async supported(): Promise<SupportedResponse> {
    return {
      kinds: [{ x402Version: X402_VERSION, scheme: X402_SCHEME, network: X402_NETWORK, extra: { asset: X402_ASSET, work: 'required', workThreshold: await sendThreshold(this.ledger) } }],
      extensions: [],
      signers: {},
    };
  }

  /** Verifies, also refusing a block whose previous is being settled or was settled. */
  async check(payment: PaymentPayload, requirements: PaymentRequirements): Promise<Verified> {
    const cheque = await verifyNanoPayment(this.ledger, payment, requirements);
    const previous = cheque.block.previous;
    if (this.settling.has(previous)) throw new X402Refusal('transaction_in_flight', `A block on ${previous} is being settled`);
    const entry = await this.record.read(previous);
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
    const failed = (reason: string, message: string, transaction = ''): SettleResponse => ({
      success: false,
      errorReason: reason,
      errorMessage: message,
      ...payerOf(payment),
      transaction,
      network: X402_NETWORK,
    });
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
      if (!(await this.confirmed(cheque.hash)) || !(await this.record.settle(cheque.block.previous, cheque.hash, new Date(this.now())))) return undefined;
      return { success: true, payer: cheque.payer, transaction: cheque.hash, network: X402_NETWORK, amount: requirements.amount };
    } finally {
      this.release(verified);
    }
  }

  /** Holds the payer's previous for this process (from verify to settle); false when another request holds it. */
  reserve(verified: Verified): boolean {
    const previous = verified.cheque.block.previous;
    if (this.settling.has(previous)) return false;
    this.settling.add(previous);
    return true;
  }

  release(verified: Verified): void {
    this.settling.delete(verified.cheque.block.previous);
  }

  /**
   * Settles a verified payment whose previous this process holds (reserve):
   * claims it in the record (the guard across processes and restarts),
   * publishes, and answers success once the ledger confirms the block.
   */
  async settleReserved(verified: Verified): Promise<SettleResponse> {
    const { block, hash, payer } = verified.cheque;
    const previous = block.previous;
    const failed = (reason: string, message: string, transaction = ''): SettleResponse => ({ success: false, errorReason: reason, errorMessage: message, payer, transaction, network: X402_NETWORK });
    const claim = await this.record.claim(previous, hash, new Date(this.now()));
    if (claim !== true) {
      return claim.state === 'settled'
        ? failed('transaction_already_settled', `A block on ${previous} was already settled (${claim.hash})`)
        : failed('transaction_in_flight', `A block on ${previous} is being settled`);
    }
    try {
      await this.ledger.publish(block, 'send', hash);
    } catch (error) {
      if (!(error instanceof NanoPayError && error.code === 'BLOCK_EXISTS')) {
        if (isDefinitiveRejection(error)) {
          await this.record.release(previous);
          return failed('invalid_transaction_state', `The ledger refused the block: ${(error as Error).message}`);
        }
        // Unknown outcome: the claim stays, so the block is never settled twice.
        return failed('settlement_pending', `Publishing ${hash} had no clear outcome: ${error instanceof Error ? error.message : String(error)}`, hash);
      }
    }
    if (!(await this.confirmed(hash))) return failed('settlement_pending', `The block ${hash} was published but not confirmed within ${this.confirmTimeoutMs} ms`, hash);
    if (!(await this.record.settle(previous, hash, new Date(this.now())))) return failed('transaction_already_settled', `A block on ${previous} was already settled`);
    return { success: true, payer, transaction: hash, network: X402_NETWORK, amount: verified.requirements.amount };
  }

  private async confirmed(hash: string): Promise<boolean> {
    const until = this.now() + this.confirmTimeoutMs;
    for (;;) {
      const info = await this.ledger.blockInfo(hash).catch(() => undefined);
      if (info?.confirmed === true) return true;
      if (this.now() >= until) return false;
      await sleep(this.pollMs);
    }
  }
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
