import { createHash, randomUUID } from 'node:crypto';
import { NanoPayError } from '../../errors.js';
import { normalizeAddress, rawToXno, xnoToRaw } from '../../nano/index.js';
import { refundKeyMismatch, type RefundRecord } from '../../store/refunds.js';
import { newEvent, type ShopRequest } from '../../store/shop.js';
import type { Store } from '../../store/store.js';
import { provedPayment, type ProvedSend } from '../ledger/proofs.js';
import { rawOf, xnoAndRaw, type Amount } from '../money.js';
import { resolveRecipient } from '../profile/contacts.js';
import type { Session } from '../session.js';
import { move, type Confirm } from '../spending/movement.js';
import { failedBeforeSigning } from '../spending/spend-outcome.js';
import { freshArrivals, nodePaymentStatus } from './node-requests.js';
import { checkTransactionId } from './payments.js';
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
  const left = received.totalRaw - sum(earlier);
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
      `A refund of ${xnoAndRaw(amountRaw)} is more than is left of request ${id}: ${xnoAndRaw(received.totalRaw)} received, ${xnoAndRaw(sum(earlier))} refunded or under way`,
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
    created_at: new Date().toISOString(),
    source,
    ...(ask.key === undefined ? {} : { idempotency_key: ask.key }),
  };
}

/** Refunds of one request are planned and recorded one at a time, by every process of the store: their sum is checked against one state. */
const lockName = (requestId: string): string => `refunds-${requestId}`;

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
  const to = ask.to === undefined ? undefined : source === 'api' ? normalizeAddress(ask.to) : (await resolveRecipient(session, ask.to)).address;
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

/** The shop's request (checkout serve) shows its refunds: status, amounts, blocks, with one `request.refunded` event per refund that landed. */
async function recordOnShopRequest(store: Store, summary: RefundSummary, requestId: string): Promise<void> {
  for (let attempt = 0; attempt < 10; attempt++) {
    const request = await store.shop.get(requestId);
    if (request === undefined || (request.refund_blocks?.length ?? 0) >= summary.refund_blocks.length) return;
    const { status, received_raw: _received, ...fields } = summary;
    const next: ShopRequest = { ...request, ...fields, status, events: request.events + 1 };
    // Written with its event in one transaction, if the status is still what was read (the monitor may change it meanwhile).
    if (await store.shop.change(request.status, next, newEvent('request.refunded', next))) return;
  }
  throw new NanoPayError('STORE_BUSY', `The shop's request ${requestId} kept changing; its refund is recorded, run nanopay refund --pending to show it`);
}

/** What a refund did, at the edges. */
export interface RefundResult {
  refund: Omit<RefundRecord, 'fingerprint'>;
  /** The request's refunds in all, once one landed. */
  request: { id: string; status?: RefundSummary['status']; received_raw: string; refunded_amount?: string; refunded_amount_raw?: string; refund_blocks?: string[]; refunded_at?: string };
  /** The key had been used already: this is its refund, nothing new was sent. */
  repeated: boolean;
  /** An earlier refund of this request that had not finished (a crash, an API order) was finished. */
  resumed: boolean;
  dry_run: boolean;
}

async function resultOf(store: Store, refund: RefundRecord, flags: Pick<RefundResult, 'repeated' | 'resumed' | 'dry_run'>): Promise<RefundResult> {
  const summary = refundSummary(await store.refunds.ofRequest(refund.request_id));
  const { fingerprint: _fingerprint, ...shown } = refund;
  const { received_raw: _received, refunds: _refunds, ...totals } = summary ?? ({} as Partial<RefundSummary>);
  return { refund: shown, request: { id: refund.request_id, received_raw: refund.received_raw, ...totals }, ...flags };
}

/**
 * Sends a recorded refund through the one money path (limits, the spending
 * policy, the account lock, the journal), under the refund's own id (kind
 * `refund`): a rerun after a crash at any moment finds its block (landed,
 * journaled or not yet signed) and ends with exactly one. Signed by the active
 * account, recorded as the refund's `from` before signing. A refusal before
 * signing marks it failed (its amount is free again); anything else leaves it
 * pending, to be finished.
 */
/** How a refund is carried out: the confirmation asked, the signal, and the approval of a refund the policy held. */
interface CarryOptions {
  confirm?: Confirm;
  signal?: AbortSignal;
  approval?: string;
}

async function carryOut(session: Session, store: Store, refund: RefundRecord, options: CarryOptions): Promise<Carried> {
  const signer = await session.account();
  if (refund.from !== undefined && refund.from !== signer.address) {
    throw new NanoPayError('CONFLICT', `Refund ${refund.id} was started from ${refund.from}, not the active account ${signer.address}`, {
      hint: 'Make that account the active one (nanopay wallet use) and run it again.',
    });
  }
  let current: RefundRecord = { ...refund, from: signer.address };
  if (refund.from === undefined) await store.refunds.update(current);
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
      ...(options.approval === undefined ? {} : { spend: { approvalId: options.approval } }),
    });
    // Its id found a block already (a run that stopped after sending): nothing moved now.
    sentNow = !moved.repeated;
    current = { ...current, status: 'sent', block: moved.hash as string, refunded_at: new Date().toISOString() };
    delete current.error;
    await store.refunds.update(current);
  } catch (error) {
    const nothingMoved = (error instanceof NanoPayError && error.code === 'DECLINED') || (await failedBeforeSigning(session, error));
    const reason = error instanceof NanoPayError ? { code: error.code, message: error.message } : { code: 'INTERNAL_ERROR', message: String(error) };
    await store.refunds.update({ ...current, status: nothingMoved ? 'failed' : 'pending', error: reason });
    throw error;
  }
  const summary = refundSummary(await store.refunds.ofRequest(current.request_id));
  if (summary !== undefined) await recordOnShopRequest(store, summary, current.request_id);
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
    return resultOf(store, planned, { repeated: false, resumed: false, dry_run: true });
  }
  const keyed = input.key === undefined ? undefined : await store.refunds.byKey(input.key);
  const unfinished = (await store.refunds.ofRequest(id)).filter((r) => r.status === 'pending' && r.id !== keyed?.id);
  let last: Carried | undefined;
  for (const earlier of unfinished) last = (await carryOutOnce(session, store, earlier.id, options)) ?? last;
  if (last !== undefined && input.key === undefined) return resultOf(store, last.refund, { repeated: !last.sentNow, resumed: true, dry_run: false });
  const { refund: recorded } = await record(session, store, input, 'cli');
  // The approval is this refund's: the unfinished ones above are other spends.
  const done = recorded.status === 'pending' ? await carryOutOnce(session, store, recorded.id, { ...options, ...(input.approval === undefined ? {} : { approval: input.approval }) }) : undefined;
  // Repeated only when nothing moved in this call: a key whose refund had failed, asked again, sends it now.
  if (done === undefined) return resultOf(store, (await store.refunds.get(recorded.id)) ?? recorded, { repeated: true, resumed: false, dry_run: false });
  return resultOf(store, done.refund, { repeated: !done.sentNow, resumed: false, dry_run: false });
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

/**
 * Carries out every pending refund of the store (API orders, runs that
 * stopped), oldest first: nanopay refund --pending, checkout serve --refunds.
 * One failing does not hold the others; each outcome is reported.
 */
export async function runPendingRefunds(session: Session, options: { signal?: AbortSignal } = {}): Promise<{ done: RefundResult[]; failed: { refund: string; code: string; message: string }[] }> {
  const store = await session.dataStore();
  const done: RefundResult[] = [];
  const failed: { refund: string; code: string; message: string }[] = [];
  for (const pending of await store.refunds.pending(1000)) {
    try {
      const carried = await carryOutOnce(session, store, pending.id, options);
      // Finished by another run meanwhile: that run reports it.
      if (carried !== undefined) done.push(await resultOf(store, carried.refund, { repeated: !carried.sentNow, resumed: true, dry_run: false }));
    } catch (error) {
      failed.push({ refund: pending.id, code: error instanceof NanoPayError ? error.code : 'INTERNAL_ERROR', message: error instanceof Error ? error.message : String(error) });
    }
  }
  return { done, failed };
}
