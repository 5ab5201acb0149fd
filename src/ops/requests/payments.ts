import { checkRedirectUrl, isTransactionId } from '../../api/contract.js';
import type { CallOptions } from '../../api/http.js';
import { ExitCode, NanoPayError } from '../../errors.js';
import { buildNanoUri, normalizeAddress, parseNanoUri, rawToXno, xnoToRaw } from '../../nano/index.js';
import { inconsistent } from '../ledger/inconsistent.js';
import { rawOf, xnoAndRaw, type Amount, type FiatAmount } from '../money.js';
import { priceInXno, quoteWindowS } from '../pricing/rates.js';
import type { FiatPrice } from '../../store/prices.js';
import { MAX_REQUEST_EXPIRY_S, createNodeRequest, nodePaymentStatus } from './node-requests.js';
import type { PaymentArrival, PaymentMismatch, RequestState, Verdict } from './matching.js';
import { serviceVerdict } from './service-status.js';
import { formatDuration } from '../duration.js';
import { Wakeup } from '../../timing/wakeups.js';
import { SAFETY_POLL_MS, confirmations } from '../ledger/confirmations.js';
import { send, type SendInput, type SendResult } from '../spending/send.js';
import { statusWithRefunds, type RefundLine } from '../../store/shop.js';
import { refundMessage, refundSummary } from './refund-state.js';
import type { Session } from '../session.js';
import type { RequestRecord } from '../../wallet/requests.js';

export { checkRedirectUrl };

/**
 * The most the service may add to a request's amount so that payments can be
 * matched to it ("extra fractional digits": the sandbox adds at most 999,999
 * raw). 10^24 raw is 0.000001 XNO: anything more, or less than asked, is
 * refused, as a payer would otherwise pay what the merchant did not ask for.
 */
const MAX_REQUEST_ADJUSTMENT_RAW = 10n ** 24n;

export interface PaymentRequestResult {
  transaction_id: string;
  receive_address: string;
  /** The adjusted amount: the payer must send exactly this. */
  amount: string;
  amount_raw: string;
  /** nano:<address>?amount=<raw>, the standard URI (and QR content). */
  uri: string;
  redirect_url?: string;
  /**
   * When the request stops waiting (ISO 8601): nanopay's own on a node, and for a price in another currency on
   * either backend (its quote's end); the service says nothing at creation.
   */
  expires_at?: string;
  /** Priced in another currency: the price, the rate it was turned into XNO at, and until when that holds. */
  fiat?: FiatPrice;
}


/**
 * Creates a payment request; the receive address defaults to the active account. On a node, nanopay keeps it:
 * `keep` then stores it (with the caller's own record of it, in one transaction), else the requests table alone.
 * A price in another currency is turned into XNO first (at a rate checked by ops/pricing; refused before
 * anything is made), and kept in the store with the request's id and the quote's end: the request expires then,
 * rate-quote-window after it is made unless asked sooner, on either backend (on the service nanopay keeps that
 * expiry with the price, as the shop keeps its own).
 */
export async function requestPayment(
  session: Session,
  input: { amount: Amount | FiatAmount; to?: string; redirectUrl?: string; freshAddress?: boolean; expiresInS?: number },
  keep?: (made: PaymentRequestResult, record: RequestRecord) => Promise<void>,
): Promise<PaymentRequestResult> {
  checkRedirectUrl(input.redirectUrl);
  if (input.freshAddress === true && input.to !== undefined) throw new NanoPayError('USAGE', 'Give --to or --fresh-address, not both');
  if (input.expiresInS !== undefined && !(Number.isInteger(input.expiresInS) && input.expiresInS >= 1 && input.expiresInS <= MAX_REQUEST_EXPIRY_S)) {
    throw new NanoPayError('USAGE', `A request waits from 1 s to ${formatDuration(MAX_REQUEST_EXPIRY_S)}`);
  }
  const node = session.backendKind() === 'node';
  const priced = 'fiat' in input.amount;
  if (!node && (input.freshAddress === true || (input.expiresInS !== undefined && !priced))) {
    throw new NanoPayError('USAGE', '--fresh-address is for requests nanopay keeps itself (backend node), and so is --expires-in unless the price is in another currency', {
      hint: 'The service keeps its requests and decides their expiry (status shows it when the service gives one); use --to to name another address.',
    });
  }
  // The XNO amount of a price in another currency holds for the quote window, and the request no longer than that.
  const windowS = priced ? quoteWindowS(session) : undefined;
  if (windowS !== undefined && input.expiresInS !== undefined && input.expiresInS > windowS) {
    throw new NanoPayError('INVALID_REQUEST', `A price in another currency holds for rate-quote-window (${formatDuration(windowS)}), so its request cannot wait ${formatDuration(input.expiresInS)}; no request was made`, {
      hint: 'Ask for an expiry within it, or raise it: nanopay config set rate-quote-window 1h.',
    });
  }
  const expiresInS = input.expiresInS ?? windowS;
  const { raw: baseRaw, fiat } = 'fiat' in input.amount ? await priceInXno(session, input.amount) : { raw: rawOf(input.amount), fiat: undefined };
  if (baseRaw <= 0n) throw new NanoPayError('INVALID_NUMBER_FORMAT', 'The amount must be greater than zero');
  const result = (id: string, address: string, amountRaw: bigint, expiresAt?: string): PaymentRequestResult => ({
    transaction_id: id,
    receive_address: address,
    amount: rawToXno(amountRaw),
    amount_raw: amountRaw.toString(),
    uri: buildNanoUri({ address, amountRaw }),
    ...(input.redirectUrl === undefined ? {} : { redirect_url: input.redirectUrl }),
    ...(expiresAt === undefined ? {} : { expires_at: expiresAt }),
    ...(fiat === undefined ? {} : { fiat: { ...fiat, ...(expiresAt === undefined ? {} : { quote_expires_at: expiresAt }) } }),
  });
  let made: PaymentRequestResult;
  if (node) {
    const kept = (record: RequestRecord): PaymentRequestResult => result(record.id, record.address, BigInt(record.amountRaw), record.expiresAt);
    const record = await createNodeRequest(session, await session.nodeClient(), { ...input, baseRaw, ...(expiresInS === undefined ? {} : { expiresInS }) }, keep === undefined ? undefined : (r) => keep(kept(r), r));
    made = kept(record);
  } else {
    const to = input.to === undefined ? await session.address() : normalizeAddress(input.to);
    const created = await (await session.serviceApi()).paymentRequest({ receiveAddress: to, amount: rawToXno(baseRaw), ...(input.redirectUrl === undefined ? {} : { redirectUrl: input.redirectUrl }) });
    const { address, amountRaw } = checkCreated(created, to, baseRaw);
    made = result(created.transactionId, address, amountRaw, expiresInS === undefined ? undefined : new Date(Date.now() + expiresInS * 1000).toISOString());
  }
  if (made.fiat !== undefined) await (await session.dataStore()).prices.record(made.transaction_id, made.fiat);
  return made;
}

/**
 * The service's new request must be the one asked for: a proxy or a faulty
 * service that names another address (or another amount) would have the page,
 * the QR code and the JSON send the customer's money astray. Refused before
 * anything is shown or kept.
 */
function checkCreated(created: { receiveAddress: string; amount: string }, to: string, baseRaw: bigint): { address: string; amountRaw: bigint } {
  const outcome = 'Nothing was shown; do not use this request.';
  let address: string;
  let amountRaw: bigint;
  try {
    address = normalizeAddress(created.receiveAddress);
    amountRaw = xnoToRaw(created.amount);
  } catch {
    throw inconsistent(`its new payment request names "${created.receiveAddress.slice(0, 80)}" and "${created.amount.slice(0, 80)}" XNO, not an address and an amount`, { outcome });
  }
  if (address !== to) throw inconsistent(`the payment request asked for ${to} was made for ${address}`, { outcome });
  const adjustment = amountRaw - baseRaw;
  if (adjustment < 0n || adjustment > MAX_REQUEST_ADJUSTMENT_RAW) {
    throw inconsistent(
      `the payment request asked for ${xnoAndRaw(baseRaw)} was made for ${xnoAndRaw(amountRaw)} (it may add at most ${rawToXno(MAX_REQUEST_ADJUSTMENT_RAW)} XNO to match payments)`,
      { outcome },
    );
  }
  return { address, amountRaw };
}

export interface PaymentStatusResult {
  transaction_id: string;
  /** Where it stands, in the words every surface uses (the shop's API and webhooks, the checkout page). */
  status: RequestState;
  /** Paid, and only then: a late payment is not. */
  is_paid: boolean;
  message: string;
  amount?: string;
  /** When the request expires (ISO 8601) and whether it has: present when nanopay (node backend), the shop or the service gives an expiry. */
  expires_at?: string;
  expired?: boolean;
  /** The blocks that paid it, when known. */
  paid_by?: string[];
  /** What arrived at a fresh address that is not the amount (proved from its blocks): never counted as paid. */
  mismatch?: PaymentMismatch;
  /** The exact amount, arrived after the expiry: reported, not counted as paid. */
  paid_late?: PaymentArrival;
  /** Refunded (status refunded or partially_refunded): what went back in all, its blocks, when the last landed, each refund. */
  refunded_amount?: string;
  refunded_amount_raw?: string;
  refund_blocks?: string[];
  refunded_at?: string;
  refunds?: RefundLine[];
  /** Priced in another currency: the price and its rate, as the request was made. */
  fiat?: FiatPrice;
}

function expiry(expiresAtMs: number | undefined, now = Date.now()): Pick<PaymentStatusResult, 'expires_at' | 'expired'> {
  return expiresAtMs === undefined || !Number.isFinite(expiresAtMs) ? {} : { expires_at: new Date(expiresAtMs).toISOString(), expired: expiresAtMs <= now };
}

function resultOf(id: string, verdict: Verdict, amount: string | undefined, expiresAtMs: number | undefined, fiat: FiatPrice | undefined): PaymentStatusResult {
  const { state, message, paid_by, mismatch, paid_late } = verdict;
  return {
    transaction_id: id,
    status: state,
    is_paid: state === 'paid',
    message,
    ...(amount === undefined ? {} : { amount }),
    ...expiry(expiresAtMs),
    ...(paid_by === undefined ? {} : { paid_by }),
    ...(mismatch === undefined ? {} : { mismatch }),
    ...(paid_late === undefined ? {} : { paid_late }),
    ...(fiat === undefined ? {} : { fiat }),
  };
}

export function checkTransactionId(id: string): string {
  // Malformed is invalid input (400, exit 3); a well-formed id the service does not know stays not found (404, exit 9).
  if (!isTransactionId(id)) {
    throw new NanoPayError('INVALID_TRANSACTION_ID', `"${id.slice(0, 80)}" is not a transaction id (a UUID)`, { status: 400, exitCode: ExitCode.INVALID_INPUT });
  }
  return id;
}

/** The work's answer, or REQUEST_ERROR the moment the signal aborts (the work itself is left to finish). */
async function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return work;
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(new NanoPayError('REQUEST_ERROR', 'The check was stopped'));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([work, aborted]);
  } finally {
    if (onAbort !== undefined) signal.removeEventListener('abort', onAbort);
  }
}

/**
 * The expiry the shop gave a request it made through checkout serve on the
 * service (which takes none), from the profile's store when there is one:
 * `status` and the shop then tell the same.
 */
async function shopExpiry(session: Session, id: string): Promise<number | undefined> {
  if (!session.hasDataStore()) return undefined;
  const expiresAt = (await (await session.dataStore()).shop.get(id.toLowerCase()))?.expires_at;
  return expiresAt === undefined ? undefined : Date.parse(expiresAt);
}

/** The price a request was made at, when it was priced in another currency (kept in the profile's store). */
export async function priceOf(session: Session, id: string): Promise<FiatPrice | undefined> {
  return session.hasDataStore() ? (await session.dataStore()).prices.of(id) : undefined;
}

/** One look at a request: the service's answer, or on a node nanopay's own matching; then its refunds. */
async function checkOnce(session: Session, id: string, options: Pick<CallOptions, 'signal' | 'once'> = {}): Promise<PaymentStatusResult> {
  if (session.backendKind() === 'node') {
    const status = await untilAborted(nodePaymentStatus(session, await session.nodeClient(), id), options.signal);
    const { record } = status;
    return withRefunds(session, resultOf(record.id, status, rawToXno(BigInt(record.amountRaw)), record.expiresAt === undefined ? undefined : Date.parse(record.expiresAt), await priceOf(session, record.id)));
  }
  const api = await session.serviceApi();
  const expiresAt = await shopExpiry(session, id);
  const price = await priceOf(session, id);
  const s = await api.paymentStatus(id, options);
  // A price's quote ends the request as an expiry does (nanopay keeps it: the service knows nothing of it).
  const quoteEnd = price?.quote_expires_at === undefined ? undefined : Date.parse(price.quote_expires_at);
  const given = expiresAt ?? s.expiresAt;
  const shown = given === undefined || quoteEnd === undefined ? (given ?? quoteEnd) : Math.min(given, quoteEnd);
  return withRefunds(session, resultOf(s.transactionId, await untilAborted(serviceVerdict(api, s, shown), options.signal), s.amount, shown, price));
}

/**
 * A request some of whose payment went back (nanopay refund, from the profile's store) shows its refunds; a
 * paid one is then refunded or partially refunded: the verdict's blocks stay. A wholly refunded one is not paid.
 */
async function withRefunds(session: Session, result: PaymentStatusResult): Promise<PaymentStatusResult> {
  if (!session.hasDataStore()) return result;
  const summary = refundSummary(await (await session.dataStore()).refunds.ofRequest(result.transaction_id.toLowerCase()));
  if (summary === undefined) return result;
  const { status: _status, received_raw: received, ...fields } = summary;
  // Refunded or partly refunded only if it was paid: an under- or overpaid request keeps its status, its refunds beside it.
  const status = statusWithRefunds(result.status, BigInt(summary.refunded_amount_raw), BigInt(received));
  return { ...result, ...fields, status, is_paid: result.is_paid && status !== 'refunded', message: `${refundMessage(summary)} ${result.message}` };
}

export async function paymentStatus(session: Session, transactionId: string): Promise<PaymentStatusResult> {
  return checkOnce(session, checkTransactionId(transactionId));
}

export type WatchEvent =
  | ({ event: 'status'; elapsed_ms: number } & PaymentStatusResult)
  | { event: 'error'; elapsed_ms: number; code: string; message: string; retry_in_ms: number };

export interface WatchOptions {
  intervalMs: number;
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Called for the first status, each change of it, and each failed poll. */
  onEvent?: (event: WatchEvent) => void;
}

const TRANSIENT = ['REQUEST_ERROR', 'PARSE_ERROR', 'INVALID_DATA', 'RATE_LIMIT_EXCEEDED'];

/**
 * Checks until the request is paid: at each interval, or, where the node's
 * WebSocket is known, the moment a send to the address is confirmed and after
 * every (re)connect (with a slow poll behind, as delivery is not guaranteed).
 * Network failures back off and keep trying until the timeout; a failure that
 * will not go away (unknown id, bad key) ends it. The timeout is exact: a check
 * in flight at the deadline is stopped. When it runs out, TIMEOUT (exit 8) if
 * the ledger answered at all, else its failure (exit 5), so a script can tell
 * "not paid" from "could not ask".
 */
export async function watchPayment(session: Session, transactionId: string, options: WatchOptions): Promise<PaymentStatusResult> {
  const id = checkTransactionId(transactionId);
  const started = Date.now();
  const deadline = options.timeoutMs === undefined ? Infinity : started + options.timeoutMs;
  const address = session.backendKind() === 'node' ? (await (await session.dataStore()).requests.get(id.toLowerCase()))?.address : undefined;
  const wake = new Wakeup();
  const feed = address === undefined ? undefined : await confirmations(session, [address], () => wake.wake(), (c) => c.subtype === 'send' && c.linkAsAccount === address);
  let last: string | undefined;
  let backoff = options.intervalMs;
  let answered = false;
  let failure: NanoPayError | undefined;
  try {
    while (Date.now() < deadline) {
      let wait = feed?.live() ? Math.max(options.intervalMs, SAFETY_POLL_MS) : options.intervalMs;
      const limits = [options.signal, deadline === Infinity ? undefined : AbortSignal.timeout(Math.max(1, deadline - Date.now()))];
      const signals = limits.filter((s): s is AbortSignal => s !== undefined);
      try {
        // Once per check: this loop retries, and reports each failure.
        const result = await checkOnce(session, id, { once: true, ...(signals.length === 0 ? {} : { signal: AbortSignal.any(signals) }) });
        answered = true;
        const key = `${result.status}|${result.message}`;
        if (key !== last) options.onEvent?.({ event: 'status', elapsed_ms: Date.now() - started, ...result });
        last = key;
        backoff = options.intervalMs;
        // A refund ends the wait as a payment does: the merchant has settled it.
        if (result.is_paid || result.refund_blocks !== undefined) return result;
        if (result.expired === true) throw expiredUnpaid(result);
        // The check after the expiry comes at the expiry, not up to an interval later.
        if (result.expires_at !== undefined) wait = Math.min(wait, Math.max(1, Date.parse(result.expires_at) - Date.now()));
      } catch (error) {
        if (options.signal?.aborted) throw new NanoPayError('CANCELLED', 'Stopped watching');
        if (error instanceof NanoPayError && error.code === 'REQUEST_EXPIRED') throw error;
        if (Date.now() >= deadline) break;
        if (!(error instanceof NanoPayError) || !TRANSIENT.includes(error.code)) throw error;
        failure = error;
        backoff = Math.min(backoff * 2, 30_000);
        wait = backoff;
        options.onEvent?.({ event: 'error', elapsed_ms: Date.now() - started, code: error.code, message: error.message, retry_in_ms: wait });
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0) break;
      await wake.wait(Math.min(wait, remaining), options.signal);
    }
  } finally {
    feed?.close();
  }
  const seconds = Math.round((options.timeoutMs ?? 0) / 1000);
  if (!answered) {
    const why = failure === undefined ? 'it did not answer' : failure.message;
    const node = session.backendKind() === 'node';
    throw new NanoPayError(failure?.code ?? 'REQUEST_ERROR', `The ${node ? 'node' : 'service'} could not be asked for ${seconds} s: ${why}`, {
      hint: `Check the ${node ? 'node URL (NANOPAY_NODE_URL)' : 'API URL (NANOPAY_API_URL)'} and your network, then watch again.`,
    });
  }
  throw new NanoPayError('TIMEOUT', `Not paid after ${seconds} s`, { hint: 'Run the watch again, or a longer --timeout.' });
}

/** The end of a watch at the request's expiry: its own code (exit 11), with what arrived, if anything. */
function expiredUnpaid(result: PaymentStatusResult): NanoPayError {
  return new NanoPayError('REQUEST_EXPIRED', `The request expired at ${result.expires_at} unpaid: ${result.message}`, {
    hint: result.paid_late === undefined ? 'Make a new request if the customer still wants to pay.' : 'The late payment is in the account: honour the order or refund the payer.',
  });
}

/** Pays a nano: URI exactly: its address and raw amount, through the same path as send. */
export async function payUri(session: Session, uri: string, input: Omit<SendInput, 'to' | 'amount'>): Promise<SendResult & { uri: string }> {
  const parsed = parseNanoUri(uri);
  if (parsed.scheme !== 'nano' && parsed.scheme !== 'xrb') throw new NanoPayError('INVALID_URI', `A ${parsed.scheme}: URI is not a payment`);
  if (parsed.amountRaw === undefined || parsed.amountRaw === 0n) {
    throw new NanoPayError('INVALID_URI', 'The URI has no amount: use nanopay send <address> <amount> to choose one');
  }
  return { ...(await send(session, { ...input, to: parsed.address, amount: { raw: parsed.amountRaw } })), uri };
}
