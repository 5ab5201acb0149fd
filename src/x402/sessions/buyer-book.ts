import { readdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { NanoPayError } from '../../errors.js';
import { readIfExists, writeFileAtomic } from '../../fs/secure-fs.js';
import { rawToXno, type StateBlock } from '../../nano/index.js';
import type { Session } from '../../ops/session.js';
import { stateDir } from '../../wallet/paths.js';
import { type PaidFetch, type PaidFetchOptions } from '../client.js';
import type { Transport } from '../local-hosts.js';
import { type PaymentRequirements } from '../protocol.js';
import type { SessionReceipt } from './seller.js';
import { verifySessionSignature, voucherMessage, type Voucher } from './wire.js';
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
export const save = (session: Session, s: BuyerSession): Promise<void> => writeFileAtomic(fileOf(session, s.id), JSON.stringify(s));
/**
 * After a call: the count kept for `nanopay sessions` and the next process,
 * renamed into place without an fsync (a count lost to a power cut is asked
 * of the seller again, proved by its voucher, see resync).
 */
export async function saveCount(session: Session, s: BuyerSession): Promise<void> {
  const path = fileOf(session, s.id);
  await writeFile(`${path}.${process.pid}.tmp`, JSON.stringify(s), { mode: 0o600 });
  await rename(`${path}.${process.pid}.tmp`, path);
}

/** Sessions this process uses, by profile dir: each one's calls go one at a time (a voucher builds on the last answer). */
const live = new Map<string, Map<string, { s: BuyerSession; turn: Promise<unknown> }>>();
export const liveOf = (session: Session): Map<string, { s: BuyerSession; turn: Promise<unknown> }> => {
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

export async function buyerSession(session: Session, id: string): Promise<BuyerSession> {
  const text = await readIfExists(fileOf(session, id.toUpperCase()));
  if (text === undefined) throw new NanoPayError('NOT_FOUND', `No session ${id} in this profile`, { hint: 'nanopay sessions lists them.' });
  return JSON.parse(text) as BuyerSession;
}

/** The seller's word on a session (GET): its standing, and the receipt once closed. */
export async function standingOf(s: BuyerSession, transport: Transport): Promise<Record<string, unknown> | undefined> {
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
export function resync(s: BuyerSession, standing: Record<string, unknown>): void {
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

/** One call at a time per session (a voucher builds on the last one's answer), across this process. */
export function inTurn<T>(session: Session, s: BuyerSession, fn: (s: BuyerSession) => Promise<T>): Promise<T> {
  const sessions = liveOf(session);
  let entry = sessions.get(s.id);
  if (entry === undefined) sessions.set(s.id, (entry = { s, turn: Promise.resolve() }));
  const held = entry;
  const run = held.turn.then(() => fn(held.s));
  held.turn = run.catch(() => undefined);
  return run;
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

