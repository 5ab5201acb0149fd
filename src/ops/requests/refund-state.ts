import { rawToXno } from '../../nano/index.js';
import type { RefundRecord } from '../../store/refunds.js';
import type { RefundLine } from '../../store/shop.js';
import { xnoAndRaw } from '../money.js';

/**
 * What a request's refunds add up to, in the names every surface uses: `status`
 * (text and --json), the shop's API, its `request.refunded` events, the page,
 * and the shop's exports (refunded_at, refund_blocks, refunded_amount,
 * refunded_amount_raw).
 */
export interface RefundSummary {
  status: 'refunded' | 'partially_refunded';
  refunded_amount: string;
  refunded_amount_raw: string;
  refund_blocks: string[];
  /** When the last refund landed. */
  refunded_at: string;
  refunds: RefundLine[];
  /** What the request had received, as the refunds were reckoned against (raw). */
  received_raw: string;
}

/** The landed refunds of a request, summed: wholly refunded once they reach what it received. Undefined before any landed. */
export function refundSummary(refunds: RefundRecord[]): RefundSummary | undefined {
  const sent = refunds.filter((r): r is RefundRecord & { block: string; refunded_at: string } => r.status === 'sent' && r.block !== undefined && r.refunded_at !== undefined);
  const last = sent.at(-1);
  if (last === undefined) return undefined;
  const total = sent.reduce((sum, r) => sum + BigInt(r.amount_raw), 0n);
  const received = sent.reduce((most, r) => (BigInt(r.received_raw) > most ? BigInt(r.received_raw) : most), 0n);
  return {
    status: total >= received ? 'refunded' : 'partially_refunded',
    refunded_amount: rawToXno(total),
    refunded_amount_raw: total.toString(),
    refund_blocks: sent.map((r) => r.block),
    refunded_at: sent.reduce((latest, r) => (r.refunded_at > latest ? r.refunded_at : latest), last.refunded_at),
    refunds: sent.map((r) => ({ id: r.id, amount: r.amount, amount_raw: r.amount_raw, to: r.to, block: r.block, refunded_at: r.refunded_at })),
    received_raw: received.toString(),
  };
}

/** The words `status` adds for the refunds. */
export function refundMessage(summary: RefundSummary): string {
  const label = summary.status === 'refunded' ? 'Refunded' : 'Partly refunded';
  const to = [...new Set(summary.refunds.map((r) => r.to))].join(', ');
  return `${label}: ${xnoAndRaw(BigInt(summary.refunded_amount_raw))} of ${xnoAndRaw(BigInt(summary.received_raw))} received went back to ${to} (block ${summary.refund_blocks.join(', ')}).`;
}
