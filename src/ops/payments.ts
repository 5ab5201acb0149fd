import { setTimeout as sleep } from 'node:timers/promises';
import { checkRedirectUrl, isTransactionId } from '../api/contract.js';
import { ExitCode, NanoPayError } from '../errors.js';
import { buildNanoUri, normalizeAddress, parseNanoUri, rawToXno, xnoToRaw } from '../nano/index.js';
import { rawOf, type Amount } from './money.js';
import { send, type SendInput, type SendResult } from './send.js';
import type { Session } from './session.js';

export { checkRedirectUrl };

export interface PaymentRequestResult {
  transaction_id: string;
  receive_address: string;
  /** The adjusted amount: the payer must send exactly this. */
  amount: string;
  amount_raw: string;
  /** nano:<address>?amount=<raw>, the standard URI (and QR content). */
  uri: string;
  redirect_url?: string;
}


/** Creates a payment request; the receive address defaults to the active account. */
export async function requestPayment(session: Session, input: { amount: Amount; to?: string; redirectUrl?: string }): Promise<PaymentRequestResult> {
  const baseRaw = rawOf(input.amount);
  if (baseRaw <= 0n) throw new NanoPayError('INVALID_NUMBER_FORMAT', 'The amount must be greater than zero');
  checkRedirectUrl(input.redirectUrl);
  const to = input.to === undefined ? (await session.account()).address : normalizeAddress(input.to);
  const api = await session.api();
  const created = await api.paymentRequest({ receiveAddress: to, amount: rawToXno(baseRaw), ...(input.redirectUrl === undefined ? {} : { redirectUrl: input.redirectUrl }) });
  const amountRaw = xnoToRaw(created.amount);
  const address = normalizeAddress(created.receiveAddress);
  return {
    transaction_id: created.transactionId,
    receive_address: address,
    amount: created.amount,
    amount_raw: amountRaw.toString(),
    uri: buildNanoUri({ address, amountRaw }),
    ...(input.redirectUrl === undefined ? {} : { redirect_url: input.redirectUrl }),
  };
}

export interface PaymentStatusResult {
  transaction_id: string;
  is_paid: boolean;
  message: string;
  amount?: string;
}

export function checkTransactionId(id: string): string {
  // Malformed is invalid input (400, exit 3); a well-formed id the service does not know stays not found (404, exit 9).
  if (!isTransactionId(id)) {
    throw new NanoPayError('INVALID_TRANSACTION_ID', `"${id.slice(0, 80)}" is not a transaction id (a UUID)`, { status: 400, exitCode: ExitCode.INVALID_INPUT });
  }
  return id;
}

export async function paymentStatus(session: Session, transactionId: string): Promise<PaymentStatusResult> {
  const id = checkTransactionId(transactionId);
  const status = await (await session.api()).paymentStatus(id);
  return {
    transaction_id: status.transactionId,
    is_paid: status.isPaid,
    message: status.message,
    ...(status.amount === undefined ? {} : { amount: status.amount }),
  };
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
 * Polls until the request is paid. Network failures back off and keep trying
 * until the timeout; a failure that will not go away (unknown id, bad key) ends it.
 * The timeout is exact: a poll in flight at the deadline is stopped. When it
 * runs out, TIMEOUT (exit 8) if the service answered at all, else the service's
 * failure (exit 5), so a script can tell "not paid" from "could not ask".
 */
export async function watchPayment(session: Session, transactionId: string, options: WatchOptions): Promise<PaymentStatusResult> {
  const id = checkTransactionId(transactionId);
  const api = await session.api();
  const started = Date.now();
  const deadline = options.timeoutMs === undefined ? Infinity : started + options.timeoutMs;
  const cancelled = (): NanoPayError => new NanoPayError('CANCELLED', 'Stopped watching');
  let last: string | undefined;
  let backoff = options.intervalMs;
  let answered = false;
  let failure: NanoPayError | undefined;
  while (Date.now() < deadline) {
    let wait = options.intervalMs;
    const limits = [options.signal, deadline === Infinity ? undefined : AbortSignal.timeout(Math.max(1, deadline - Date.now()))];
    const signals = limits.filter((s): s is AbortSignal => s !== undefined);
    try {
      // Once per poll: this loop retries, and reports each failure.
      const s = await api.paymentStatus(id, { once: true, ...(signals.length === 0 ? {} : { signal: AbortSignal.any(signals) }) });
      answered = true;
      const result: PaymentStatusResult = { transaction_id: s.transactionId, is_paid: s.isPaid, message: s.message, ...(s.amount === undefined ? {} : { amount: s.amount }) };
      const key = `${result.is_paid}|${result.message}`;
      if (key !== last) options.onEvent?.({ event: 'status', elapsed_ms: Date.now() - started, ...result });
      last = key;
      backoff = options.intervalMs;
      if (result.is_paid) return result;
    } catch (error) {
      if (options.signal?.aborted) throw cancelled();
      if (Date.now() >= deadline) break;
      if (!(error instanceof NanoPayError) || !TRANSIENT.includes(error.code)) throw error;
      failure = error;
      backoff = Math.min(backoff * 2, 30_000);
      wait = backoff;
      options.onEvent?.({ event: 'error', elapsed_ms: Date.now() - started, code: error.code, message: error.message, retry_in_ms: wait });
    }
    const remaining = deadline - Date.now();
    if (remaining <= 0) break;
    try {
      await sleep(Math.min(wait, remaining), undefined, options.signal === undefined ? {} : { signal: options.signal });
    } catch {
      throw cancelled();
    }
  }
  const seconds = Math.round((options.timeoutMs ?? 0) / 1000);
  if (!answered) {
    const why = failure === undefined ? 'it did not answer' : failure.message;
    throw new NanoPayError(failure?.code ?? 'REQUEST_ERROR', `The service could not be asked for ${seconds} s: ${why}`, {
      hint: 'Check the API URL (NANOPAY_API_URL) and your network, then watch again.',
    });
  }
  throw new NanoPayError('TIMEOUT', `Not paid after ${seconds} s`, { hint: 'Run the watch again, or a longer --timeout.' });
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
