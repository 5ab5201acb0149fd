import { createHash, randomBytes } from 'node:crypto';
import { NanoPayError } from '../../errors.js';
import { normalizeAddress, rawToXno } from '../../nano/index.js';
import type { RefundClaim, RefundRecord } from '../../store/refunds.js';
import { newEvent } from '../../store/shop-events.js';
import type { ShopRequest } from '../../store/shop.js';
import type { Store } from '../../store/store.js';
import { parseDuration } from '../duration.js';
import { rawOf, xnoAndRaw, type Amount } from '../money.js';
import type { Session } from '../session.js';
import { checkTransactionId } from './payments.js';
import { orderClaimedRefund, refundableRaw, withRefundLock } from './refunds.js';

/**
 * Refunds the customer claims (issue 44): instead of sending back to the
 * account that paid (an exchange's hot wallet, perhaps), the shop makes a
 * claim for an amount, and the customer names their address on the claim's
 * page. The link's token is the only credential: unguessable, kept hashed,
 * good once and until the claim expires. A claim holds its amount back from
 * other refunds while it is open; claimed, it becomes a refund order on the
 * one money path (policy, journal, exactly once), carried out by the shop's signer.
 */

export const DEFAULT_CLAIM_LIFETIME = '7d';
const MIN_LIFETIME_S = 10 * 60;
const MAX_LIFETIME_S = 30 * 86_400;

/** A claim as the shop sees it (never its token's hash). */
export type ClaimShown = Omit<RefundClaim, 'token_hash'>;

const shownClaim = ({ token_hash: _hash, ...shown }: RefundClaim): ClaimShown => shown;

const tokenHash = (token: string): string => createHash('sha256').update(token).digest('hex');

/** Tokens are 32 random bytes, base64url: nothing else is looked up. */
const PLAUSIBLE_TOKEN = /^[A-Za-z0-9_-]{43}$/;

export interface ClaimAsk {
  requestId: string;
  /** Default: all that is left to refund. */
  amount?: Amount;
  /** How long the link works (10m to 30d); default 7d. */
  expiresIn?: string;
}

/** Makes a claim: its link's token is in the answer, and nowhere else ever. */
export async function createClaim(session: Session, store: Store, ask: ClaimAsk): Promise<{ claim: ClaimShown; token: string }> {
  const id = checkTransactionId(ask.requestId).toLowerCase();
  if ((await store.shop.get(id)) === undefined) throw new NanoPayError('NOT_FOUND', 'No such request');
  const lifetime = parseDuration(ask.expiresIn ?? DEFAULT_CLAIM_LIFETIME, { max: MAX_LIFETIME_S, what: 'the claim lifetime' });
  if (lifetime < MIN_LIFETIME_S) throw new NanoPayError('USAGE', 'A claim lasts at least 10 minutes (the customer needs time to answer)');
  return withRefundLock(store, id, async () => {
    const left = await refundableRaw(session, store, id);
    if (left <= 0n) throw new NanoPayError('REFUND_TOO_LARGE', `Nothing is left to refund of request ${id} (refunds and open claims take it all)`);
    const amountRaw = ask.amount === undefined ? left : rawOf(ask.amount);
    if (amountRaw <= 0n) throw new NanoPayError('INVALID_NUMBER_FORMAT', 'The amount must be greater than zero');
    if (amountRaw > left) throw new NanoPayError('REFUND_TOO_LARGE', `A claim of ${xnoAndRaw(amountRaw)} is more than is left to refund of request ${id}: ${xnoAndRaw(left)}`, { hint: `Claim at most ${rawToXno(left)} XNO.` });
    const token = randomBytes(32).toString('base64url');
    const now = Date.now();
    const claim: RefundClaim = {
      id: `rc_${randomBytes(12).toString('hex')}`,
      request_id: id,
      status: 'open',
      amount: rawToXno(amountRaw),
      amount_raw: amountRaw.toString(),
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + lifetime * 1000).toISOString(),
      token_hash: tokenHash(token),
    };
    await store.claims.add(claim);
    return { claim: shownClaim(claim), token };
  });
}

export async function listClaims(store: Store, requestId: string): Promise<ClaimShown[]> {
  return (await store.claims.ofRequest(checkTransactionId(requestId).toLowerCase())).map(shownClaim);
}

/** Cancels an open claim: its link stops working, its amount is free again. */
export async function cancelClaim(store: Store, claimId: string): Promise<ClaimShown> {
  const claim = await store.claims.get(claimId);
  if (claim === undefined) throw new NanoPayError('NOT_FOUND', 'No such refund claim');
  if (claim.status !== 'open') throw new NanoPayError('CONFLICT', `The claim is ${claim.status} already`);
  const cancelled: RefundClaim = { ...claim, status: 'cancelled', cancelled_at: new Date().toISOString() };
  if (!(await store.claims.change('open', cancelled))) throw new NanoPayError('CONFLICT', 'The claim changed meanwhile: it was claimed or cancelled');
  return shownClaim(cancelled);
}

/** What the claim's page shows: the claim, its request, and its refund once claimed. */
export interface ClaimView {
  claim: ClaimShown;
  request: ShopRequest;
  refund?: Omit<RefundRecord, 'fingerprint'>;
  /** Open and past its expiry. */
  expired: boolean;
}

/** The claim a link's token names, or undefined (an unknown or malformed token). */
export async function viewClaim(store: Store, token: string): Promise<ClaimView | undefined> {
  if (!PLAUSIBLE_TOKEN.test(token)) return undefined;
  const claim = await store.claims.byTokenHash(tokenHash(token));
  if (claim === undefined) return undefined;
  const request = await store.shop.get(claim.request_id);
  if (request === undefined) return undefined;
  const refund = claim.refund_id === undefined ? undefined : await store.refunds.get(claim.refund_id);
  const { fingerprint: _fingerprint, ...shown } = refund ?? ({} as RefundRecord);
  return { claim: shownClaim(claim), request, ...(refund === undefined ? {} : { refund: shown }), expired: claim.status === 'open' && Date.parse(claim.expires_at) <= Date.now() };
}

/**
 * The customer claims: their address, checked (checksum), becomes the refund's destination. Once: the claim's own
 * key makes a repeat with the same address find the same refund, and another address be refused; the claim is
 * then marked claimed and the shop told (refund.claimed).
 */
export async function claimRefund(session: Session, store: Store, token: string, address: string): Promise<ClaimView> {
  const view = await viewClaim(store, token);
  if (view === undefined) throw new NanoPayError('NOT_FOUND', 'This refund link is not valid');
  const { claim } = view;
  if (claim.status === 'cancelled') throw new NanoPayError('CONFLICT', 'The shop cancelled this refund claim');
  if (view.expired) throw new NanoPayError('CONFLICT', 'This refund claim has expired: ask the shop for a new one');
  let to: string;
  try {
    to = normalizeAddress(address.trim());
  } catch {
    throw new NanoPayError('INVALID_ADDRESS', 'That is not a Nano address: check it (nano_ followed by 60 characters) and try again');
  }
  if (claim.status === 'claimed' && claim.to !== to) throw new NanoPayError('CONFLICT', 'This refund was claimed already');
  let refund: RefundRecord;
  try {
    refund = await orderClaimedRefund(session, store, claim, to);
  } catch (error) {
    if (error instanceof NanoPayError && error.code === 'IDEMPOTENCY_MISMATCH') throw new NanoPayError('CONFLICT', 'This refund was claimed already');
    throw error;
  }
  const stored = (await store.claims.get(claim.id)) as RefundClaim;
  if (stored.status === 'open') {
    const claimed: RefundClaim = { ...stored, status: 'claimed', claimed_at: new Date().toISOString(), to, refund_id: refund.id };
    if (await store.claims.change('open', claimed)) await tellShop(store, claimed);
  }
  return (await viewClaim(store, token)) as ClaimView;
}

/** The shop's webhook of a claim: `refund.claimed`, with the claim (never its token) beside the request. */
async function tellShop(store: Store, claim: RefundClaim): Promise<void> {
  for (let attempt = 0; attempt < 10; attempt++) {
    const request = await store.shop.get(claim.request_id);
    if (request === undefined) return;
    const next: ShopRequest = { ...request, events: request.events + 1 };
    const event = newEvent('refund.claimed', next);
    event.data.claim = shownClaim(claim);
    if (await store.shop.change(request.status, next, event)) return;
  }
}
