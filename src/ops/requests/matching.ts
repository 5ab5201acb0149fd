import { rawToXno } from '../../nano/index.js';
import { xnoAndRaw } from '../money.js';

/**
 * What arrived at a request's address that did not pay it: another amount
 * (under- or overpaid), or the exact amount after the request expired. Both are
 * reported with the amount and the blocks, proved from the blocks themselves;
 * neither is counted as paid: the merchant decides.
 */
export interface PaymentArrival {
  amount: string;
  amount_raw: string;
  /** The blocks it came in; empty for what a fresh account already holds (received before the check). */
  blocks: string[];
}

export interface PaymentMismatch extends PaymentArrival {
  kind: 'underpaid' | 'overpaid';
}

export function arrival(arrivedRaw: bigint, blocks: string[]): PaymentArrival {
  return { amount: rawToXno(arrivedRaw), amount_raw: arrivedRaw.toString(), blocks };
}

export function mismatchOf(arrivedRaw: bigint, wantedRaw: bigint, blocks: string[]): PaymentMismatch {
  return { kind: arrivedRaw < wantedRaw ? 'underpaid' : 'overpaid', ...arrival(arrivedRaw, blocks) };
}

function inBlocks(blocks: string[]): string {
  return blocks.length === 0 ? '' : ` (block ${blocks.join(', ')})`;
}

export function mismatchMessage(m: PaymentMismatch, wantedRaw: bigint): string {
  const arrived = BigInt(m.amount_raw);
  return m.kind === 'underpaid'
    ? `Underpaid: ${xnoAndRaw(arrived)} arrived${inBlocks(m.blocks)} of ${xnoAndRaw(wantedRaw)} requested (${xnoAndRaw(wantedRaw - arrived)} short); the request stays open.`
    : `Overpaid: ${xnoAndRaw(arrived)} arrived${inBlocks(m.blocks)} for ${xnoAndRaw(wantedRaw)} requested (${xnoAndRaw(arrived - wantedRaw)} too much); not marked paid.`;
}

export function paidLateMessage(late: PaymentArrival, expiresAt: string): string {
  return `Paid late: ${xnoAndRaw(BigInt(late.amount_raw))} arrived${inBlocks(late.blocks)} after the request expired at ${expiresAt}. It is not marked paid: the money is in the account; honour the order or refund the payer.`;
}

function distance(a: bigint, b: bigint): bigint {
  return a > b ? a - b : b - a;
}

/** The payment nearest the amount among those near enough to be meant for it (from half to twice it), if any. */
export function nearestPayment<T extends { amountRaw: bigint }>(payments: T[], wantedRaw: bigint): T | undefined {
  return payments
    .filter((p) => p.amountRaw !== wantedRaw && p.amountRaw * 2n >= wantedRaw && p.amountRaw <= wantedRaw * 2n)
    .sort((a, b) => {
      const [da, db] = [distance(a.amountRaw, wantedRaw), distance(b.amountRaw, wantedRaw)];
      return da < db ? -1 : da > db ? 1 : 0;
    })[0];
}

/**
 * Whether a payment found for a request came after its expiry: when the node
 * dates its blocks (local_timestamp), by the latest of them; when a block is
 * not dated, by when nanopay saw it (now), so on-time payments read late only
 * if nobody looked before the expiry and the node keeps no dates.
 */
export function arrivedLate(expiresAt: string | undefined, seenAt: (number | undefined)[], now: number): boolean {
  if (expiresAt === undefined) return false;
  const expiry = Date.parse(expiresAt);
  if (expiry > now) return false;
  return seenAt.length === 0 || seenAt.some((t) => t === undefined || t > expiry);
}
