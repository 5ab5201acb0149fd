import { setTimeout as sleep } from 'node:timers/promises';
import type { LedgerBackend } from '../api/backend.js';
import { fetchFailure } from '../api/fetch-failure.js';
import { NanoPayError } from '../errors.js';
import { MAX_RAW, hashBlock, isValidAddress, linkAsAccount, normalizeAddress, rawToXno, xnoToRaw, type StateBlock } from '../nano/index.js';
import type { OpsContext, Signer } from '../ops/context.js';
import { recordLanded, settleJournal } from '../ops/ledger/recovery.js';
import type { Session } from '../ops/session.js';
import { move, type Confirm } from '../ops/spending/movement.js';
import { xnoAndRaw } from '../ops/money.js';
import type { JournalEntry } from '../wallet/journal.js';
import {
  HEADERS,
  X402_ASSET,
  X402_NETWORK,
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
}

/**
 * The most the caller will pay for this request (--max). Without it the
 * spending policy's maximum for x402 payments (x402-max) decides, as it does
 * anyway; with neither, nothing is paid, never unbounded.
 */
function maximum(session: Session, maxXno: string | undefined): bigint {
  if (maxXno !== undefined) return xnoToRaw(maxXno);
  if (session.policy().frontEnds?.x402?.perSend !== undefined) return MAX_RAW;
  throw new NanoPayError('X402_UNPAYABLE', 'The server asks for payment (HTTP 402), and no maximum is set, so nothing was paid', {
    hint: 'Give the most you will pay with --max XNO, or set it once: nanopay config set x402-max 0.01',
  });
}

/** The first Nano exact requirement within the maximum, kept verbatim to be echoed. */
function choose(required: PaymentRequired, maxRaw: bigint): PaymentRequirements {
  const nano = required.accepts.filter((a) => a.scheme === X402_SCHEME && a.network === X402_NETWORK && a.asset === X402_ASSET && isValidAddress(a.payTo) && BigInt(a.amount) > 0n);
  if (nano.length === 0) {
    const offered = required.accepts.map((a) => `${a.scheme} ${a.network} ${a.asset}`).join('; ');
    throw new NanoPayError('X402_UNPAYABLE', `The server accepts no Nano payment (it offers: ${offered}); nothing was paid`);
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

function readRequired(response: Response): PaymentRequired {
  const header = response.headers.get(HEADERS.required);
  if (header === null) throw new NanoPayError('X402_UNPAYABLE', 'The server answered 402 without a PAYMENT-REQUIRED header (x402 v2); nothing was paid');
  return parsePaymentRequired(decodeHeader(header, 'PAYMENT-REQUIRED'));
}

function readSettlement(response: Response): SettleResponse | null {
  const header = response.headers.get(HEADERS.response) ?? response.headers.get(HEADERS.legacyResponse);
  if (header === null) return null;
  try {
    return parseSettleResponse(decodeHeader(header, 'PAYMENT-RESPONSE'));
  } catch {
    return null;
  }
}

/** Whether our own backend shows the block confirmed, watched up to `waitMs`. */
async function seenConfirmed(api: LedgerBackend, hash: string, waitMs: number, signal?: AbortSignal): Promise<boolean> {
  const until = Date.now() + waitMs;
  for (;;) {
    const info = await api.blockInfo(hash).catch(() => undefined);
    if (info?.confirmed === true && hashBlock(info.contents) === hash) return true;
    if (Date.now() >= until || signal?.aborted === true) return false;
    await sleep(100);
  }
}

interface Challenge {
  url: string;
  init: RequestInit;
  required: PaymentRequired;
  chosen: PaymentRequirements;
}

/**
 * Hands the signed block to the server (PAYMENT-SIGNATURE, and X-PAYMENT for
 * v1-style sellers) and decides from our own ledger whether it was paid: a
 * 2xx, a settlement naming some hash, or a 402 are the server's word only.
 * Not seen confirmed: X402_UNSETTLED, and the block stays an outstanding cheque.
 */
async function present(ctx: OpsContext, c: Challenge, block: StateBlock, waitMs: number): Promise<{ response: Response; settlement: SettleResponse | null }> {
  const hash = hashBlock(block);
  const payment: PaymentPayload = { x402Version: 2, resource: c.required.resource, accepted: c.chosen, payload: { block: { ...block, link_as_account: linkAsAccount(block.link) } } };
  const header = encodeHeader(payment);
  const headers = new Headers(c.init.headers);
  headers.set(HEADERS.signature, header);
  headers.set(HEADERS.legacyPayment, header);
  const response = await fetch(c.url, { ...c.init, headers, ...(ctx.signal === undefined ? {} : { signal: ctx.signal }) }).catch((error: unknown) => {
    throw new NanoPayError('X402_UNSETTLED', `Presenting the payment ${hash} to ${c.url} failed (${error instanceof Error ? error.message : String(error)}); it is outstanding`, {
      hint: 'Run again with the same --id to present the same block, or any send or receive of this account cancels it.',
    });
  });
  const settlement = readSettlement(response);
  // A server that says it settled gets time to be seen; one that says nothing or no gets one look.
  const claimed = response.ok && settlement?.success === true;
  if (await seenConfirmed(ctx.api, hash, claimed ? waitMs : 0, ctx.signal)) return { response, settlement };
  await response.body?.cancel().catch(() => undefined);
  const said =
    response.status === 402 ? `answered 402 again${settlement?.errorReason === undefined ? '' : ` (${settlement.errorReason})`}` : claimed ? `said it settled ${settlement?.transaction ?? ''}` : `answered HTTP ${response.status} without a settlement`;
  throw new NanoPayError('X402_UNSETTLED', `The server ${said}, but our ledger does not show the payment ${hash} confirmed; nothing more was paid, and the block is outstanding`, {
    hint: 'Run again with the same --id to present the same block again, or any send or receive of this account cancels it.',
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
function statedThreshold(requirement: PaymentRequirements): string | undefined {
  const stated = requirement.extra?.workThreshold;
  return typeof stated === 'string' && /^[0-9a-fA-F]{16}$/.test(stated) ? stated.toLowerCase() : undefined;
}

/**
 * Sellers refuse a block whose previous is not confirmed yet (a receive made a
 * moment ago): an earlier block still in the journal is settled first (a cheque
 * found cashed, or cancelled), then our frontier's confirmation is awaited,
 * bounded, before signing.
 */
async function frontierConfirmed(ctx: OpsContext, signer: Signer, waitMs: number, signal?: AbortSignal): Promise<void> {
  const { api } = ctx;
  const address = signer.address;
  if ((await ctx.journal.read(address)) !== undefined) await ctx.lock(address, () => settleJournal(ctx, address, signer));
  const info = await api.accountInfo(address);
  if (info === null || (await seenConfirmed(api, info.frontier.toUpperCase(), waitMs, signal))) return;
  throw new NanoPayError('TRANSACTION_NOT_CONFIRMED', `The frontier ${info.frontier} of ${address} is not confirmed yet, and sellers refuse a payment on it; nothing was paid`, {
    hint: 'Try again in a moment.',
  });
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
    const { response, settlement } = await present(ctx, c, entry.block, waitMs);
    await recordLanded(ctx, entry);
    await ctx.journal.clear(signer.address);
    return { response, payment: paymentOf(entry, BigInt(c.chosen.amount), settlement, false) };
  });
}

/** What the spending policy sees of an x402 payment: the host it pays (rules by host), and the requirement an approval is bound to. */
function x402Spend(url: string | undefined, requirement: PaymentRequirements, approval: string | undefined): { kind: 'x402'; host?: string; requirement: PaymentRequirements; approvalId?: string } {
  const host = url !== undefined && URL.canParse(url) ? new URL(url).host : undefined;
  return { kind: 'x402', requirement, ...(host === undefined ? {} : { host }), ...(approval === undefined ? {} : { approvalId: approval }) };
}

/**
 * fetch, paying an x402 v2 challenge in Nano: on a 402 it picks the cheapest
 * Nano exact requirement within the maximum and pays it through the one
 * guarded money path (limits, confirmation, account lock, journal). The
 * signed send is a cheque: journaled (with where it went) before it leaves,
 * counted paid only once our own backend shows it confirmed, and otherwise
 * left outstanding, to be presented again under the same id or cancelled by
 * the account's next block. Never a second block for one challenge.
 */
export async function fetchWithPayment(session: Session, input: string | URL, init: RequestInit = {}, options: PaidFetchOptions = {}): Promise<PaidFetch> {
  const url = String(input);
  const signal = options.signal;
  const first = await fetch(url, { ...init, ...(signal === undefined ? {} : { signal }) }).catch((error: unknown) => Promise.reject(fetchFailure(error, url)));
  if (first.status !== 402) return { response: first };
  // Kept: when the payment was made before under this id, this 402 is the answer there is.
  const firstBody = await first.arrayBuffer();
  const required = readRequired(first);
  const chosen = choose(required, maximum(session, options.maxXno));
  const amountRaw = BigInt(chosen.amount);
  const c: Challenge = { url, init, required, chosen };
  const waitMs = options.settleWaitMs ?? 15_000;
  const ctx = await session.context(signal);
  const signer = await session.account(options.wallet, options.index);
  if (options.id !== undefined) {
    const again = await presentAgain(ctx, signer, c, options.id, waitMs);
    if (again !== undefined) return again;
  }
  await frontierConfirmed(ctx, signer, waitMs, signal);
  const autoPay = BigInt(session.profile().x402AutoPay ?? '0');
  const confirm = amountRaw <= autoPay ? undefined : options.confirm;
  const threshold = statedThreshold(chosen);
  let presented: { response: Response; settlement: SettleResponse | null } | undefined;
  const moved = await move(ctx, {
    signer,
    to: chosen.payTo,
    amountRaw,
    note: { chequeFor: url },
    spend: x402Spend(url, chosen, options.approval),
    ...(threshold === undefined ? {} : { workThreshold: threshold }),
    submit: async (block) => {
      presented = await present(ctx, c, block, waitMs);
    },
    ...(options.id === undefined ? {} : { id: options.id }),
    ...(confirm === undefined ? {} : { confirm }),
  });
  const hash = moved.hash as string;
  const made = { hash, block: { account: moved.from, link: moved.to } as StateBlock };
  if (presented === undefined) {
    // Paid before under this id (recorded): nothing moved, and there is no block left to present.
    return { response: new Response(firstBody, { status: first.status, headers: first.headers }), payment: paymentOf(made, moved.amountRaw, null, true) };
  }
  return { response: presented.response, payment: paymentOf(made, moved.amountRaw, presented.settlement, false) };
}

/**
 * A signed, worked send for one requirement, handed over as a cheque (not
 * published, not counted paid): for client libraries that present it
 * themselves (@x402/fetch through nanoExactClientScheme). Within the maximum,
 * through the guarded money path; the journal keeps it outstanding until the
 * account's next block finds it cashed (recorded paid) or cancels it.
 */
export async function signCheque(session: Session, requirements: PaymentRequirements, options: Omit<PaidFetchOptions, 'settleWaitMs'> & { chequeFor?: string } = {}): Promise<StateBlock> {
  const chosen = choose({ x402Version: 2, resource: { url: '' }, accepts: [requirements] }, maximum(session, options.maxXno));
  const amountRaw = BigInt(chosen.amount);
  const ctx = await session.context(options.signal);
  const signer = await session.account(options.wallet, options.index);
  const autoPay = BigInt(session.profile().x402AutoPay ?? '0');
  const confirm = amountRaw <= autoPay ? undefined : options.confirm;
  if (options.id !== undefined) {
    // The cheque already made under this id is handed over again, never a second one.
    const entry = await ctx.journal.read(signer.address);
    if (entry?.chequeFor !== undefined && entry.sendId === options.id) {
      if (linkAsAccount(entry.block.link) !== normalizeAddress(chosen.payTo) || entry.amountRaw !== chosen.amount) {
        throw new NanoPayError('IDEMPOTENCY_MISMATCH', `The key "${options.id}" holds a payment of ${entry.amountRaw ?? '?'} raw to ${linkAsAccount(entry.block.link)}; nothing was signed`);
      }
      return { ...entry.block, link_as_account: linkAsAccount(entry.block.link) } as StateBlock;
    }
  }
  await frontierConfirmed(ctx, signer, 15_000, options.signal);
  const threshold = statedThreshold(chosen);
  let handed: StateBlock | undefined;
  await move(ctx, {
    signer,
    to: chosen.payTo,
    amountRaw,
    outstanding: true,
    spend: x402Spend(options.chequeFor, chosen, options.approval),
    ...(threshold === undefined ? {} : { workThreshold: threshold }),
    note: { chequeFor: options.chequeFor ?? `x402 ${chosen.network} ${chosen.payTo}` },
    submit: async (block) => {
      handed = block;
    },
    ...(options.id === undefined ? {} : { id: options.id }),
    ...(confirm === undefined ? {} : { confirm }),
  });
  if (handed === undefined) throw new NanoPayError('IDEMPOTENCY_MISMATCH', `The key "${options.id ?? ''}" was already used for a payment that landed; nothing was signed`, { hint: 'Use a new id for a new payment.' });
  return { ...handed, link_as_account: linkAsAccount(handed.link) } as StateBlock;
}
