import type { Confirmation, ConfirmationFeed as Feed } from '../../api/node-ws.js';
import { NanoPayError, redactUrl } from '../../errors.js';
import { buildNanoUri, normalizeAddress, rawToXno, xnoToRaw } from '../../nano/index.js';
import type { ApiClient, RemotePaymentStatus } from '../../api/client.js';
import { readingOf, type RequestReading, type RequestState } from './matching.js';
import { nodePaymentStatus, type NodeStatus } from './node-requests.js';
import { serviceVerdict } from './service-status.js';
import { checkRedirectUrl, checkTransactionId, priceOf, requestPayment, type PaymentRequestResult } from './payments.js';
import type { Session } from '../session.js';

/** What a checkout page shows of a payment request: the request itself, nothing secret (and the shop's order reference, when given). */
export type CheckoutRequest = PaymentRequestResult & { order_id?: string };

/** One status read, as a checkout page needs it. */
export interface CheckoutObservation {
  state: RequestState;
  /** The paying block, when one block paid it and it is known. */
  block_hash?: string;
  /** Milliseconds since the epoch, when the request has an expiry. */
  expires_at?: number;
  /** Under- or overpaid: what arrived, in XNO. */
  received?: string;
  /** Underpaid: what is still to pay (XNO) and its payment link, when paying it to the same address completes the request. */
  rest?: string;
  rest_uri?: string;
  /** Refunded, partly or wholly: what went back to the payer, in XNO. */
  refunded?: string;
}

export type CheckoutReader = (transactionId: string) => Promise<CheckoutObservation>;

/**
 * What a page shows of a look at a request (`status`'s own reading: nanopay's matching on a node, the service's word
 * otherwise); the rest to pay comes with its payment link to `address`.
 */
export function observationOf(reading: RequestReading, address: string | undefined, expiresAt: string | undefined): CheckoutObservation {
  // A fresh address may be paid by several blocks: the page names a block only when one paid it.
  const block = reading.status === 'paid' && reading.paid_by?.length === 1 ? reading.paid_by[0] : undefined;
  const rest = reading.rest_raw === undefined ? undefined : BigInt(reading.rest_raw);
  return {
    state: reading.status,
    ...(block === undefined ? {} : { block_hash: block }),
    ...(expiresAt === undefined ? {} : { expires_at: Date.parse(expiresAt) }),
    ...(reading.received_raw === undefined ? {} : { received: rawToXno(BigInt(reading.received_raw)) }),
    ...(rest === undefined || address === undefined ? {} : { rest: rawToXno(rest), rest_uri: buildNanoUri({ address, amountRaw: rest }) }),
    ...(reading.refunded_amount_raw === undefined ? {} : { refunded: rawToXno(BigInt(reading.refunded_amount_raw)) }),
  };
}

const nodeObservation = (status: NodeStatus): CheckoutObservation => observationOf(readingOf(status), status.record.address, status.record.expiresAt);

async function serviceObservation(api: ApiClient, status: RemotePaymentStatus): Promise<CheckoutObservation> {
  const expiresAt = status.expiresAt === undefined ? undefined : new Date(status.expiresAt).toISOString();
  return observationOf(readingOf(await serviceVerdict(api, status, status.expiresAt)), status.receiveAddress, expiresAt);
}

/** The address a page shows must be the request's: a different --to is refused, never silently used. */
function checkSameAddress(reported: string | undefined, to: string | undefined): void {
  const given = to === undefined ? undefined : normalizeAddress(to);
  if (reported !== undefined && given !== undefined && reported !== given) {
    throw new NanoPayError('CONFLICT', `This request is paid to ${reported}, not ${given}`);
  }
}

/**
 * The request a checkout page serves: an existing one (its amount and address
 * as the service reports them, or as nanopay keeps them on a node), or a new
 * one for `amount`. Never unlocks a signing key: the default receive address is
 * read from the settings.
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
    return { request: { transaction_id, receive_address, amount, amount_raw, uri, ...redirect }, observation: { state: 'waiting' } };
  }
  const id = checkTransactionId(input.transactionId as string);
  const fiat = await priceOf(session, id);
  const price = fiat === undefined ? {} : { fiat };
  if (session.backendKind() === 'node') {
    // The requests store has the exact amount and the address: nothing to guess.
    const status = await nodePaymentStatus(session, await session.nodeClient(), id);
    const { record } = status;
    checkSameAddress(record.address, input.to);
    const amountRaw = BigInt(record.amountRaw);
    const redirectUrl = input.redirectUrl ?? record.redirectUrl;
    return {
      request: {
        transaction_id: record.id,
        receive_address: record.address,
        amount: rawToXno(amountRaw),
        amount_raw: amountRaw.toString(),
        uri: buildNanoUri({ address: record.address, amountRaw }),
        ...price,
        ...(redirectUrl === undefined ? {} : { redirect_url: redirectUrl }),
      },
      observation: nodeObservation(status),
    };
  }
  const api = await session.serviceApi();
  const status = await api.paymentStatus(id);
  if (status.amount === undefined) throw new NanoPayError('INVALID_DATA', 'The service did not report the amount of this request');
  const reported = status.receiveAddress === undefined ? undefined : normalizeAddress(status.receiveAddress);
  checkSameAddress(reported, input.to);
  // A wrong address on the page would send the customer's money astray: never guess it.
  const address = reported ?? (input.to === undefined ? undefined : normalizeAddress(input.to));
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
      ...price,
      ...redirect,
    },
    observation: await serviceObservation(api, status),
  };
}

/**
 * A status reader for a checkout server that must not be able to sign: it
 * holds the service's API client, or on a node the node client and the
 * requests store (plain data), and never the session or its key store. It
 * tells what `status` tells: on a node nanopay's own matching (paid by the
 * exact amount; under- or overpaid on a fresh address), the service's word
 * otherwise; paid late when the payment came after the expiry.
 */
export async function checkoutReader(session: Session): Promise<CheckoutReader> {
  if (session.backendKind() === 'node') {
    const node = await session.nodeClient();
    const requests = { dataStore: () => session.dataStore() };
    return async (transactionId) => nodeObservation(await nodePaymentStatus(requests, node, transactionId));
  }
  const api = await session.serviceApi();
  return async (transactionId) => serviceObservation(api, await api.paymentStatus(transactionId));
}

/** Follows payments to a checkout server's addresses. */
export interface CheckoutConfirmations {
  /** Follows `add` too, and `remove` no more: only the changes go to the node, never the whole list again. */
  update(add: string[], remove: string[]): void;
  /** Connected, with the whole filter acknowledged: a payment to a followed address is told as it is confirmed. */
  live(): boolean;
  close(): void;
}

export interface CheckoutConfirmationHandlers {
  /** A send to `address` was confirmed; without one, the connection came or went (anything may have been missed). */
  changed(address?: string): void;
  /** The feed could not be started, or its connection was lost: the server goes on polling. */
  failed?(message: string): void;
}

export type CheckoutConfirmationSource = (handlers: CheckoutConfirmationHandlers) => CheckoutConfirmations;

function addressOrUndefined(address: string | undefined): string | undefined {
  if (address === undefined) return undefined;
  try {
    return normalizeAddress(address);
  } catch {
    return undefined;
  }
}

/** The destination of a confirmed send, normalized; undefined for anything else. */
function paidAddress(c: Confirmation): string | undefined {
  return c.subtype === 'send' ? addressOrUndefined(c.linkAsAccount) : undefined;
}

/**
 * Confirmations from the node's WebSocket for a checkout server, when one is
 * known (node backend with NANOPAY_NODE_WS_URL or node-ws-url); undefined
 * otherwise. The source holds the WebSocket URL and nothing else of the
 * session. No socket is opened before there is an address to follow. The
 * node gets the filter once per connection, then the changes (a shop follows
 * every open request's address: 100,000 of them are 7 MB).
 */
export function checkoutConfirmations(session: Session): CheckoutConfirmationSource | undefined {
  const url = session.nodeWsUrl();
  if (url === undefined) return undefined;
  return (handlers) => {
    const followed = new Set<string>();
    let closed = false;
    let connected = false;
    let feed: Promise<Feed | undefined> | undefined;
    const open = async (): Promise<Feed | undefined> => {
      try {
        // Loaded only here: most commands never open a WebSocket.
        const { ConfirmationFeed } = await import('../../api/node-ws.js');
        return new ConfirmationFeed(url, followed, {
          onConfirmation: (c) => {
            const address = paidAddress(c);
            if (address !== undefined && followed.has(address)) handlers.changed(address);
          },
          onConnected: () => {
            connected = true;
            handlers.changed();
          },
          onDisconnected: (reason) => {
            connected = false;
            handlers.failed?.(reason);
            handlers.changed();
          },
        });
      } catch (error) {
        handlers.failed?.(redactUrl(error instanceof Error ? error.message : String(error)));
        return undefined;
      }
    };
    return {
      update: (add, remove) => {
        if (closed) return;
        const added = add.flatMap((a) => addressOrUndefined(a) ?? []).filter((a) => !followed.has(a));
        const removed = remove.flatMap((a) => addressOrUndefined(a) ?? []).filter((a) => followed.has(a));
        for (const a of added) followed.add(a);
        for (const a of removed) followed.delete(a);
        // A new feed reads `followed` as it connects; one under way is told the changes.
        if (feed === undefined) {
          if (followed.size > 0) feed = open();
        } else void feed.then((f) => f?.update(added, removed));
      },
      live: () => connected,
      close: () => {
        closed = true;
        void feed?.then((f) => f?.close());
      },
    };
  };
}
