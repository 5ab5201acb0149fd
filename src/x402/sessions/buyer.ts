import { readdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { NanoPayError } from '../../errors.js';
import { readIfExists, writeFileAtomic } from '../../fs/secure-fs.js';
import { hashBlock, isStateBlock, isValidAddress, linkAsAccount, normalizeAddress, rawToXno, xnoToRaw, type StateBlock } from '../../nano/index.js';
import { recordId } from '../../ops/spending/spend-log.js';
import { move } from '../../ops/spending/movement.js';
import { seenConfirmed } from '../../ops/ledger/confirmed-wait.js';
import type { Session } from '../../ops/session.js';
import { stateDir } from '../../wallet/paths.js';
import { answeredWithin, boundedWork, confirmedHead, fetchWithPayment, maximum, payerNetwork, reach, readRequired, readSettlement, statedThreshold, x402Spend, type PaidFetch, type PaidFetchOptions } from '../client.js';
import type { Transport } from '../local-hosts.js';
import { paymentIdFor, withPaymentId } from '../answers.js';
import { HEADERS, X402_ASSET, X402_VERSION, decodeHeader, encodeHeader, parsePaymentRequired, type PaymentRequirements, type SettleResponse } from '../protocol.js';
import { checkReceipt } from './receipts.js';
import type { SessionReceipt } from './seller.js';
import { SESSION_SCHEME, closeMessage, newSessionKey, openMessage, requestDigest, signWithSessionKey, verifySessionSignature, voucherMessage, type Voucher } from './wire.js';

/** A session as its buyer keeps it (a file each, 0600 in the profile's state dir: the session key's seed spends its deposit). */
export interface BuyerSession {
  id: string;
  /** Where the seller takes openings, top-ups and closes. */
  sessionsUrl: string;
  origin: string;
  network: string;
  payTo: string;
  payer: string;
  wallet?: string;
  index?: number;
  seed: string;
  sessionKey: string;
  /** The requirement offered, echoed in every voucher's payload. */
  requirement: PaymentRequirements;
  /** The opening block and the account's signature of the opening, presented again if their answer was lost. */
  block: StateBlock;
  openSignature?: string;
  depositRaw: string;
  /** The opening deposit: what a top-up adds unless --session-deposit says. */
  openingRaw?: string;
  /** The highest `spent` a voucher of ours allowed: the most the seller can ever keep. */
  allowedRaw: string;
  /** What the seller said it charged so far (never above allowedRaw). */
  chargedRaw: string;
  counter: number;
  /** Prices learnt from the seller's 402s, by "METHOD path": the next call pays at once. */
  prices: Record<string, string>;
  state: 'opening' | 'open' | 'closed';
  openedAt: string;
  /** Vouchers sent under a payment id (--id), the latest last: a rerun with the same id sends the same one, and gets its first answer. */
  named?: Record<string, Voucher>;
  receipt?: SessionReceipt;
  refundConfirmed?: boolean;
}

/** What a call paid in a session, as `fetch --json` shows it. */
export interface SessionPayment {
  session: string;
  pay_to: string;
  counter: number;
  amount: string;
  amount_raw: string;
  spent_raw: string;
  remaining_raw: string;
  opened: boolean;
  /** The answer to a voucher sent before under this payment id (--id): nothing more was charged. */
  repeated: boolean;
}

export interface SessionFetchOptions extends PaidFetchOptions {
  /** The deposit a new session gets (XNO); default the seller's least deposit. */
  depositXno?: string;
}

export interface SessionFetch extends PaidFetch {
  session?: SessionPayment;
}

const dirOf = (session: Session): string => join(stateDir(session.dir, 'x402'), 'buyer-sessions');
const fileOf = (session: Session, id: string): string => join(dirOf(session), `${id}.json`);
const save = (session: Session, s: BuyerSession): Promise<void> => writeFileAtomic(fileOf(session, s.id), JSON.stringify(s));
/**
 * After a call: the count kept for `nanopay sessions` and the next process,
 * renamed into place without an fsync (a count lost to a power cut is asked
 * of the seller again, proved by its voucher, see resync).
 */
async function saveCount(session: Session, s: BuyerSession): Promise<void> {
  const path = fileOf(session, s.id);
  await writeFile(`${path}.${process.pid}.tmp`, JSON.stringify(s), { mode: 0o600 });
  await rename(`${path}.${process.pid}.tmp`, path);
}

/** Sessions this process uses, by profile dir: each one's calls go one at a time (a voucher builds on the last answer). */
const live = new Map<string, Map<string, { s: BuyerSession; turn: Promise<unknown> }>>();
const liveOf = (session: Session): Map<string, { s: BuyerSession; turn: Promise<unknown> }> => {
  const key = `${session.dir}\n${session.profileName}`;
  let found = live.get(key);
  if (found === undefined) live.set(key, (found = new Map()));
  return found;
};

/** The buyer's sessions on disk, newest first. */
export async function buyerSessions(session: Session): Promise<BuyerSession[]> {
  const names = await readdir(dirOf(session)).catch(() => [] as string[]);
  const found: BuyerSession[] = [];
  for (const name of names.filter((n) => n.endsWith('.json'))) {
    const text = await readIfExists(join(dirOf(session), name));
    if (text !== undefined) found.push(JSON.parse(text) as BuyerSession);
  }
  return found.sort((a, b) => b.openedAt.localeCompare(a.openedAt));
}

async function buyerSession(session: Session, id: string): Promise<BuyerSession> {
  const text = await readIfExists(fileOf(session, id.toUpperCase()));
  if (text === undefined) throw new NanoPayError('NOT_FOUND', `No session ${id} in this profile`, { hint: 'nanopay sessions lists them.' });
  return JSON.parse(text) as BuyerSession;
}

/** The seller's word on a session (GET): its standing, and the receipt once closed. */
async function standingOf(s: BuyerSession, transport: Transport): Promise<Record<string, unknown> | undefined> {
  const response = await transport(`${s.sessionsUrl}/${s.id}`, { method: 'GET', redirect: 'manual' });
  if (response.status === 404) return undefined;
  const body = (await response.json().catch(() => undefined)) as Record<string, unknown> | undefined;
  if (!response.ok || body === undefined) throw new NanoPayError('X402_UNSETTLED', `The seller did not say where session ${s.id} stands (HTTP ${response.status})`);
  return body;
}

/**
 * Takes the seller's standing as ours (a buyer that lost count: another
 * process, a crash): what it charged must be within what our vouchers
 * allowed, as we recorded it or as the highest voucher it shows proves (signed
 * with our session key); the counter goes on from its.
 */
function resync(s: BuyerSession, standing: Record<string, unknown>): void {
  const charged = typeof standing.spent_raw === 'string' && /^\d+$/.test(standing.spent_raw) ? BigInt(standing.spent_raw) : undefined;
  const shown = standing.voucher as Voucher | null | undefined;
  let proven = false;
  try {
    proven = shown !== null && shown !== undefined && shown.session === s.id && verifySessionSignature(s.sessionKey, voucherMessage(shown), shown.signature);
  } catch {
    proven = false;
  }
  if (proven && BigInt((shown as Voucher).spent) > BigInt(s.allowedRaw)) s.allowedRaw = (shown as Voucher).spent;
  if (charged === undefined || charged > BigInt(s.allowedRaw)) {
    throw new NanoPayError('SERVICE_INCONSISTENT', `The seller says session ${s.id} spent ${String(standing.spent_raw)} raw, above the ${s.allowedRaw} raw our vouchers allowed; nothing more is paid in it`);
  }
  s.chargedRaw = charged.toString();
  const counter = Math.max(proven ? (shown as Voucher).counter : 0, typeof standing.counter === 'number' ? standing.counter : 0);
  if (counter > s.counter) s.counter = counter;
  if (standing.state === 'open') s.state = 'open';
  else if (standing.state === 'closing' || standing.state === 'closed') s.state = 'closed';
}

/** The session offer in a 402 this wallet can take: on its network, in XNO, to a Nano address, within the maximum a call. */
function sessionOffer(accepts: readonly PaymentRequirements[], network: string, maxRaw: bigint): PaymentRequirements | undefined {
  return accepts.find((a) => a.scheme === SESSION_SCHEME && a.network === network && a.asset === X402_ASSET && isValidAddress(a.payTo) && BigInt(a.amount) > 0n && BigInt(a.amount) <= maxRaw && typeof a.extra?.sessions === 'string');
}

/**
 * Opens a session on `offer`: a new session key, its seed saved with the
 * signed deposit before the deposit leaves (a crash after it leaves can still
 * use, close or get back the session), the deposit sent through the one
 * guarded money path (policy, approvals, journal) and presented with the
 * account's signature binding the session key. Counted paid only once our
 * own ledger shows the deposit confirmed.
 */
async function openSession(session: Session, url: string, offer: PaymentRequirements, options: SessionFetchOptions, transport: Transport): Promise<BuyerSession> {
  const extra = offer.extra ?? {};
  const sessionsUrl = String(extra.sessions);
  // An HTTP seller's endpoint is on the origin asked; an MCP server (url: mcp:SERVER/TOOL) names its own.
  if (!URL.canParse(sessionsUrl) || !/^https?:$/.test(new URL(sessionsUrl).protocol) || (!url.startsWith('mcp:') && new URL(sessionsUrl).origin !== new URL(url).origin)) {
    throw new NanoPayError('X402_UNPAYABLE', `The server's session endpoint ${sessionsUrl} is not on ${url.startsWith('mcp:') ? 'http(s)' : new URL(url).origin}; nothing was paid`);
  }
  const least = typeof extra.minDeposit === 'string' && /^\d+$/.test(extra.minDeposit) ? BigInt(extra.minDeposit) : BigInt(offer.amount);
  const depositRaw = options.depositXno === undefined ? least : xnoToRaw(options.depositXno);
  if (depositRaw < least) throw new NanoPayError('X402_UNPAYABLE', `The server's least session deposit is ${rawToXno(least)} XNO; ${rawToXno(depositRaw)} XNO was asked; nothing was paid`);
  const ctx = boundedWork(await session.context(options.signal), session.workBoundMs());
  const signer = await session.account(options.wallet, options.index);
  const key = newSessionKey();
  const threshold = statedThreshold(offer);
  const depositRequirement: PaymentRequirements = { ...offer, amount: depositRaw.toString() };
  let opened: BuyerSession | undefined;
  await move(ctx, {
    signer,
    to: offer.payTo,
    amountRaw: depositRaw,
    note: { chequeFor: sessionsUrl },
    spend: x402Spend(url, depositRequirement, options.approval, undefined),
    ...(threshold === undefined ? {} : { workThreshold: threshold }),
    readHead: confirmedHead(ctx, signer.address, 15_000, options.signal),
    ...(options.confirm === undefined ? {} : { confirm: options.confirm }),
    submit: async (block) => {
      const id = hashBlock(block);
      const { signature } = await session.signSessionMessage(openMessage(offer.network, offer.payTo, id, key.publicKey), options.wallet, options.index);
      const s: BuyerSession = {
        id,
        sessionsUrl,
        origin: new URL(sessionsUrl).origin,
        network: offer.network,
        payTo: normalizeAddress(offer.payTo),
        payer: signer.address,
        ...(options.wallet === undefined ? {} : { wallet: options.wallet }),
        ...(options.index === undefined ? {} : { index: options.index }),
        seed: key.seed,
        sessionKey: key.publicKey,
        requirement: offer,
        block,
        openSignature: signature,
        depositRaw: depositRaw.toString(),
        openingRaw: depositRaw.toString(),
        allowedRaw: '0',
        chargedRaw: '0',
        counter: 0,
        prices: {},
        state: 'opening',
        openedAt: new Date().toISOString(),
      };
      await save(session, s);
      await presentDeposit(ctx.api, s, block, depositRaw, transport, { sessionKey: key.publicKey, signature });
      s.state = 'open';
      await save(session, s);
      opened = s;
    },
  });
  if (opened === undefined) throw new NanoPayError('INTERNAL_ERROR', 'The session deposit was not presented');
  return opened;
}

/**
 * Tops up an open session whose deposit is spent: another deposit of the
 * same amount as the first (or --session-deposit), through the same guarded
 * path, presented to the session's top-up endpoint.
 */
async function topUp(session: Session, s: BuyerSession, options: SessionFetchOptions, url: string, transport: Transport): Promise<void> {
  const raw = options.depositXno === undefined ? BigInt(s.openingRaw ?? s.depositRaw) : xnoToRaw(options.depositXno);
  const ctx = boundedWork(await session.context(options.signal), session.workBoundMs());
  const signer = await session.account(s.wallet, s.index);
  const threshold = statedThreshold(s.requirement);
  await move(ctx, {
    signer,
    to: s.payTo,
    amountRaw: raw,
    note: { chequeFor: `${s.sessionsUrl}/${s.id}/deposit` },
    spend: x402Spend(url, { ...s.requirement, amount: raw.toString() }, options.approval, undefined),
    ...(threshold === undefined ? {} : { workThreshold: threshold }),
    readHead: confirmedHead(ctx, signer.address, 15_000, options.signal),
    ...(options.confirm === undefined ? {} : { confirm: options.confirm }),
    submit: async (block) => {
      await presentDeposit(ctx.api, s, block, raw, transport);
      s.depositRaw = (BigInt(s.depositRaw) + raw).toString();
      await save(session, s);
    },
  });
}

/** Presents a deposit (an opening, or a top-up of `s`) and waits for our ledger to show it confirmed. */
async function presentDeposit(api: Awaited<ReturnType<Session['api']>>, s: BuyerSession, block: StateBlock, raw: bigint, transport: Transport, opening?: { sessionKey: string; signature: string }): Promise<void> {
  const hash = hashBlock(block);
  const payload = { x402Version: X402_VERSION, accepted: s.requirement, payload: { block: { ...block, link_as_account: linkAsAccount(block.link) }, deposit: raw.toString(), ...(opening ?? {}) } };
  const target = opening === undefined ? `${s.sessionsUrl}/${s.id}/deposit` : s.sessionsUrl;
  const response = await transport(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(payload), redirect: 'manual' }).catch((error: unknown) => {
    throw new NanoPayError('X402_UNSETTLED', `Presenting the session deposit ${hash} failed (${error instanceof Error ? error.message : String(error)}); it is outstanding`, {
      hint: 'nanopay sessions resumes it; the seller refunds a session that sits idle.',
    });
  });
  const body = (await response.json().catch(() => ({}))) as Record<string, unknown>;
  if (!(await seenConfirmed(api, hash, response.ok ? 15_000 : 0))) {
    throw new NanoPayError('X402_UNSETTLED', `The seller answered HTTP ${response.status}${typeof body.error === 'string' ? ` (${body.error}: ${String(body.message)})` : ''}, and our ledger does not show the deposit ${hash} confirmed; nothing more was paid`, {
      hint: 'The block is an outstanding cheque: the account\'s next block cancels it, or it lands and the seller refunds the idle session.',
    });
  }
  if (!response.ok || body.session !== s.id) throw new NanoPayError('X402_UNSETTLED', `The deposit ${hash} is confirmed, but the seller answered HTTP ${response.status} without the session; nanopay sessions close ${s.id} asks for it back`);
}

/** One call at a time per session (a voucher builds on the last one's answer), across this process. */
function inTurn<T>(session: Session, s: BuyerSession, fn: (s: BuyerSession) => Promise<T>): Promise<T> {
  const sessions = liveOf(session);
  let entry = sessions.get(s.id);
  if (entry === undefined) sessions.set(s.id, (entry = { s, turn: Promise.resolve() }));
  const held = entry;
  const run = held.turn.then(() => fn(held.s));
  held.turn = run.catch(() => undefined);
  return run;
}

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

/**
 * The session an MCP tool call is paid in: ours with that seller's session
 * endpoint, else a new one (its deposit judged by the policy as a payment to
 * `identity`, mcp:SERVER/TOOL). Undefined when the tool offers none this
 * wallet can take.
 */
export async function toolSession(session: Session, accepts: readonly PaymentRequirements[], identity: string, options: SessionFetchOptions): Promise<{ s: BuyerSession; offer: PaymentRequirements; opened: boolean } | undefined> {
  const transport = answeredWithin(options.transport ?? fetch, session.deadlineMs());
  const offer = sessionOffer(accepts, await payerNetwork(session, await session.context(options.signal)), maximum(session, options.maxXno));
  if (offer === undefined || !URL.canParse(String(offer.extra?.sessions))) return undefined;
  const found = await sessionFor(session, new URL(String(offer.extra?.sessions)).origin, offer, transport);
  return found === undefined ? { s: await openSession(session, identity, offer, options, transport), offer, opened: true } : { s: found, offer, opened: false };
}

/** An open session of ours with this seller: in this process, else on disk (its standing asked of the seller). */
async function sessionFor(session: Session, origin: string, offer: PaymentRequirements, transport: Transport): Promise<BuyerSession | undefined> {
  const payTo = normalizeAddress(offer.payTo);
  const held = [...liveOf(session).values()].map((e) => e.s).find((s) => s.origin === origin && s.payTo === payTo && s.network === offer.network && s.state === 'open');
  if (held !== undefined) return held;
  for (const s of await buyerSessions(session)) {
    if (s.origin !== origin || s.payTo !== payTo || s.network !== offer.network || s.state === 'closed') continue;
    let standing = await standingOf(s, transport).catch(() => undefined);
    if (standing === undefined && s.state === 'opening') standing = await resumeOpening(session, s, transport);
    if (standing === undefined) continue;
    resync(s, standing);
    if (s.state !== 'open') {
      await save(session, s);
      continue;
    }
    liveOf(session).set(s.id, { s, turn: Promise.resolve() });
    return s;
  }
  return undefined;
}

/**
 * An opening whose answer this profile never got (the process died): the
 * same deposit block and signature presented again, which the seller
 * answers with the same session. One the ledger never took (cancelled by the
 * account's next block) is marked closed: nothing was spent.
 */
async function resumeOpening(session: Session, s: BuyerSession, transport: Transport): Promise<Record<string, unknown> | undefined> {
  if (s.openSignature === undefined) return undefined;
  try {
    await presentDeposit(await session.api(), s, s.block, BigInt(s.depositRaw), transport, { sessionKey: s.sessionKey, signature: s.openSignature });
  } catch (error) {
    if (!(error instanceof NanoPayError) || error.code !== 'X402_UNSETTLED') throw error;
    if (await session.api().then((api) => api.blockInfo(s.id)).then(() => false, () => true)) {
      s.state = 'closed';
      await save(session, s);
    }
    return undefined;
  }
  s.state = 'open';
  await save(session, s);
  return standingOf(s, transport);
}

export interface ClosedSession {
  session: string;
  deposit: string;
  spent: string;
  refunded: string;
  refund_block: string | null;
  refund_confirmed: boolean;
  receipt: SessionReceipt;
}

/**
 * Closes a session of ours (signed by its session key), or reads the close
 * the seller made (idle, expired): checks the seller's receipt (signatures,
 * sums, what we allowed, our deposits), waits for our own ledger to show the
 * refund block sending us the rest, and records the refund in the audit
 * trail, which frees it in the spending policy's budgets.
 */
export async function closeSession(session: Session, id: string, options: { signal?: AbortSignal; transport?: Transport } = {}): Promise<ClosedSession> {
  const s = liveOf(session).get(id.toUpperCase())?.s ?? (await buyerSession(session, id));
  const transport = answeredWithin(options.transport ?? fetch, session.deadlineMs());
  return inTurn(session, s, async (held) => {
    let standing = await standingOf(held, transport);
    if (standing === undefined) throw new NanoPayError('NOT_FOUND', `The seller does not know session ${held.id}`);
    if (standing.state !== 'closed') {
      const response = await transport(`${held.sessionsUrl}/${held.id}/close`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ signature: signWithSessionKey(held.seed, closeMessage(held.id)) }),
        redirect: 'manual',
      });
      standing = (await response.json().catch(() => undefined)) as Record<string, unknown> | undefined;
      if (!response.ok || standing === undefined) throw new NanoPayError('X402_UNSETTLED', `The seller did not close session ${held.id} (HTTP ${response.status}); try again`);
    }
    const receipt = standing.receipt as SessionReceipt | undefined;
    if (receipt === undefined) throw new NanoPayError('X402_UNSETTLED', `The seller closed session ${held.id} but sent no receipt; try again`);
    const check = checkReceipt(receipt);
    const problems = [...check.problems];
    if (receipt.session !== held.id || receipt.payer !== held.payer || receipt.pay_to !== held.payTo || receipt.session_key !== held.sessionKey) problems.push('the receipt is for another session');
    if (BigInt(receipt.spent_raw) > BigInt(held.allowedRaw)) problems.push(`it says ${receipt.spent_raw} raw spent, above the ${held.allowedRaw} raw our vouchers allowed`);
    if (problems.length > 0) throw new NanoPayError('SERVICE_INCONSISTENT', `The seller's receipt for session ${held.id} does not hold: ${problems.join('; ')}`, { details: { receipt } });
    const ctx = await session.context(options.signal);
    const refund = BigInt(receipt.refund_raw);
    const refundConfirmed = refund === 0n || (receipt.refund_block !== null && (await refundLanded(ctx.api, receipt, options.signal)));
    if (refundConfirmed && held.refundConfirmed !== true && refund > 0n) {
      await (await ctx.store()).audit.add({
        id: recordId(),
        at: new Date(ctx.now()).toISOString(),
        profile: ctx.profile,
        front_end: session.frontEnd,
        kind: 'x402',
        account: held.payer,
        recipient: held.payTo,
        host: new URL(held.origin).host,
        amount_raw: (-refund).toString(),
        decision: 'allowed',
        rule: null,
        message: `session ${held.id} closed: deposit ${rawToXno(BigInt(receipt.deposit_raw))} XNO, spent ${rawToXno(BigInt(receipt.spent_raw))} XNO, refunded ${rawToXno(refund)} XNO`,
        hash: receipt.refund_block as string,
        status: 'paid',
        settled_at: new Date(ctx.now()).toISOString(),
      });
    }
    Object.assign(held, { state: 'closed', receipt, refundConfirmed, chargedRaw: receipt.spent_raw });
    await save(session, held);
    return {
      session: held.id,
      deposit: rawToXno(BigInt(receipt.deposit_raw)),
      spent: rawToXno(BigInt(receipt.spent_raw)),
      refunded: rawToXno(refund),
      refund_block: receipt.refund_block,
      refund_confirmed: refundConfirmed,
      receipt,
    };
  });
}

/** Whether our ledger shows the receipt's refund block confirmed, sending the payer exactly the refund from pay_to. */
async function refundLanded(api: Awaited<ReturnType<Session['api']>>, receipt: SessionReceipt, signal?: AbortSignal): Promise<boolean> {
  const hash = receipt.refund_block as string;
  if (!(await seenConfirmed(api, hash, 15_000, signal))) return false;
  const info = await api.blockInfo(hash);
  const block = info.contents;
  return isStateBlock(block) && info.subtype === 'send' && block.account === receipt.pay_to && linkAsAccount(block.link) === receipt.payer && info.amountRaw === BigInt(receipt.refund_raw);
}

/** A session as `nanopay sessions` shows it: no seed, amounts in XNO and raw. */
export interface SessionShown {
  session: string;
  state: BuyerSession['state'];
  origin: string;
  pay_to: string;
  payer: string;
  deposit: string;
  spent: string;
  remaining: string;
  opened_at: string;
  refunded?: string;
  refund_block?: string | null;
  refund_confirmed?: boolean;
}

export function shownSession(s: BuyerSession): SessionShown {
  const deposit = BigInt(s.depositRaw);
  const spent = BigInt(s.chargedRaw);
  return {
    session: s.id,
    state: s.state,
    origin: s.origin,
    pay_to: s.payTo,
    payer: s.payer,
    deposit: rawToXno(deposit),
    spent: rawToXno(spent),
    remaining: rawToXno(deposit - spent),
    opened_at: s.openedAt,
    ...(s.receipt === undefined ? {} : { refunded: rawToXno(BigInt(s.receipt.refund_raw)), refund_block: s.receipt.refund_block, refund_confirmed: s.refundConfirmed === true }),
  };
}

/** The receipt of a closed session of ours, as the seller signed it. */
export async function sessionReceipt(session: Session, id: string): Promise<SessionReceipt> {
  const s = await buyerSession(session, id);
  if (s.receipt === undefined) throw new NanoPayError('NOT_FOUND', `Session ${s.id} has no receipt yet: it is ${s.state}`, { hint: `Close it first: nanopay sessions close ${s.id}` });
  return s.receipt;
}
