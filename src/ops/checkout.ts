import type { ApiClient } from '../api/client.js';
import { NanoPayError } from '../errors.js';
import { buildNanoUri, normalizeAddress, xnoToRaw } from '../nano/index.js';
import { checkRedirectUrl, checkTransactionId, requestPayment, type PaymentRequestResult } from './payments.js';
import type { Session } from './session.js';

/** What a checkout page shows of a payment request: the request itself, nothing secret. */
export type CheckoutRequest = PaymentRequestResult;

/** One status read, as a checkout page needs it. */
export interface CheckoutObservation {
  paid: boolean;
  /** The paying block, when the service names it. */
  block_hash?: string;
  /** Milliseconds since the epoch, when the service gives the request an expiry. */
  expires_at?: number;
}

export type CheckoutReader = (transactionId: string) => Promise<CheckoutObservation>;

function observation(status: Awaited<ReturnType<ApiClient['paymentStatus']>>): CheckoutObservation {
  return {
    paid: status.isPaid,
    ...(status.blockHash === undefined ? {} : { block_hash: status.blockHash }),
    ...(status.expiresAt === undefined ? {} : { expires_at: status.expiresAt }),
  };
}

/**
 * The request a checkout page serves: an existing one (its amount and address
 * as the service reports them), or a new one for `amount`. Never unlocks a
 * signing key: the default receive address is read from the settings.
 */
export async function openCheckout(
  session: Session,
  input: { transactionId?: string; amount?: string; to?: string; redirectUrl?: string },
): Promise<{ request: CheckoutRequest; observation: CheckoutObservation }> {
  checkRedirectUrl(input.redirectUrl);
  const redirect = input.redirectUrl === undefined ? {} : { redirect_url: input.redirectUrl };
  if ((input.transactionId === undefined) === (input.amount === undefined)) {
    throw new NanoPayError('USAGE', 'Give either a TRANSACTION_ID or --amount', { hint: 'nanopay checkout --amount 1.5, or nanopay checkout <transaction id>' });
  }
  if (input.amount !== undefined) {
    const to = input.to ?? (await session.address());
    const created = await requestPayment(session, { amount: { xno: input.amount }, to, ...(input.redirectUrl === undefined ? {} : { redirectUrl: input.redirectUrl }) });
    const { transaction_id, receive_address, amount, amount_raw, uri } = created;
    return { request: { transaction_id, receive_address, amount, amount_raw, uri, ...redirect }, observation: { paid: false } };
  }
  const id = checkTransactionId(input.transactionId as string);
  const status = await (await session.api()).paymentStatus(id);
  if (status.amount === undefined) throw new NanoPayError('INVALID_DATA', 'The service did not report the amount of this request');
  const reported = status.receiveAddress === undefined ? undefined : normalizeAddress(status.receiveAddress);
  const given = input.to === undefined ? undefined : normalizeAddress(input.to);
  if (reported !== undefined && given !== undefined && reported !== given) {
    throw new NanoPayError('CONFLICT', `This request is paid to ${reported}, not ${given}`);
  }
  // A wrong address on the page would send the customer's money astray: never guess it.
  const address = reported ?? given;
  if (address === undefined) {
    throw new NanoPayError('USAGE', 'The service does not say which address this request is paid to', { hint: 'Name it with --to nano_…' });
  }
  const amountRaw = xnoToRaw(status.amount);
  return {
    request: {
      transaction_id: status.transactionId.toLowerCase(),
      receive_address: address,
      amount: status.amount,
      amount_raw: amountRaw.toString(),
      uri: buildNanoUri({ address, amountRaw }),
      ...redirect,
    },
    observation: observation(status),
  };
}

/**
 * A status reader that holds the API client only (no session, no key store),
 * for a checkout server that must not be able to sign.
 */
export async function checkoutReader(session: Session): Promise<CheckoutReader> {
  const api = await session.api();
  return async (transactionId) => observation(await api.paymentStatus(transactionId));
}
