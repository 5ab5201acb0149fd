import { createHash, randomUUID } from 'node:crypto';
import { NanoPayError } from '../../errors.js';
import { normalizeAddress, rawToXno, xnoToRaw } from '../../nano/index.js';
import { refundKeyMismatch, type RefundRecord } from '../../store/refunds.js';
import { statusWithRefunds, type EventRefund, type ShopRequest, type ShopStatus, type WebhookEvent } from '../../store/shop.js';
import { newEvent } from '../../store/shop-events.js';
import type { Store } from '../../store/store.js';
import { provedPayment, type ProvedSend } from '../ledger/proofs.js';
import { rawOf, xnoAndRaw, type Amount } from '../money.js';
import { resolveRecipient } from '../profile/contacts.js';
import type { ActiveAccount, Session } from '../session.js';
import { readAccountHead } from '../ledger/chain.js';
import { receiveTakings } from './takings.js';
import { move, type Confirm } from '../spending/movement.js';
import { failedBeforeSigning } from '../spending/spend-outcome.js';
import { awaitsAnswer } from '../spending/approvals.js';
import { freshArrivals, nodePaymentStatus } from './node-requests.js';
import { checkTransactionId, paymentStatus } from './payments.js';
import { refundSummary, type RefundSummary } from './refund-state.js';

/** What a request received, from the verified paying blocks: each block proved (fetched, hashed, signature checked). */
interface Received {
  blocks: ProvedSend[];
  totalRaw: bigint;
  /** Per paying account, what it paid (raw), in the order the blocks came. */
  payers: Map<string, bigint>;
}

/**
 * Who paid request `id`, and how much arrived: on a node, the blocks nanopay
 * matched to it (a fresh account: every payment it got, received or waiting,
 * however much; a shared address: the exact block that paid it, in time or
 * late); on the service, the block the service names as its payment, checked
 * against the request's address and amount. Nothing else is the request's.
 */
async function receivedFor(session: Session, id: string): Promise<Received> {
  let blocks: ProvedSend[];
  if (session.backendKind() === 'node') {
    const node = await session.nodeClient();
    const status = await nodePaymentStatus(session, node, id);
    const { record } = status;
    const matched = status.paid_by ?? status.paid_late?.blocks ?? [];
    blocks =
      record.fresh !== undefined
        ? await freshArrivals(node, record.address)
        : await Promise.all(matched.map((hash) => provedPayment(node, hash, { address: record.address, amountRaw: BigInt(record.amountRaw) })));
  } else {
    const api = await session.serviceApi();
    const status = await api.paymentStatus(id);
    if (status.isPaid && status.blockHash === undefined) {
      throw new NanoPayError('INVALID_DATA', 'The service says this request is paid but names no paying block: who paid cannot be proved', {
        hint: 'Refund with nanopay send to the payer, once you know who paid.',
      });
    }
    const address = status.receiveAddress === undefined ? undefined : normalizeAddress(status.receiveAddress);
    blocks =
      status.isPaid && status.blockHash !== undefined
        ? [await provedPayment(api, status.blockHash, { ...(address === undefined ? {} : { address }), ...(status.amount === undefined ? {} : { amountRaw: xnoToRaw(status.amount) }) })]
        : [];
  }
  const payers = new Map<string, bigint>();
  for (const b of blocks) payers.set(b.from, (payers.get(b.from) ?? 0n) + b.amountRaw);
  return { blocks, totalRaw: blocks.reduce((sum, b) => sum + b.amountRaw, 0n), payers };
}

/** What of a request's refunds still counts: those that landed, and those under way (they may land at any moment). */
const counting = (refunds: RefundRecord[]): RefundRecord[] => refunds.filter((r) => r.status !== 'failed');
const sum = (refunds: RefundRecord[]): bigint => refunds.reduce((total, r) => total + BigInt(r.amount_raw), 0n);

function payerList(payers: Map<string, bigint>): string {
  return [...payers].map(([address, raw]) => `${address} (${rawToXno(raw)} XNO)`).join(', ');
}

export interface RefundAsk {
  requestId: string;
  /** What to refund; by default what is left of what the payer (or all payers) sent. */
  amount?: Amount;
  /** Where to; by default the one account that paid. */
  to?: string;
  /** The refund's idempotency key (--id, Idempotency-Key): the same key and refund give back the first. */
  key?: string;
  /** The claim this refund pays (to the address its customer named): the other open claims stay reserved. */
  claim?: string;
}

/**
 * The refund asked for, checked against what the request received and what
 * went back already, as a record to keep. `to` from the shop's API must be an
 * account that paid the request (a stolen token can only send money back where
 * it came from); from the CLI it may be any address or @contact.
 */
async function plan(session: Session, store: Store, ask: RefundAsk, source: RefundRecord['source']): Promise<RefundRecord> {
  const id = checkTransactionId(ask.requestId).toLowerCase();
  const received = await receivedFor(session, id);
  if (received.totalRaw === 0n) {
    throw new NanoPayError('REQUEST_NOT_PAID', `Nothing was received for request ${id}: there is nothing to refund`, { hint: 'nanopay status ID shows where it stands.' });
  }
  let to: string;
  if (ask.to !== undefined) {
    to = normalizeAddress(ask.to);
    if (source === 'api' && !received.payers.has(to)) {
      throw new NanoPayError('REFUND_NOT_TO_PAYER', `Refunds through the API go back to an account that paid the request (${payerList(received.payers)}), not to ${to}`, {
        hint: 'Refund elsewhere with the CLI: nanopay refund ID --to ADDRESS.',
      });
    }
  } else if (received.payers.size === 1) {
    to = [...received.payers.keys()][0] as string;
  } else {
    throw new NanoPayError('PAYER_AMBIGUOUS', `Request ${id} was paid from ${received.payers.size} accounts: ${payerList(received.payers)}; say which to refund`, {
      hint: source === 'api' ? 'Give "to": one of them.' : 'Give --to ADDRESS: one of them.',
    });
  }
  const earlier = counting(await store.refunds.ofRequest(id));
  const left = received.totalRaw - sum(earlier) - (await reservedByClaims(store, id, ask.claim));
  // A payer gets back at most what is left of its own payments (all of what is left when no payer is named, from the
  // CLI): a stranger who sent one raw to a request's address is a payer of one raw, never of the whole.
  const payerLeft = received.payers.has(to) ? received.payers.get(to)! - sum(earlier.filter((r) => r.to === to)) : left;
  const most = payerLeft < left ? payerLeft : left;
  const amountRaw = ask.amount === undefined ? most : rawOf(ask.amount);
  if (amountRaw <= 0n && ask.amount === undefined) {
    throw new NanoPayError('REFUND_TOO_LARGE', `Request ${id} has been refunded already: ${xnoAndRaw(sum(earlier))} of ${xnoAndRaw(received.totalRaw)} received`);
  }
  if (amountRaw <= 0n) throw new NanoPayError('INVALID_NUMBER_FORMAT', 'The amount must be greater than zero');
  if (amountRaw > left) {
    throw new NanoPayError(
      'REFUND_TOO_LARGE',
      `A refund of ${xnoAndRaw(amountRaw)} is more than is left of request ${id}: ${xnoAndRaw(received.totalRaw)} received, ${xnoAndRaw(received.totalRaw - left)} refunded, under way or held by open refund claims`,
      { hint: `Refund at most ${rawToXno(left)} XNO.` },
    );
  }
  if (amountRaw > most) {
    throw new NanoPayError('REFUND_TOO_LARGE', `A refund of ${xnoAndRaw(amountRaw)} to ${to} is more than it paid request ${id}: it sent ${xnoAndRaw(received.payers.get(to) ?? 0n)}, of which ${xnoAndRaw(most)} is left to refund`, {
      hint: `Refund it at most ${rawToXno(most)} XNO.`,
    });
  }
  return {
    id: `rf_${randomUUID().replaceAll('-', '')}`,
    request_id: id,
    status: 'pending',
    amount: rawToXno(amountRaw),
    amount_raw: amountRaw.toString(),
    to,
    received_raw: received.totalRaw.toString(),
    ...(received.blocks[0] === undefined ? {} : { paid_to: received.blocks[0].to }),
    created_at: new Date().toISOString(),
    source,
    ...(ask.key === undefined ? {} : { idempotency_key: ask.key }),
  };
}

/** What the request's open, unexpired refund claims hold back (all but `except`, the one being paid). */
async function reservedByClaims(store: Store, requestId: string, except?: string): Promise<bigint> {
  const now = Date.now();
  const open = (await store.claims.ofRequest(requestId)).filter((c) => c.status === 'open' && Date.parse(c.expires_at) > now && c.id !== except);
  return open.reduce((total, c) => total + BigInt(c.amount_raw), 0n);
}

/**
 * What is left to refund of a request, as a refund or a new claim may take it: received, less refunds landed or
 * under way, less open claims. Call it within withRefundLock to act on it.
 */
export async function refundableRaw(session: Session, store: Store, requestId: string): Promise<bigint> {
  const received = await receivedFor(session, requestId);
  return received.totalRaw - sum(counting(await store.refunds.ofRequest(requestId))) - (await reservedByClaims(store, requestId));
}

/** Refunds of one request are planned and recorded one at a time, by every process of the store: their sum is checked against one state. */
const lockName = (requestId: string): string => `refunds-${requestId}`;

/** Runs `fn` as the only one planning refunds (or claims) of the request, in every process of the store. */
export const withRefundLock = <T>(store: Store, requestId: string, fn: () => Promise<T>): Promise<T> => store.exclusive(lockName(requestId), fn);

/** The refund as asked (request, amount and destination as given): a key used again must ask for the same. */
function fingerprintOf(id: string, ask: RefundAsk, to: string | undefined): string {
  return createHash('sha256')
    .update(`${id}\n${ask.amount === undefined ? '' : rawOf(ask.amount)}\n${to ?? ''}`)
    .digest('hex');
}

/**
 * Records a refund before anything is signed, planned and added in one hold
 * of the request's refund lock; or finds the one its key made (the same ask),
 * made pending again when it had been refused before signing.
 */
async function record(session: Session, store: Store, ask: RefundAsk, source: RefundRecord['source']): Promise<{ refund: RefundRecord; created: boolean }> {
  if (ask.key !== undefined && (ask.key.length === 0 || ask.key.length > 255)) throw new NanoPayError('INVALID_REQUEST', 'An idempotency key has 1 to 255 characters');
  const id = checkTransactionId(ask.requestId).toLowerCase();
  const to = ask.to === undefined ? undefined : source === 'cli' ? (await resolveRecipient(session, ask.to)).address : normalizeAddress(ask.to);
  const fingerprint = fingerprintOf(id, ask, to);
  return store.exclusive(lockName(id), async () => {
    const found = ask.key === undefined ? undefined : await store.refunds.byKey(ask.key);
    if (found !== undefined) {
      if (found.fingerprint !== fingerprint) throw refundKeyMismatch(ask.key as string);
      if (found.status !== 'failed') return { refund: found, created: false };
      const again: RefundRecord = { ...found, status: 'pending' };
      delete again.error;
      await store.refunds.update(again);
      return { refund: again, created: false };
    }
    return store.refunds.add({ ...(await plan(session, store, { ...ask, ...(to === undefined ? {} : { to }) }, source)), fingerprint });
  });
}

/**
 * The refund a customer's claim asks for: to the address they named (any address: the shop chose to let them), of
 * the claim's amount, recorded once under the claim's own key, so that a repeated or concurrent claim of one link
 * finds this refund (the same address) or is refused (another one).
 */
export async function orderClaimedRefund(session: Session, store: Store, claim: { id: string; request_id: string; amount_raw: string }, to: string): Promise<RefundRecord> {
  const { refund } = await record(session, store, { requestId: claim.request_id, amount: { raw: claim.amount_raw }, to, key: `claim-${claim.id}`, claim: claim.id }, 'claim');
  return refund;
}

/** A refund as an event names it. */
function eventRefund(refund: RefundRecord): EventRefund {
  const { id, status, amount, amount_raw, to, block, attempts, error } = refund;
  return { id, status, amount, amount_raw, to, ...(block === undefined ? {} : { block }), ...(attempts === undefined ? {} : { attempts }), ...(error === undefined ? {} : { error }) };
}

/**
 * A change of the shop's request (checkout serve) with its event, written in one transaction if its status is
 * still what was read (the monitor may change it meanwhile); `change` says what, or undefined when there is
 * nothing to write.
 */
async function changeShopRequest(store: Store, requestId: string, change: (request: ShopRequest) => { next: ShopRequest; event: WebhookEvent } | undefined): Promise<void> {
  for (let attempt = 0; attempt < 10; attempt++) {
    const request = await store.shop.get(requestId);
    const changed = request === undefined ? undefined : change(request);
    if (request === undefined || changed === undefined) return;
    if (await store.shop.change(request.status, changed.next, changed.event)) return;
  }
  throw new NanoPayError('STORE_BUSY', `The shop's request ${requestId} kept changing; its refund is recorded, run nanopay refund --pending to show it`);
}

/**
 * The shop's request shows its refunds: amounts, blocks, with one `request.refunded` event per refund that
 * landed; its status turns refunded or partially refunded only if it was paid (statusWithRefunds).
 */
function recordOnShopRequest(store: Store, summary: RefundSummary, refund: RefundRecord): Promise<void> {
  return changeShopRequest(store, refund.request_id, (request) => {
    if ((request.refund_blocks?.length ?? 0) >= summary.refund_blocks.length) return undefined;
    const { status: _status, received_raw: _received, ...fields } = summary;
    const received = BigInt(request.received_raw ?? request.amount_raw);
    const next: ShopRequest = { ...request, ...fields, status: statusWithRefunds(request.status, BigInt(summary.refunded_amount_raw), received), events: request.events + 1 };
    return { next, event: newEvent('request.refunded', next, eventRefund(refund)) };
  });
}

/** A refund given up: the shop hears it (`request.refund_failed`, the refund and why in `data.refund`). */
function recordFailedOnShopRequest(store: Store, refund: RefundRecord): Promise<void> {
  return changeShopRequest(store, refund.request_id, (request) => {
    const next: ShopRequest = { ...request, events: request.events + 1 };
    return { next, event: newEvent('request.refund_failed', next, eventRefund(refund)) };
  });
}

/** What a refund did, at the edges. */
export interface RefundResult {
  refund: Omit<RefundRecord, 'fingerprint'>;
  /** The request's refunds in all, once one landed. */
  request: { id: string; status?: ShopStatus; received_raw: string; refunded_amount?: string; refunded_amount_raw?: string; refund_blocks?: string[]; refunded_at?: string };
  /** The key had been used already: this is its refund, nothing new was sent. */
  repeated: boolean;
  /** An earlier refund of this request that had not finished (a crash, an API order) was finished. */
  resumed: boolean;
  dry_run: boolean;
}

/**
 * Where the request stands with its refunds: the shop's record when it has one (kept as refunds land), else a
 * look at it (status). Undefined when that look fails: the refund itself is what the result is about.
 */
async function requestStatus(session: Session, store: Store, requestId: string): Promise<ShopStatus | undefined> {
  const shop = await store.shop.get(requestId);
  if (shop !== undefined) return shop.status;
  return paymentStatus(session, requestId).then(
    (s) => s.status,
    () => undefined,
  );
}

async function resultOf(session: Session, store: Store, refund: RefundRecord, flags: Pick<RefundResult, 'repeated' | 'resumed' | 'dry_run'>): Promise<RefundResult> {
  const summary = refundSummary(await store.refunds.ofRequest(refund.request_id));
  const { fingerprint: _fingerprint, ...shown } = refund;
  const { received_raw: _received, refunds: _refunds, status: _status, ...totals } = summary ?? ({} as Partial<RefundSummary>);
  const status = summary === undefined ? undefined : await requestStatus(session, store, refund.request_id);
  return { refund: shown, request: { id: refund.request_id, ...(status === undefined ? {} : { status }), received_raw: refund.received_raw, ...totals }, ...flags };
}

/** How a refund is carried out: the confirmation asked, the signal, and the approval of a refund the policy held. */
interface CarryOptions {
  confirm?: Confirm;
  signal?: AbortSignal;
  approval?: string;
}

/** The wallet's account at `address`: the request's fresh account, the active one, or one the profile knows; undefined when none is. */
async function ownAccount(session: Session, store: Store, requestId: string, address: string): Promise<{ wallet: string; index: number } | undefined> {
  const active = await session.account();
  if (active.address === address) return { wallet: active.wallet, index: active.index };
  const fresh = session.backendKind() === 'node' ? (await store.requests.get(requestId))?.fresh : undefined;
  if (fresh !== undefined && (await session.address(fresh.wallet, fresh.index)) === address) return fresh;
  for (const [wallet, record] of Object.entries(session.profile().wallets)) {
    const index = Object.entries(record.accounts).find(([, a]) => a === address)?.[0];
    if (index !== undefined) return { wallet, index: Number(index) };
  }
  return undefined;
}

/**
 * The account a refund is paid from, chosen before its first run: the one that received the payment (a fresh
 * account, or the shop's own), after receiving what waits there, when it holds enough; else the active
 * account when it does; else the first of them (the send then says what is missing, and it is retried).
 */
async function refundSigner(session: Session, store: Store, refund: RefundRecord, signal?: AbortSignal): Promise<ActiveAccount> {
  if (refund.from_account !== undefined) return session.account(refund.from_account.wallet, refund.from_account.index);
  const active = await session.account();
  const paidTo = refund.paid_to === undefined ? undefined : await ownAccount(session, store, refund.request_id, refund.paid_to);
  const candidates = [...(paidTo === undefined ? [] : [await session.account(paidTo.wallet, paidTo.index)]), ...(paidTo !== undefined && active.address === refund.paid_to ? [] : [active])];
  const ctx = await session.context(signal);
  const amount = BigInt(refund.amount_raw);
  for (const candidate of candidates) {
    if ((await readAccountHead(ctx, candidate.address)).state.balance >= amount) return candidate;
    // The payment (or other takings) may still wait to be received there: a fresh account nobody swept, the shop's own account.
    const requestId = candidate.address === refund.paid_to ? refund.request_id : undefined;
    if ((await receiveTakings(session, ctx, candidate, requestId)) > 0n && (await readAccountHead(ctx, candidate.address)).state.balance >= amount) return candidate;
  }
  return candidates[0] ?? active;
}

/** Refusals no retry changes: the policy said no, a person declined, the approval cannot pay, the input is wrong. */
const FINAL_REFUSALS = new Set(['DECLINED', 'POLICY_DENIED', 'APPROVAL_INVALID', 'INVALID_ADDRESS', 'INVALID_NUMBER_FORMAT', 'AMOUNT_TOO_LARGE', 'INVALID_REQUEST']);

/** How long an API order that failed waits before its next run, by failures so far; after the last it is given up. */
const REFUND_RETRY_S = [60, 300, 900, 3_600, 4 * 3_600, 12 * 3_600];

/**
 * Where a refund stands after a run that failed with `error`. Held by the policy: pending with its approval
 * (the next run pays with it once a person gave it). Money may have moved: pending, to be finished (never
 * failed). Refused before signing: failed at once when no retry can help, or when it was asked at a
 * terminal (the person sees why); an API order is retried (REFUND_RETRY_S) and given up after the last.
 */
async function afterFailure(session: Session, refund: RefundRecord, error: unknown, signerAddress: string): Promise<RefundRecord> {
  const reason = error instanceof NanoPayError ? { code: error.code, message: error.message } : { code: 'INTERNAL_ERROR', message: String(error) };
  const nothingMoved = reason.code === 'DECLINED' || (await failedBeforeSigning(session, error, signerAddress));
  const attempts = (refund.attempts ?? 0) + 1;
  const base = { ...refund, error: reason, attempts };
  delete base.next_attempt_at;
  // Nothing was signed: the next run chooses its account again (the one that was short may hold enough by then).
  if (nothingMoved) {
    delete base.from;
    delete base.from_account;
  }
  if (nothingMoved && reason.code === 'APPROVAL_REQUIRED') {
    const approval = (error as NanoPayError).details?.approval as { id: string } | undefined;
    return { ...base, status: 'pending', attempts: refund.attempts ?? 0, ...(approval === undefined ? {} : { approval_id: approval.id }) };
  }
  const gaveUp = nothingMoved && (FINAL_REFUSALS.has(reason.code) || refund.source === 'cli' || attempts > REFUND_RETRY_S.length);
  if (gaveUp) return { ...base, status: 'failed' };
  const wait = REFUND_RETRY_S[Math.min(attempts, REFUND_RETRY_S.length) - 1] as number;
  return { ...base, status: 'pending', next_attempt_at: new Date(Date.now() + wait * 1000).toISOString() };
}

/**
 * Sends a recorded refund through the one money path (limits, the spending
 * policy, the account lock, the journal), under the refund's own id (kind
 * `refund`): a rerun after a crash at any moment finds its block (landed,
 * journaled or not yet signed) and ends with exactly one. Signed by the account
 * that received the payment when it can (refundSigner), recorded as the
 * refund's `from` before signing. A failure is recorded as afterFailure says,
 * and a refund given up is told to the shop.
 */
async function carryOut(session: Session, store: Store, refund: RefundRecord, options: CarryOptions): Promise<Carried> {
  const signer = await refundSigner(session, store, refund, options.signal);
  let current: RefundRecord = { ...refund, from: signer.address, from_account: { wallet: signer.wallet, index: signer.index } };
  if (refund.from_account === undefined) await store.refunds.update(current);
  const approval = options.approval ?? current.approval_id;
  const ctx = await session.context(options.signal);
  let sentNow: boolean;
  try {
    // Front end: nanopay refund (the CLI), or a signer carrying out the shop API's order (refund --pending, checkout serve --refunds).
    const moved = await move(ctx, {
      signer,
      to: current.to,
      amountRaw: BigInt(current.amount_raw),
      id: current.id,
      kind: 'refund',
      ...(options.confirm === undefined ? {} : { confirm: options.confirm }),
      ...(approval === undefined ? {} : { spend: { approvalId: approval } }),
    });
    // Its id found a block already (a run that stopped after sending): nothing moved now.
    sentNow = !moved.repeated;
    current = { ...current, status: 'sent', block: moved.hash as string, refunded_at: new Date().toISOString() };
    delete current.error;
    delete current.next_attempt_at;
    await store.refunds.update(current);
  } catch (error) {
    const after = await afterFailure(session, current, error, signer.address);
    await store.refunds.update(after);
    if (after.status === 'failed') await recordFailedOnShopRequest(store, after);
    throw error;
  }
  const summary = refundSummary(await store.refunds.ofRequest(current.request_id));
  if (summary !== undefined) await recordOnShopRequest(store, summary, current);
  return { refund: current, sentNow };
}

/** A refund carried out, and whether its money moved in this run (false: it had moved before, or another run did it). */
interface Carried {
  refund: RefundRecord;
  sentNow: boolean;
}

/**
 * carryOut of a pending refund by one run at a time, whichever process: the refund is read again holding its
 * own lock, and one another run finished meanwhile is not carried out again (undefined), so two runs never both
 * report it, nor one report it failed while the other sent it.
 */
async function carryOutOnce(session: Session, store: Store, refundId: string, options: CarryOptions): Promise<Carried | undefined> {
  return store.exclusive(`refund-run-${refundId}`, async () => {
    const now = await store.refunds.get(refundId);
    if (now === undefined || now.status !== 'pending') return undefined;
    return carryOut(session, store, now, options);
  });
}

export interface RefundInput extends RefundAsk {
  dryRun?: boolean;
  /** The approval a person gave for this very refund (the spending policy held it: APPROVAL_REQUIRED named it). */
  approval?: string;
  /** Asked once the preview is known; false cancels. */
  confirm?: Confirm;
  signal?: AbortSignal;
}

/**
 * Refunds what a request received, or part of it (nanopay refund). Refunds
 * of the request left unfinished (a crash, an API order) are finished first;
 * without a key, a call that finished one stops there, so rerunning a refund
 * that crashed never refunds twice. Partial refunds add up, never past what
 * was received; a request nothing was received for is refused.
 */
export async function refund(session: Session, input: RefundInput): Promise<RefundResult> {
  const id = checkTransactionId(input.requestId).toLowerCase();
  const store = await session.dataStore();
  const options: CarryOptions = { ...(input.confirm === undefined ? {} : { confirm: input.confirm }), ...(input.signal === undefined ? {} : { signal: input.signal }) };
  if (input.dryRun === true) {
    const to = input.to === undefined ? {} : { to: (await resolveRecipient(session, input.to)).address };
    const planned = await store.exclusive(lockName(id), () => plan(session, store, { ...input, ...to }, 'cli'));
    const ctx = await session.context(input.signal);
    await move(ctx, { signer: await session.account(), to: planned.to, amountRaw: BigInt(planned.amount_raw), kind: 'refund', dryRun: true });
    return resultOf(session, store, planned, { repeated: false, resumed: false, dry_run: true });
  }
  const keyed = input.key === undefined ? undefined : await store.refunds.byKey(input.key);
  const unfinished = (await store.refunds.ofRequest(id)).filter((r) => r.status === 'pending' && r.id !== keyed?.id);
  let last: Carried | undefined;
  for (const earlier of unfinished) last = (await carryOutOnce(session, store, earlier.id, options)) ?? last;
  if (last !== undefined && input.key === undefined) return resultOf(session, store, last.refund, { repeated: !last.sentNow, resumed: true, dry_run: false });
  const { refund: recorded } = await record(session, store, input, 'cli');
  // The approval is this refund's: the unfinished ones above are other spends.
  const done = recorded.status === 'pending' ? await carryOutOnce(session, store, recorded.id, { ...options, ...(input.approval === undefined ? {} : { approval: input.approval }) }) : undefined;
  // Repeated only when nothing moved in this call: a key whose refund had failed, asked again, sends it now.
  if (done === undefined) return resultOf(session, store, (await store.refunds.get(recorded.id)) ?? recorded, { repeated: true, resumed: false, dry_run: false });
  return resultOf(session, store, done.refund, { repeated: !done.sentNow, resumed: false, dry_run: false });
}

/**
 * An order from the shop's API (POST /api/v1/requests/{id}/refunds): checked
 * and recorded, not signed (the shop server holds no key unless started with
 * --refunds); a signer carries it out (runPendingRefunds).
 */
export async function orderRefund(session: Session, store: Store, ask: RefundAsk): Promise<{ refund: Omit<RefundRecord, 'fingerprint'>; created: boolean }> {
  if ((await store.shop.get(checkTransactionId(ask.requestId).toLowerCase())) === undefined) throw new NanoPayError('NOT_FOUND', 'No such request');
  const { refund: recorded, created } = await record(session, store, ask, 'api');
  const { fingerprint: _fingerprint, ...shown } = recorded;
  return { refund: shown, created };
}

/** A refund of a run of pending refunds that did not go: why, and what happens to it next. */
export interface RefundFailure {
  refund: string;
  request_id: string;
  code: string;
  message: string;
  /** Runs that failed so far. */
  attempts: number;
  /** failed: given up (request.refund_failed told the shop); retry: runs again at next_attempt_at; held: waits for approval_id; unsure: money may have moved, finished by the next run. */
  outcome: 'failed' | 'retry' | 'held' | 'unsure';
  next_attempt_at?: string;
  approval_id?: string;
}

/** A failure in words, as refund --pending and the shop server's log say it. */
export function refundFailureText(f: RefundFailure): string {
  const head = `refund ${f.refund} of request ${f.request_id} failed (${f.code}): ${f.message}`;
  if (f.outcome === 'failed') return `${head}; given up after ${f.attempts} attempt(s), request.refund_failed sent`;
  if (f.outcome === 'retry') return `${head}; attempt ${f.attempts}, next at ${f.next_attempt_at}`;
  if (f.outcome === 'held') return `${head}; it runs once a person approves ${f.approval_id ?? 'it'} (nanopay approvals approve)`;
  return `${head}; its block may have gone: the next run finishes it`;
}

function failureOf(refund: RefundRecord, error: unknown): RefundFailure {
  const code = error instanceof NanoPayError ? error.code : 'INTERNAL_ERROR';
  const outcome = refund.status === 'failed' ? 'failed' : refund.next_attempt_at !== undefined ? 'retry' : code === 'APPROVAL_REQUIRED' ? 'held' : 'unsure';
  return {
    refund: refund.id,
    request_id: refund.request_id,
    code,
    message: error instanceof Error ? error.message : String(error),
    attempts: refund.attempts ?? 0,
    outcome,
    ...(refund.next_attempt_at === undefined ? {} : { next_attempt_at: refund.next_attempt_at }),
    ...(outcome === 'held' && refund.approval_id !== undefined ? { approval_id: refund.approval_id } : {}),
  };
}

/**
 * Whether a pending refund runs now: with `due`, one waiting for its next attempt waits, and one held for an
 * approval nobody has answered yet waits for the answer (asking the policy again would only hold it again).
 */
async function runsNow(session: Session, refund: RefundRecord, due: boolean): Promise<boolean> {
  if (!due) return true;
  if (refund.next_attempt_at !== undefined && Date.parse(refund.next_attempt_at) > Date.now()) return false;
  return refund.approval_id === undefined || !(await awaitsAnswer(session, refund.approval_id));
}

/**
 * Carries out every pending refund of the store (API orders, runs that
 * stopped), oldest first: nanopay refund --pending (all of them now),
 * checkout serve --refunds (`due`: those whose next attempt has come, and
 * those held whose approval was answered). One failing does not hold the
 * others; each outcome is reported.
 */
export async function runPendingRefunds(session: Session, options: { signal?: AbortSignal; due?: boolean } = {}): Promise<{ done: RefundResult[]; failed: RefundFailure[] }> {
  const store = await session.dataStore();
  const done: RefundResult[] = [];
  const failed: RefundFailure[] = [];
  for (const pending of await store.refunds.pending(1000)) {
    if (!(await runsNow(session, pending, options.due === true))) continue;
    try {
      const carried = await carryOutOnce(session, store, pending.id, options);
      // Finished by another run meanwhile: that run reports it.
      if (carried !== undefined) done.push(await resultOf(session, store, carried.refund, { repeated: !carried.sentNow, resumed: true, dry_run: false }));
    } catch (error) {
      failed.push(failureOf((await store.refunds.get(pending.id)) ?? pending, error));
    }
  }
  return { done, failed };
}
