import type { ApiClient, RemotePaymentStatus } from '../../api/client.js';
import { NanoPayError } from '../../errors.js';
import { normalizeAddress, xnoToRaw } from '../../nano/index.js';
import { provedPayment } from '../ledger/proofs.js';
import { arrival, arrivedLate, paidLateMessage, type Verdict } from './matching.js';

/**
 * Where a request the service keeps stands. The service matches payments to
 * its requests by their adjusted amounts and says which is paid; nothing else
 * is attributed to a request: a payment of another amount to a shared address
 * may be any order's, and the service does not say whose. A request paid and
 * looked at after its expiry (the service's, or the shop's own for a request
 * made through checkout serve) is paid late, not paid, when its payment came
 * after the expiry: dated by the block the service names, proved (when it names
 * none, by when nanopay saw it paid, as on a node).
 */
export async function serviceVerdict(api: ApiClient, status: RemotePaymentStatus, expiresAtMs: number | undefined, now = Date.now()): Promise<Verdict> {
  const expired = expiresAtMs !== undefined && expiresAtMs <= now;
  if (!status.isPaid) return { state: expired ? 'expired' : 'waiting', message: status.message };
  const blocks = status.blockHash === undefined ? [] : [status.blockHash];
  const paid: Verdict = { state: 'paid', message: status.message, ...(blocks.length === 0 ? {} : { paid_by: blocks }) };
  if (!expired) return paid;
  const amountRaw = status.amount === undefined ? undefined : xnoToRaw(status.amount);
  const address = status.receiveAddress === undefined ? undefined : normalizeAddress(status.receiveAddress);
  const block =
    status.blockHash === undefined
      ? undefined
      : await provedPayment(api, status.blockHash, { ...(address === undefined ? {} : { address }), ...(amountRaw === undefined ? {} : { amountRaw }) });
  const expiresAt = new Date(expiresAtMs).toISOString();
  if (!arrivedLate(expiresAt, [block?.seenAt], now)) return paid;
  const lateRaw = amountRaw ?? block?.amountRaw;
  if (lateRaw === undefined) throw new NanoPayError('INVALID_DATA', 'The service names neither the amount nor the block of a payment that came after the request expired');
  const late = arrival(lateRaw, blocks);
  return { state: 'paid_late', message: paidLateMessage(late, expiresAt), paid_late: late };
}
