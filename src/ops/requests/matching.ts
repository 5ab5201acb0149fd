import { rawToXno } from '../../nano/index.js';
import { xnoAndRaw } from '../money.js';

/**
 * Where a payment request stands, in the same words on every surface: `status`
 * (text and --json), the shop's API and webhooks (`request.<state>`), and the
 * checkout page. Only `paid` is paid: a late payment never is.
 */
export type RequestState = 'waiting' | 'paid' | 'paid_late' | 'underpaid' | 'overpaid' | 'expired' | 'refunded' | 'partially_refunded';

/** How `status` and the shop name each state to the merchant. */
const STATE_LABELS: Record<RequestState, string> = {
  waiting: 'Not paid yet',
  paid: 'Paid',
  paid_late: 'Paid late',
  underpaid: 'Underpaid',
  overpaid: 'Overpaid',
  expired: 'Expired',
  refunded: 'Refunded',
  partially_refunded: 'Partly refunded',
};

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
  /** Underpaid: what is still to pay; paying it to the same address completes the request (the payments add up). */
  rest?: string;
  rest_raw?: string;
}

/** One look at a request: its state, the words for it, and what was found. */
export interface Verdict {
  state: RequestState;
  message: string;
  /** The blocks that paid it, when known. */
  paid_by?: string[];
  mismatch?: PaymentMismatch;
  paid_late?: PaymentArrival;
}

/** What a look found, as the shop keeps it (and a page shows it): the state, and the blocks or amounts behind it. */
export interface RequestReading {
  status: RequestState;
  /** The blocks that paid it (or paid it late). */
  paid_by?: string[];
  /** Under- or overpaid: raw arrived, and the blocks it came in. */
  received_raw?: string;
  received_by?: string[];
  /** Underpaid: raw still to pay, when paying it to the same address completes the request. */
  rest_raw?: string;
  /** Refunded, partly or wholly: raw sent back, in all. */
  refunded_amount_raw?: string;
}

export function readingOf(verdict: Verdict): RequestReading {
  const { mismatch } = verdict;
  const blocks = verdict.paid_by ?? verdict.paid_late?.blocks ?? [];
  return {
    status: verdict.state,
    ...(blocks.length === 0 ? {} : { paid_by: blocks }),
    ...(mismatch === undefined ? {} : { received_raw: mismatch.amount_raw }),
    ...(mismatch === undefined || mismatch.blocks.length === 0 ? {} : { received_by: mismatch.blocks }),
    ...(mismatch?.rest_raw === undefined ? {} : { rest_raw: mismatch.rest_raw }),
  };
}

export function arrival(arrivedRaw: bigint, blocks: string[]): PaymentArrival {
  return { amount: rawToXno(arrivedRaw), amount_raw: arrivedRaw.toString(), blocks };
}

/**
 * What arrived at an address whose every payment is the request's (a fresh
 * address: the payments add up), when it is not the amount. Only there does a
 * payment of another amount belong to a request: on a shared address it may be
 * anyone's, so nothing but the exact amount is attributed there.
 */
export function mismatchOf(arrivedRaw: bigint, wantedRaw: bigint, blocks: string[]): PaymentMismatch {
  if (arrivedRaw > wantedRaw) return { kind: 'overpaid', ...arrival(arrivedRaw, blocks) };
  const rest = wantedRaw - arrivedRaw;
  return { kind: 'underpaid', ...arrival(arrivedRaw, blocks), rest: rawToXno(rest), rest_raw: rest.toString() };
}

function inBlocks(blocks: string[]): string {
  return blocks.length === 0 ? '' : ` (block ${blocks.join(', ')})`;
}

export function mismatchMessage(m: PaymentMismatch, wantedRaw: bigint): string {
  const arrived = BigInt(m.amount_raw);
  if (m.kind === 'overpaid') {
    return `Overpaid: ${xnoAndRaw(arrived)} arrived${inBlocks(m.blocks)} for ${xnoAndRaw(wantedRaw)} requested (${xnoAndRaw(arrived - wantedRaw)} too much); not marked paid.`;
  }
  const rest = wantedRaw - arrived;
  return `Underpaid: ${xnoAndRaw(arrived)} arrived${inBlocks(m.blocks)} of ${xnoAndRaw(wantedRaw)} requested (${xnoAndRaw(rest)} short); the request stays open: pay the rest, ${xnoAndRaw(rest)}, to the same address to complete it.`;
}

export function paidLateMessage(late: PaymentArrival, expiresAt: string): string {
  return `Paid late: ${xnoAndRaw(BigInt(late.amount_raw))} arrived${inBlocks(late.blocks)} after the request expired at ${expiresAt}. It is not marked paid: the money is in the account; honour the order or refund the payer.`;
}

/** The line `status` prints: the state's label, then what was found (a message that starts with its label keeps it once). */
export function statusLine(state: RequestState, message: string): string {
  const label = STATE_LABELS[state];
  return message.startsWith(`${label}:`) ? message : `${label}: ${message}`;
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
