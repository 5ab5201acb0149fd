import { NanoPayError } from '../../errors.js';
import { rawToXno } from '../../nano/index.js';
import type { Session } from '../../ops/session.js';
import { answeredWithin, fetchWithPayment, maximum, payerNetwork, reach, readRequired, readSettlement } from '../client.js';
import type { Transport } from '../local-hosts.js';
import { paymentIdFor, withPaymentId } from '../answers.js';
import { HEADERS, X402_VERSION, decodeHeader, encodeHeader, parsePaymentRequired, type SettleResponse } from '../protocol.js';
import { requestDigest, signWithSessionKey, voucherMessage, type Voucher } from './wire.js';
import { inTurn, liveOf, resync, save, saveCount, standingOf, type BuyerSession, type SessionFetch, type SessionFetchOptions, type SessionPayment } from './buyer-book.js';
import { openSession, sessionFor, sessionOffer, topUp } from './buyer-deposits.js';
/** How many vouchers sent under payment ids a session keeps (for reruns). */
const NAMED_KEPT = 256;

const priceKey = (init: RequestInit, url: URL): string => `${(init.method ?? 'GET').toUpperCase()} ${url.pathname}`;

/** Why a 402 answer refused a voucher (its PAYMENT-REQUIRED's error; "refused" when it says none). */
function refusalOf(response: Response): string {
  const header = response.headers.get(HEADERS.required);
  if (header === null) return 'refused';
  try {
    return parsePaymentRequired(decodeHeader(header, 'PAYMENT-REQUIRED')).error ?? 'refused';
  } catch {
    return 'refused';
  }
}

/** The body's bytes as fetch will send them (a voucher names them). */
async function bodyBytes(init: RequestInit): Promise<Uint8Array | undefined> {
  if (init.body === undefined || init.body === null) return undefined;
  return new Uint8Array(await new Response(init.body).arrayBuffer());
}

/** How a voucher reaches the seller (an HTTP request's header, an MCP call's _meta), and what came back. */
export interface VoucherCarrier<A> {
  /** The request the voucher names (requestDigest, or toolDigest). */
  request: string;
  send(payment: Record<string, unknown>): Promise<{ answer: A; refusal?: string; settlement: SettleResponse | null; ok: boolean }>;
}

/**
 * One call paid by voucher: counter one above the last, spent = what was
 * charged + the price (a metered route's ceiling), within the deposit, for
 * this very request (under a payment id, the voucher sent before under it).
 * The answer's standing must be within what the vouchers allowed; it becomes
 * what the next voucher builds on.
 */
async function payByVoucher<A>(session: Session, s: BuyerSession, carrier: VoucherCarrier<A>, priceRaw: bigint, paymentId?: string): Promise<{ answer?: A; paid?: SessionPayment; refusal?: string }> {
  const again = paymentId === undefined ? undefined : s.named?.[paymentId];
  if (again !== undefined && again.request !== carrier.request) {
    throw new NanoPayError('IDEMPOTENCY_MISMATCH', `The key paid for another request in session ${s.id}; nothing was paid`, { hint: 'Use a new --id for a new request.' });
  }
  const spent = again === undefined ? BigInt(s.chargedRaw) + priceRaw : BigInt(again.spent);
  if (spent > BigInt(s.depositRaw)) return { refusal: 'insufficient_funds' };
  let voucher = again;
  if (voucher === undefined) {
    const unsigned: Omit<Voucher, 'signature'> = { session: s.id, counter: s.counter + 1, spent: spent.toString(), request: carrier.request };
    voucher = { ...unsigned, signature: signWithSessionKey(s.seed, voucherMessage(unsigned)) };
  }
  s.counter = Math.max(s.counter, voucher.counter);
  if (spent > BigInt(s.allowedRaw)) s.allowedRaw = spent.toString();
  if (paymentId !== undefined && again === undefined) {
    // On disk before it leaves: a rerun under the same id presents this voucher again, and gets its first answer.
    const kept = Object.entries(s.named ?? {}).slice(-(NAMED_KEPT - 1));
    s.named = Object.fromEntries([...kept, [paymentId, voucher]]);
    await save(session, s);
  }
  const sent = await carrier.send({ x402Version: X402_VERSION, accepted: s.requirement, payload: voucher, ...(paymentId === undefined ? {} : { extensions: withPaymentId(paymentId) }) });
  if (sent.refusal !== undefined) {
    // Not taken: the id is free again. A voucher sent again and refused was never charged (its call failed): a new one pays.
    if (paymentId !== undefined) delete s.named?.[paymentId];
    if (again !== undefined) return payByVoucher(session, s, carrier, priceRaw, paymentId);
    if (ENDED.has(sent.refusal)) s.state = 'closed';
    return { answer: sent.answer, refusal: sent.refusal };
  }
  const standing = sent.settlement?.session;
  if (!sent.ok || sent.settlement?.success !== true || standing === undefined) return { answer: sent.answer };
  const charged = /^\d+$/.test(standing.spent_raw) ? BigInt(standing.spent_raw) : -1n;
  const before = again === undefined ? BigInt(s.chargedRaw) : 0n;
  if (standing.id !== s.id || charged < before || charged > BigInt(s.allowedRaw)) {
    throw new NanoPayError('SERVICE_INCONSISTENT', `The seller says session ${s.id} now stands at ${standing.spent_raw} raw; our vouchers allowed ${s.allowedRaw} raw. Nothing more is paid in it`);
  }
  const amountText = sent.settlement.amount;
  const amount = amountText !== undefined && /^\d+$/.test(amountText) ? BigInt(amountText) : charged - BigInt(s.chargedRaw);
  if (charged > BigInt(s.chargedRaw)) s.chargedRaw = charged.toString();
  return {
    answer: sent.answer,
    paid: {
      session: s.id,
      pay_to: s.payTo,
      counter: voucher.counter,
      amount: rawToXno(amount),
      amount_raw: amount.toString(),
      spent_raw: charged.toString(),
      remaining_raw: (BigInt(s.depositRaw) - charged).toString(),
      opened: false,
      repeated: again !== undefined,
    },
  };
}

/** An HTTP request as a voucher's carrier: the voucher in PAYMENT-SIGNATURE, the standing in PAYMENT-RESPONSE. */
async function httpCarrier(url: string, init: RequestInit, transport: Transport): Promise<VoucherCarrier<Response>> {
  const target = new URL(url);
  const body = await bodyBytes(init);
  return {
    request: requestDigest(init.method ?? 'GET', `${target.pathname}${target.search}`, body),
    send: async (payment) => {
      const headers = new Headers(init.headers);
      headers.set(HEADERS.signature, encodeHeader(payment));
      const response = await transport(url, { ...init, ...(body === undefined ? {} : { body }), headers, redirect: 'manual' });
      if (response.status !== 402) return { answer: response, settlement: readSettlement(response), ok: response.status < 400 };
      await response.arrayBuffer().catch(() => undefined);
      return { answer: response, refusal: refusalOf(response), settlement: null, ok: false };
    },
  };
}

/**
 * A call in session `s` through `carrier`, taking what the seller says in
 * the way: its count asked again and the call made once more (a buyer that
 * lost count), a spent deposit topped up (`spendUrl` is what the policy
 * judges the top-up as), a session it ended marked closed.
 */
export async function payInSession<A>(
  session: Session,
  s: BuyerSession,
  carrier: VoucherCarrier<A>,
  priceRaw: bigint,
  options: SessionFetchOptions & { spendUrl: string; transport: Transport; paymentId?: string },
): Promise<{ answer?: A; paid?: SessionPayment; refusal?: string }> {
  return inTurn(session, s, async (held) => {
    let call = await payByVoucher(session, held, carrier, priceRaw, options.paymentId);
    if (call.refusal !== undefined && RESYNC.has(call.refusal)) {
      const standing = await standingOf(held, options.transport);
      if (standing !== undefined) resync(held, standing);
      call = await payByVoucher(session, held, carrier, priceRaw, options.paymentId);
    }
    if (call.refusal === 'insufficient_funds') {
      await topUp(session, held, options, options.spendUrl, options.transport);
      call = await payByVoucher(session, held, carrier, priceRaw, options.paymentId);
    }
    await saveCount(session, held);
    return call;
  });
}

/** Reasons a call in a session is refused that the session's own standing (asked again) settles. */
const RESYNC = new Set(['voucher_replayed', 'invalid_amount', 'session_busy']);
/** Reasons that end the session for us: a new one is opened. */
const ENDED = new Set(['session_unknown', 'session_closed', 'session_expired']);

/**
 * fetch in a `nano-session`: a call to an origin where this wallet holds an
 * open session is paid by voucher at once (the price learnt from the
 * seller's earlier 402); otherwise the 402's session offer is taken with a
 * new deposit (within the spending policy), and the call paid in it. A
 * server that offers no session is paid per call (`exact`), as fetch does.
 */
export async function fetchInSession(session: Session, input: string | URL, init: RequestInit = {}, options: SessionFetchOptions = {}): Promise<SessionFetch> {
  const url = String(input);
  const transport = answeredWithin(options.transport ?? fetch, session.deadlineMs());
  const origin = new URL(url).origin;
  const paymentId = options.id === undefined ? undefined : paymentIdFor(session.profileName, options.id);
  const key = priceKey(init, new URL(url));
  const known = [...liveOf(session).values()].map((e) => e.s).find((s) => s.origin === origin && s.state === 'open' && s.prices[key] !== undefined);
  if (known !== undefined) {
    const first = await inTurn(session, known, async (s) => {
      const call = await payByVoucher(session, s, await httpCarrier(url, init, transport), BigInt(s.prices[key] as string), paymentId);
      await saveCount(session, s);
      return call;
    });
    if ((first.paid !== undefined || first.refusal === undefined) && first.answer !== undefined) return { response: first.answer, ...(first.paid === undefined ? {} : { session: first.paid }) };
  }
  const reached = await reach(url, init, options.signal, transport);
  if (reached.response.status !== 402) return { response: reached.response, ...(reached.redirect === undefined ? {} : { redirect: reached.redirect }) };
  await reached.response.arrayBuffer();
  const required = readRequired(reached.response);
  const maxRaw = maximum(session, options.maxXno);
  const ctx = await session.context(options.signal);
  const offer = sessionOffer(required.accepts, await payerNetwork(session, ctx), maxRaw);
  if (offer === undefined) return fetchWithPayment(session, url, init, options);
  const price = BigInt(offer.amount);
  // A session the seller ended meanwhile (closed elsewhere, idle, expired) is marked so, and a new one opened once.
  for (let attempt = 0; ; attempt++) {
    let s = await sessionFor(session, origin, offer, transport);
    const opened = s === undefined;
    s ??= await openSession(session, reached.url, offer, options, transport);
    s.prices[key] = price.toString();
    const made = await payInSession(session, s, await httpCarrier(reached.url, reached.init, transport), price, {
      ...options,
      spendUrl: reached.url,
      transport,
      ...(paymentId === undefined ? {} : { paymentId }),
    });
    if (made.refusal !== undefined && ENDED.has(made.refusal) && !opened && attempt === 0) continue;
    if (made.refusal !== undefined) {
      throw new NanoPayError('X402_UNPAYABLE', `The seller refused a voucher of session ${s.id} (${made.refusal}); nothing was charged for this call`, {
        hint:
          ENDED.has(made.refusal)
              ? 'The next call opens a new session.'
              : 'Try again.',
      });
    }
    if (made.answer === undefined) throw new NanoPayError('X402_UNPAYABLE', `The session ${s.id} cannot pay this call; nothing was charged`);
    return { response: made.answer, ...(made.paid === undefined ? {} : { session: { ...made.paid, opened } }) };
  }
}

