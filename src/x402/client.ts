import { fetchFailure } from '../api/fetch-failure.js';
import { NanoPayError } from '../errors.js';
import { MAX_RAW, hashBlock, isStateBlock, isValidAddress, linkAsAccount, normalizeAddress, rawToXno, xnoToRaw, type StateBlock } from '../nano/index.js';
import type { OpsContext, Signer } from '../ops/context.js';
import { readAccountHead, type AccountHead } from '../ops/ledger/chain.js';
import { rememberConfirmed } from '../ops/ledger/confirmed-blocks.js';
import { seenConfirmed } from '../ops/ledger/confirmed-wait.js';
import { inconsistent } from '../ops/ledger/inconsistent.js';
import { recordLanded } from '../ops/ledger/landed.js';
import type { Session } from '../ops/session.js';
import { hostOfUrl, mcpIdentity } from '../ops/spending/hosts.js';
import { move, type Confirm, type Moved, type Movement } from '../ops/spending/movement.js';
import { payerFor, settleHandedCheque, type Payer } from '../ops/lanes/payer.js';
import { xnoAndRaw } from '../ops/money.js';
import { parseThreshold } from '../work/index.js';
import { backendNetwork } from './network.js';
import { PAYMENT_IDENTIFIER, paymentIdFor, withPaymentId } from './answers.js';
import type { Transport } from './local-hosts.js';
import type { JournalEntry } from '../wallet/journal.js';
import {
  HEADERS,
  X402_ASSET,
  X402_SCHEME,
  decodeHeader,
  encodeHeader,
  parsePaymentRequired,
  parseSettleResponse,
  type PaymentPayload,
  type PaymentRequired,
  type PaymentRequirements,
  type SettleResponse,
} from './protocol.js';

export interface PaidFetchOptions {
  /** The most this request may cost, in XNO; else the profile's x402-max; with neither, nothing is paid. */
  maxXno?: string;
  /** Idempotency key: a rerun presents the same block again (or reports the payment made), never a second one. */
  id?: string;
  wallet?: string;
  index?: number;
  /** Asked before paying more than the profile's x402-auto-pay; false cancels. Absent: pay without asking. */
  confirm?: Confirm;
  signal?: AbortSignal;
  /** How long our own backend is watched for the settled block. Default 15 s. */
  settleWaitMs?: number;
  /** The approval a person gave for this payment (APPROVAL_REQUIRED named it): bound to the host and the requirement. */
  approval?: string;
  /** How requests reach the server (fetch by default; the toolset's reaches public hosts only). */
  transport?: Transport;
}

/** A payment made (or found made under the same id) for a request. */
export interface X402Payment {
  hash: string;
  payer: string;
  pay_to: string;
  amount: string;
  amount_raw: string;
  /** The server's settlement answer, as it came (null when it sent none). */
  settlement: SettleResponse | null;
  /** Whether the server's settlement said success and named this very block (the ledger decided either way). */
  settlement_matches: boolean;
  /** True when the payment had already been made under this id: nothing moved this time. */
  repeated: boolean;
}

export interface PaidFetch {
  response: Response;
  payment?: X402Payment;
  /** A redirect to another origin, returned as it is (not followed): where it pointed. Nothing was paid or sent there. */
  redirect?: string;
}

/**
 * The most the caller will pay for this request (--max). Without it the
 * spending policy's maximum for x402 payments (x402-max) decides, as it does
 * anyway; with neither, nothing is paid, never unbounded.
 */
export function maximum(session: Session, maxXno: string | undefined): bigint {
  if (maxXno !== undefined) return xnoToRaw(maxXno);
  if (session.policy().frontEnds?.x402?.perSend !== undefined) return MAX_RAW;
  throw new NanoPayError('X402_UNPAYABLE', 'The server asks for payment (HTTP 402), and no maximum is set, so nothing was paid', {
    hint: 'Give the most you will pay with --max XNO, or set it once: nanopay config set x402-max 0.01',
  });
}

/**
 * The hardest work a server may ask for: 64 times the expected work at the
 * live send threshold (fffffff800000000, 2^29 hashes on average; this is 2^35).
 * A server stating more would keep the CPU searching for hours, or for ever.
 */
const WORK_BOUND = 'ffffffffe0000000';

/**
 * The cheapest Nano exact requirement on the payer's own network (`network`,
 * its backend's) within the maximum, kept verbatim to be echoed. A requirement
 * on another network is never paid: test money is not real money, nor the reverse.
 */
export function choose(required: PaymentRequired, maxRaw: bigint, network: string): PaymentRequirements {
  const nanoOffers = required.accepts.filter((a) => a.scheme === X402_SCHEME && a.asset === X402_ASSET && isValidAddress(a.payTo) && BigInt(a.amount) > 0n);
  if (nanoOffers.length === 0) {
    const offered = required.accepts.map((a) => `${a.scheme} ${a.network} ${a.asset}`).join('; ');
    throw new NanoPayError('X402_UNPAYABLE', `The server accepts no Nano payment (it offers: ${offered}); nothing was paid`);
  }
  const offers = nanoOffers.filter((a) => a.network === network);
  if (offers.length === 0) {
    const asked = [...new Set(nanoOffers.map((a) => a.network))].join(', ');
    throw new NanoPayError('X402_UNPAYABLE', `The server asks to be paid on ${asked}; this wallet's backend is on ${network}; nothing was paid`, {
      hint: `Pay it from a profile whose backend is on ${asked} (nanopay --profile NAME), or ask the server for ${network}.`,
    });
  }
  const nano = offers.filter((a) => parseThreshold(statedThreshold(a) ?? '0000000000000000') <= parseThreshold(WORK_BOUND));
  if (nano.length === 0) {
    throw new NanoPayError('X402_UNPAYABLE', `The server asks for work at ${statedThreshold(offers[0] as PaymentRequirements) ?? '?'}, more than ${WORK_BOUND} (64 times the work of the live send threshold); nothing was paid`, {
      hint: 'A server that states such a threshold would keep this machine searching for hours; pay it only if it asks for less.',
    });
  }
  const within = nano.filter((a) => BigInt(a.amount) <= maxRaw).sort((a, b) => (BigInt(a.amount) < BigInt(b.amount) ? -1 : 1));
  const cheapest = within[0];
  if (cheapest === undefined) {
    const asked = nano.map((a) => BigInt(a.amount)).reduce((m, v) => (v < m ? v : m));
    throw new NanoPayError('X402_UNPAYABLE', `The server asks for ${xnoAndRaw(asked)}, over the maximum of ${xnoAndRaw(maxRaw)}; nothing was paid`, {
      hint: 'Raise --max (or x402-max) if the price is right.',
    });
  }
  return cheapest;
}

export function readRequired(response: Response): PaymentRequired {
  const header = response.headers.get(HEADERS.required);
  if (header === null) throw new NanoPayError('X402_UNPAYABLE', 'The server answered 402 without a PAYMENT-REQUIRED header (x402 v2); nothing was paid');
  return parsePaymentRequired(decodeHeader(header, 'PAYMENT-REQUIRED'));
}

export function readSettlement(response: Response): SettleResponse | null {
  const header = response.headers.get(HEADERS.response) ?? response.headers.get(HEADERS.legacyResponse);
  if (header === null) return null;
  try {
    return parseSettleResponse(decodeHeader(header, 'PAYMENT-RESPONSE'));
  } catch {
    return null;
  }
}


interface Challenge {
  url: string;
  init: RequestInit;
  transport: Transport;
  required: PaymentRequired;
  chosen: PaymentRequirements;
  /** The payment id (payment-identifier) of this payment, sent when the server states the extension. */
  paymentId?: string;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** Where a request ended: its answer, the URL and request that got it, and a redirect to another origin left unfollowed. */
interface Reached {
  response: Response;
  url: string;
  init: RequestInit;
  redirect?: string;
}

/** The Location of a redirect answer, absolute; undefined when the answer is no redirect. */
function redirectOf(response: Response, from: string): string | undefined {
  const location = response.headers.get('location');
  return REDIRECTS.has(response.status) && location !== null && URL.canParse(location, from) ? new URL(location, from).href : undefined;
}

/**
 * fetch that follows redirects only within the URL's origin (scheme, host and
 * port), as fetch would (303, and 301/302 after a POST, become a GET without
 * a body); a redirect to another origin comes back as it is, so nothing is
 * paid to, or sent to, a host the user did not name. With `redirect:
 * "manual"` (the toolset) no redirect is followed.
 */
export async function reach(url: string, init: RequestInit, signal: AbortSignal | undefined, transport: Transport = fetch): Promise<Reached> {
  let current: Reached | undefined;
  let at = { url, init };
  for (let hops = 0; ; hops++) {
    const response = await transport(at.url, { ...at.init, redirect: 'manual', ...(signal === undefined ? {} : { signal }) }).catch((error: unknown) => Promise.reject(error instanceof NanoPayError ? error : fetchFailure(error, at.url)));
    const next = redirectOf(response, at.url);
    current = { response, ...at };
    if (next === undefined || init.redirect === 'manual') return current;
    if (new URL(next).origin !== new URL(at.url).origin) return { ...current, redirect: next };
    if (init.redirect === 'error' || hops >= 20) throw new NanoPayError('REQUEST_ERROR', `${url} redirects ${init.redirect === 'error' ? 'and redirects were refused' : 'too many times'}; nothing was paid`);
    await response.body?.cancel().catch(() => undefined);
    const method = (at.init.method ?? 'GET').toUpperCase();
    const toGet = response.status === 303 ? method !== 'HEAD' : (response.status === 301 || response.status === 302) && method === 'POST';
    const { body: _body, ...rest } = at.init;
    at = { url: next, init: toGet ? { ...rest, method: 'GET' } : at.init };
  }
}

/** The network the payer's backend is on (the x402-network setting names it for a node that does not say). */
export function payerNetwork(session: Session, ctx: OpsContext): Promise<string> {
  return backendNetwork(ctx.api, session.profile().x402Network);
}

/**
 * A server's answer bounded by `ms` (--timeout): one that has not answered
 * (its status and headers) in that long is given up on, the request aborted.
 */
export function answeredWithin(transport: Transport, ms: number): Transport {
  return async (url, init) => {
    const timer = new AbortController();
    const pending = setTimeout(() => timer.abort(), ms);
    try {
      return await transport(url, { ...init, signal: init.signal === undefined || init.signal === null ? timer.signal : AbortSignal.any([init.signal, timer.signal]) });
    } catch (error) {
      if (!timer.signal.aborted || init.signal?.aborted === true) throw error;
      throw new NanoPayError('TIMEOUT', `${new URL(url).origin} did not answer within ${ms / 1000} s (--timeout)`, { hint: 'Allow it more with --timeout (or NANOPAY_TIMEOUT), or try again later.' });
    } finally {
      clearTimeout(pending);
    }
  };
}

/**
 * The payment's proof of work bounded by `ms` (--timeout): a search past it
 * ends in TIMEOUT before anything is signed.
 */
export function boundedWork(ctx: OpsContext, ms: number): OpsContext {
  return {
    ...ctx,
    work: async (root, threshold, signal) => {
      const bound = AbortSignal.timeout(ms);
      try {
        return await ctx.work(root, threshold, signal === undefined ? bound : AbortSignal.any([signal, bound]));
      } catch (error) {
        if (!bound.aborted || signal?.aborted === true) throw error;
        throw new NanoPayError('TIMEOUT', `The proof of work for this payment (threshold ${threshold}) took longer than ${ms / 1000} s (--timeout); nothing was signed or paid`, {
          hint: 'Allow more with --timeout (or NANOPAY_TIMEOUT), or make the work ahead: nanopay work precache.',
        });
      }
    },
  };
}

interface Presented {
  response: Response;
  settlement: SettleResponse | null;
  /** The paid answer was a redirect (not followed): where it pointed. */
  redirect?: string;
}

/**
 * Hands the signed block to the server (PAYMENT-SIGNATURE, and X-PAYMENT for
 * v1-style sellers) and decides from our own ledger whether it was paid: a
 * 2xx, a settlement naming some hash, or a 402 are the server's word only.
 * Not seen confirmed: X402_UNSETTLED, and the block stays an outstanding cheque.
 */
async function present(ctx: OpsContext, c: Challenge, block: StateBlock, waitMs: number): Promise<Presented> {
  const hash = hashBlock(block);
  const named = c.paymentId !== undefined && c.required.extensions?.[PAYMENT_IDENTIFIER] !== undefined;
  const payment: PaymentPayload = {
    x402Version: 2,
    resource: c.required.resource,
    accepted: c.chosen,
    payload: { block: { ...block, link_as_account: linkAsAccount(block.link) } },
    ...(named ? { extensions: withPaymentId(c.paymentId as string) } : {}),
  };
  const header = encodeHeader(payment);
  const headers = new Headers(c.init.headers);
  headers.set(HEADERS.signature, header);
  headers.set(HEADERS.legacyPayment, header);
  // Never followed: the payment header goes to this URL only.
  const response = await c.transport(c.url, { ...c.init, headers, redirect: 'manual', ...(ctx.signal === undefined ? {} : { signal: ctx.signal }) }).catch((error: unknown) => {
    throw new NanoPayError('X402_UNSETTLED', `Presenting the payment ${hash} to ${c.url} failed (${error instanceof Error ? error.message : String(error)}); it is outstanding`, {
      hint: 'Run again with the same --id to present the same block, or any send or receive of this account cancels it.',
    });
  });
  const settlement = readSettlement(response);
  // A server that says it settled gets time to be seen; one that says nothing or no gets one look.
  const claimed = response.status < 400 && settlement?.success === true;
  const redirect = redirectOf(response, c.url);
  if (await seenConfirmed(ctx.api, hash, claimed ? waitMs : 0, ctx.signal)) {
    // Signed here and now confirmed: the account's next payment builds on it without fetching it again.
    rememberConfirmed(ctx.api, hash, block);
    return { response, settlement, ...(redirect === undefined ? {} : { redirect }) };
  }
  await response.body?.cancel().catch(() => undefined);
  const said =
    response.status === 402 ? `answered 402 again${settlement?.errorReason === undefined ? '' : ` (${settlement.errorReason})`}` : claimed ? `said it settled ${settlement?.transaction ?? ''}` : `answered HTTP ${response.status} without a settlement`;
  throw new NanoPayError('X402_UNSETTLED', `The server ${said}, but our ledger does not show the payment ${hash} confirmed; nothing more was paid, and the block is outstanding`, {
    hint: 'Run again with the same --id to present the same block again, or any send or receive of this account cancels it.',
  });
}

/** A block of ours the ledger shows confirmed, its contents checked against its hash. */
async function confirmedOwnBlock(ctx: OpsContext, hash: string): Promise<StateBlock> {
  const info = await ctx.api.blockInfo(hash);
  if (!info.confirmed || !isStateBlock(info.contents) || hashBlock(info.contents) !== hash) {
    throw inconsistent(`block ${hash}, recorded paid, is not a confirmed block with those contents`, { party: ctx.api.kind, outcome: 'Nothing was paid.' });
  }
  return info.contents;
}

/**
 * The answer to a payment made before under `id`, presented again: what the
 * server serves for it, or X402_PAID_NOT_SERVED when it answers 402 (it took
 * the payment and will not serve it twice): never a bare 402.
 */
function servedAgain(presented: Presented, payment: X402Payment, id: string): PaidFetch {
  if (presented.response.status !== 402) return { response: presented.response, payment, ...(presented.redirect === undefined ? {} : { redirect: presented.redirect }) };
  void presented.response.body?.cancel().catch(() => undefined);
  throw new NanoPayError('X402_PAID_NOT_SERVED', `The payment ${payment.hash} of ${payment.amount} XNO to ${payment.pay_to} under the key "${id}" was made and is confirmed, but the server answers 402 to it now: it does not serve that request again. Nothing more was paid`, {
    hint: 'Ask the seller for what was paid for, naming the block hash; a new payment needs a new --id.',
    details: { payment },
  });
}

function paymentOf(entry: Pick<JournalEntry, 'hash' | 'block'>, amountRaw: bigint, settlement: SettleResponse | null, repeated: boolean): X402Payment {
  return {
    hash: entry.hash,
    payer: entry.block.account,
    pay_to: linkAsAccount(entry.block.link),
    amount: rawToXno(amountRaw),
    amount_raw: amountRaw.toString(),
    settlement,
    settlement_matches: settlement?.success === true && settlement.transaction.toUpperCase() === entry.hash,
    repeated,
  };
}

/** A work threshold a requirement states (extra.workThreshold), when it is one. */
export function statedThreshold(requirement: PaymentRequirements): string | undefined {
  const stated = requirement.extra?.workThreshold;
  return typeof stated === 'string' && /^[0-9a-fA-F]{16}$/.test(stated) ? stated.toLowerCase() : undefined;
}

/**
 * How a payment reads its account's head (Movement.readHead, holding the
 * account's lock, after an earlier block in the journal was settled: a cheque
 * found cashed, or cancelled): sellers refuse a block whose previous is not
 * confirmed yet (a receive made a moment ago), so an unconfirmed frontier's
 * confirmation is awaited, bounded, before signing. The head's own read says
 * whether it is confirmed: no other read is made when it is.
 */
export function confirmedHead(ctx: OpsContext, address: string, waitMs: number, signal?: AbortSignal): () => Promise<AccountHead> {
  return async () => {
    const head = await readAccountHead(ctx, address);
    if (head.confirmed || head.block === undefined) return head;
    const frontier = head.state.frontier as string;
    if (!(await seenConfirmed(ctx.api, frontier, waitMs, signal))) {
      throw new NanoPayError('TRANSACTION_NOT_CONFIRMED', `The frontier ${frontier} of ${address} is not confirmed yet, and sellers refuse a payment on it; nothing was paid`, {
        hint: 'Try again in a moment.',
      });
    }
    // Checked by the head's read, now seen confirmed: the next payment builds on it without reading it again.
    rememberConfirmed(ctx.api, frontier, head.block);
    return { ...head, confirmed: true };
  };
}

/** What a payment plans on: a lane's head read holding its claim when it was confirmed then, else the head read (and its confirmation awaited) holding the account's lock. */
function headOf(ctx: OpsContext, payer: Payer, waitMs: number, signal?: AbortSignal): Pick<Movement<unknown>, 'head' | 'readHead'> {
  return { ...(payer.head?.confirmed === true ? { head: payer.head } : {}), readHead: confirmedHead(ctx, payer.signer.address, waitMs, signal) };
}

/** The cheque journaled under this id, presented again (never a new block); undefined when there is none. */
async function presentAgain(ctx: OpsContext, signer: Signer, c: Challenge, id: string, waitMs: number): Promise<PaidFetch | undefined> {
  return ctx.lock(signer.address, async () => {
    const entry = await ctx.journal.read(signer.address);
    if (entry?.chequeFor === undefined || entry.sendId !== id) return undefined;
    if (linkAsAccount(entry.block.link) !== normalizeAddress(c.chosen.payTo) || entry.amountRaw !== c.chosen.amount) {
      throw new NanoPayError('IDEMPOTENCY_MISMATCH', `The key "${id}" holds a payment of ${entry.amountRaw ?? '?'} raw to ${linkAsAccount(entry.block.link)}; this server asks ${c.chosen.amount} raw to ${c.chosen.payTo}. Nothing was sent`, {
        hint: 'Use a new --id for a new payment.',
      });
    }
    const presented = await present(ctx, c, entry.block, waitMs);
    await recordLanded(ctx, entry);
    await ctx.journal.clear(signer.address);
    return servedAgain(presented, paymentOf(entry, BigInt(c.chosen.amount), presented.settlement, true), id);
  });
}

/**
 * What the spending policy sees of an x402 payment: the host it pays (rules
 * by host), the requirement an approval is bound to, and for a lane the
 * account it pays for (approvals bind to that, whichever lane pays).
 */
export function x402Spend(url: string | undefined, requirement: PaymentRequirements, approval: string | undefined, payer: string | undefined): { kind: 'x402'; host?: string; requirement: PaymentRequirements; approvalId?: string; payer?: string } {
  const host = url === undefined ? undefined : url.startsWith('mcp:') ? mcpIdentity(url) : URL.canParse(url) ? hostOfUrl(new URL(url)) : undefined;
  return { kind: 'x402', requirement, ...(host === undefined ? {} : { host }), ...(approval === undefined ? {} : { approvalId: approval }), ...(payer === undefined ? {} : { payer }) };
}

/**
 * How long a lane stays claimed for one payment at most: the server's time to
 * answer (maxTimeoutSeconds, bounded) and a minute more. A holder that dies
 * frees it at once; one that hangs, at the end of this.
 */
const leaseOf = (requirement: PaymentRequirements): number => (Math.min(requirement.maxTimeoutSeconds, 600) + 60) * 1000;

/** Until when a lane holds a cheque handed to a client library: its lease, within --timeout (one timeout for a seller that never answers). */
const handedUntil = (session: Session, requirement: PaymentRequirements): number => Date.now() + Math.min(leaseOf(requirement), session.deadlineMs());

/** The account that signs this payment: a free lane of the wallet when it has lanes (see payerFor), else the account. */
function payerOf(session: Session, ctx: OpsContext, options: Pick<PaidFetchOptions, 'wallet' | 'index' | 'id' | 'signal'>, chosen: PaymentRequirements): Promise<Payer> {
  return payerFor(session, ctx, {
    amountRaw: BigInt(chosen.amount),
    leaseMs: leaseOf(chosen),
    ...(options.wallet === undefined ? {} : { wallet: options.wallet }),
    ...(options.index === undefined ? {} : { index: options.index }),
    ...(options.id === undefined ? {} : { id: options.id }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
}

/**
 * fetch, paying an x402 v2 challenge in Nano: on a 402 it picks the cheapest
 * Nano exact requirement within the maximum and pays it through the one
 * guarded money path (limits, confirmation, account lock, journal). The
 * signed send is a cheque: journaled (with where it went) before it leaves,
 * counted paid only once our own backend shows it confirmed, and otherwise
 * left outstanding, to be presented again under the same id or cancelled by
 * the account's next block. Never a second block for one challenge.
 * Redirects are followed within the URL's origin only (see reach), and the
 * payment goes to the URL that asked for it, never on to another.
 */
export async function fetchWithPayment(session: Session, input: string | URL, init: RequestInit = {}, options: PaidFetchOptions = {}): Promise<PaidFetch> {
  const signal = options.signal;
  const transport = answeredWithin(options.transport ?? fetch, session.deadlineMs());
  const reached = await reach(String(input), init, signal, transport);
  const first = reached.response;
  if (first.status !== 402) return { response: first, ...(reached.redirect === undefined ? {} : { redirect: reached.redirect }) };
  const url = reached.url;
  await first.arrayBuffer();
  const required = readRequired(first);
  const maxRaw = maximum(session, options.maxXno);
  const ctx = boundedWork(await session.context(signal), session.workBoundMs());
  const chosen = choose(required, maxRaw, await payerNetwork(session, ctx));
  const amountRaw = BigInt(chosen.amount);
  const c: Challenge = { url, init: reached.init, transport, required, chosen, ...(options.id === undefined ? {} : { paymentId: paymentIdFor(session.profileName, options.id) }) };
  const waitMs = options.settleWaitMs ?? 15_000;
  const payer = await payerOf(session, ctx, options, chosen);
  let moved: Moved<void> | undefined;
  let recording = false;
  try {
    const signer = payer.signer;
    if (options.id !== undefined) {
      const again = await presentAgain(ctx, signer, c, options.id, waitMs);
      if (again !== undefined) return again;
    }
    const autoPay = BigInt(session.profile().x402AutoPay ?? '0');
    const confirm = amountRaw <= autoPay ? undefined : options.confirm;
    const threshold = statedThreshold(chosen);
    let presented: Presented | undefined;
    moved = await move(ctx, {
      signer,
      to: chosen.payTo,
      amountRaw,
      note: { chequeFor: url },
      spend: x402Spend(url, chosen, options.approval, payer.payer),
      ...(threshold === undefined ? {} : { workThreshold: threshold }),
      ...headOf(ctx, payer, waitMs, signal),
      submit: async (block) => {
        presented = await present(ctx, c, block, waitMs);
      },
      // A lane's paid cheque is recorded after the answer is handed back (payer.paid), still holding the lane.
      ...(payer.lane === undefined ? {} : { outstanding: true }),
      ...(options.id === undefined ? {} : { id: options.id }),
      ...(confirm === undefined ? {} : { confirm }),
    });
    const hash = moved.hash as string;
    const made = { hash, block: { account: moved.from, link: moved.to } as StateBlock };
    if (presented === undefined) {
      // Paid before under this id (recorded): nothing moved; the confirmed block is presented again for the answer it paid for.
      const block = await confirmedOwnBlock(ctx, hash);
      const again = await present(ctx, c, block, waitMs);
      return servedAgain(again, paymentOf(made, moved.amountRaw, again.settlement, true), options.id as string);
    }
    recording = payer.paid(hash);
    return { response: presented.response, payment: paymentOf(made, moved.amountRaw, presented.settlement, false), ...(presented.redirect === undefined ? {} : { redirect: presented.redirect }) };
  } finally {
    if (!recording) await payer.done(moved?.repeated === false ? moved.balanceAfterRaw : undefined);
  }
}

/**
 * A signed, worked send for one requirement, handed over as a cheque (not
 * published, not counted paid): for client libraries that present it
 * themselves (@x402/fetch through nanoExactClientScheme). Within the maximum,
 * through the guarded money path; the journal keeps it outstanding until the
 * account's next block finds it cashed (recorded paid) or cancels it.
 */
export async function signCheque(session: Session, requirements: PaymentRequirements, options: Omit<PaidFetchOptions, 'settleWaitMs'> & { chequeFor?: string } = {}): Promise<StateBlock> {
  const maxRaw = maximum(session, options.maxXno);
  const ctx = boundedWork(await session.context(options.signal), session.workBoundMs());
  const chosen = choose({ x402Version: 2, resource: { url: '' }, accepts: [requirements] }, maxRaw, await payerNetwork(session, ctx));
  const amountRaw = BigInt(chosen.amount);
  const autoPay = BigInt(session.profile().x402AutoPay ?? '0');
  const confirm = amountRaw <= autoPay ? undefined : options.confirm;
  const payer = await payerOf(session, ctx, options, chosen);
  try {
    const signer = payer.signer;
    if (options.id !== undefined) {
      // The cheque already made under this id is handed over again, never a second one.
      const entry = await ctx.journal.read(signer.address);
      if (entry?.chequeFor !== undefined && entry.sendId === options.id) {
        if (linkAsAccount(entry.block.link) !== normalizeAddress(chosen.payTo) || entry.amountRaw !== chosen.amount) {
          throw new NanoPayError('IDEMPOTENCY_MISMATCH', `The key "${options.id}" holds a payment of ${entry.amountRaw ?? '?'} raw to ${linkAsAccount(entry.block.link)}; nothing was signed`);
        }
        payer.handOut(entry.hash, handedUntil(session, chosen));
        return { ...entry.block, link_as_account: linkAsAccount(entry.block.link) } as StateBlock;
      }
    }
    const threshold = statedThreshold(chosen);
    let handed: StateBlock | undefined;
    await move(ctx, {
      signer,
      to: chosen.payTo,
      amountRaw,
      outstanding: true,
      spend: x402Spend(options.chequeFor, chosen, options.approval, payer.payer),
      ...(threshold === undefined ? {} : { workThreshold: threshold }),
      ...headOf(ctx, payer, 15_000, options.signal),
      note: { chequeFor: options.chequeFor ?? `x402 ${chosen.network} ${chosen.payTo}` },
      submit: async (block) => {
        handed = block;
      },
      ...(options.id === undefined ? {} : { id: options.id }),
      ...(confirm === undefined ? {} : { confirm }),
    });
    if (handed === undefined) throw new NanoPayError('IDEMPOTENCY_MISMATCH', `The key "${options.id ?? ''}" was already used for a payment that landed; nothing was signed`, { hint: 'Use a new id for a new payment.' });
    // A lane stays claimed until the cheque resolves: its answer (chequeAnswered), or the lease's end, within --timeout.
    payer.handOut(hashBlock(handed), handedUntil(session, chosen));
    return { ...handed, link_as_account: linkAsAccount(handed.link) } as StateBlock;
  } catch (error) {
    await payer.done();
    throw error;
  }
}

/**
 * The answer to a request that carried a cheque signCheque made (a client
 * library saw it: @x402/fetch's onPaymentResponse): a cheque of a lane is
 * resolved at once, in the background, so the lane is free for the next
 * payment: seen confirmed (watched a while when the server says it settled),
 * it is recorded paid; otherwise it is cancelled. Any other cheque is left
 * to its account's next block, as before.
 */
export function chequeAnswered(session: Session, block: unknown, settlement: SettleResponse | undefined, waitMs = 15_000): void {
  let hash: string;
  try {
    hash = hashBlock(block as StateBlock);
  } catch {
    return;
  }
  const claimed = settlement?.success === true && settlement.transaction.toUpperCase() === hash;
  settleHandedCheque(session, hash, async (ctx) => seenConfirmed(ctx.api, hash, claimed ? waitMs : 0));
}
