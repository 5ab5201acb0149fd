import { randomInt } from 'node:crypto';
import { NanoPayError } from '../../errors.js';
import { rawToXno } from '../../nano/index.js';
import { stateDir } from '../../wallet/paths.js';
import { readAccountHead, type AccountHead } from '../ledger/chain.js';
import { settleJournal } from '../ledger/recovery.js';
import type { OpsContext, Signer } from '../context.js';
import type { Session } from '../session.js';
import { fundingSigner, laneSigner, lanesOf, type Lane, type LaneSet } from './accounts.js';
import { claimWaiting, tryClaim, waitForLane, type LaneClaim } from './claims.js';
import { keeperOf, receiveOnLane } from './keeper.js';

/** How long a payment waits for a lane when every one is busy. */
const LANE_WAIT_MS = 120_000;
/** How long recording a lane's paid cheque may hold the lane. */
const PAID_LEASE_MS = 60_000;

export interface PayerInput {
  wallet?: string;
  /** An account the caller named (--account): it pays itself, lanes or not. */
  index?: number;
  /** The payment's idempotency key: the lane that paid, or holds a cheque, under it pays again. */
  id?: string;
  amountRaw: bigint;
  /** The most a lane stays claimed for this payment (its lease): a holder that dies or hangs frees it then. */
  leaseMs: number;
  signal?: AbortSignal;
}

/** The account that signs one payment: a lane of the wallet (claimed for it), or the account itself. */
export interface Payer {
  signer: Signer;
  /** The lane that pays; absent when the account itself pays (no lanes, an account named, or more than a lane is funded with). */
  lane?: Lane;
  /** For a lane: the wallet's funding account, the one approvals are bound to. */
  payer?: string;
  /** The lane's verified head, read holding its claim: the payment plans on it (Movement.head) when it was confirmed (sellers refuse a payment on a frontier that is not). */
  head?: AccountHead;
  /** The payment is over: the lane is given back, and refilled in the background when `balanceAfterRaw` is below half its fund. */
  done(balanceAfterRaw?: bigint): Promise<void>;
  /** The signed cheque `hash` leaves with a client library: the lane stays claimed until it resolves (settleHandedCheque), or until `untilMs`. */
  handOut(hash: string, untilMs: number): void;
  /**
   * The lane's cheque `hash` was seen confirmed: it is recorded paid (and its
   * journal entry cleared) in the background, holding the lane, which is
   * given back then. False when the account itself paid: the caller records it.
   */
  paid(hash: string): boolean;
}

/** The lane that paid, or holds a cheque, under `id`. */
async function laneOfId(ctx: OpsContext, set: LaneSet, id: string): Promise<Lane | undefined> {
  const paid = await ctx.sendLog.result(ctx.profile, id);
  if (paid !== undefined) return set.lanes.find((l) => l.address === paid.from);
  for (const lane of set.lanes) if ((await ctx.journal.read(lane.address))?.sendId === id) return lane;
  return undefined;
}

/**
 * Readies a claimed lane to pay `amountRaw`: a cheque an earlier holder left
 * (a process that died) is resolved first (found paid, or cancelled), and a
 * refill waiting for it is received when it holds too little. Its verified
 * head, or undefined (and a refill asked for) when it still holds too little.
 */
async function ready(session: Session, ctx: OpsContext, set: LaneSet, lane: Lane, amountRaw: bigint): Promise<AccountHead | undefined> {
  const signer = await laneSigner(session, set, lane);
  if ((await ctx.journal.read(lane.address)) !== undefined) await ctx.lock(lane.address, () => settleJournal(ctx, lane.address, signer));
  let head = await readAccountHead(ctx, lane.address);
  if (head.state.balance < amountRaw && (await ctx.api.pending(lane.address)).length > 0) {
    await receiveOnLane(ctx, signer);
    head = await readAccountHead(ctx, lane.address);
  }
  if (head.state.balance >= amountRaw) return head;
  keeperOf(session).refillIfLow(set, lane, head.state.balance, amountRaw);
  return undefined;
}

async function lanePayer(session: Session, set: LaneSet, claim: LaneClaim, head?: AccountHead): Promise<Payer> {
  try {
    const signer = await laneSigner(session, set, claim.lane);
    const payer = (await fundingSigner(session, set)).address;
    const keeper = keeperOf(session);
    return {
      signer,
      lane: claim.lane,
      payer,
      ...(head === undefined ? {} : { head }),
      done: async (balanceAfterRaw) => {
        await claim.release();
        if (balanceAfterRaw !== undefined) keeper.refillIfLow(set, claim.lane, balanceAfterRaw);
      },
      handOut: (hash, untilMs) => keeper.handOut(claim, set, hash, untilMs),
      paid: (hash) => {
        keeper.handOut(claim, set, hash, Date.now() + PAID_LEASE_MS);
        return keeper.settleHanded(hash, undefined, true);
      },
    };
  } catch (error) {
    await claim.release();
    throw error;
  }
}

/** The lanes from a random one on, so callers spread over them. */
function rotated(lanes: Lane[]): Lane[] {
  const start = randomInt(lanes.length);
  return [...lanes.slice(start), ...lanes.slice(0, start)];
}

/**
 * The account that signs a payment of `amountRaw`. With lanes (nanopay lanes
 * set), a free lane that holds enough, claimed so no other call or process
 * signs on it meanwhile: each lane carries one cheque at a time, never two on
 * one chain. The lane that paid or holds a cheque under `id` is waited for.
 * Without lanes, with an account named, or for more than a lane is funded
 * with, the account itself pays (one payment at a time, as its lock says).
 */
export async function payerFor(session: Session, ctx: OpsContext, input: PayerInput): Promise<Payer> {
  const own = async (): Promise<Payer> => ({ signer: await session.account(input.wallet, input.index), done: async () => undefined, handOut: () => undefined, paid: () => false });
  if (input.index !== undefined) return own();
  const set = lanesOf(session, input.wallet);
  if (set === undefined) return own();
  const dir = stateDir(session.dir, 'lanes');
  const until = (): number => Date.now() + input.leaseMs;
  if (input.id !== undefined) {
    const lane = await laneOfId(ctx, set, input.id);
    if (lane !== undefined) return lanePayer(session, set, await claimWaiting(dir, lane, until, LANE_WAIT_MS, input.signal));
    if ((await ctx.sendLog.result(ctx.profile, input.id)) !== undefined) return own();
  }
  if (input.amountRaw > BigInt(set.settings.fundRaw)) return own();
  const keeper = keeperOf(session);
  const deadline = Date.now() + LANE_WAIT_MS;
  for (;;) {
    const short: Lane[] = [];
    for (const lane of rotated(set.lanes)) {
      const claim = await tryClaim(dir, lane, until());
      if (claim === undefined) continue;
      let head: AccountHead | undefined;
      try {
        head = await ready(session, ctx, set, lane, input.amountRaw);
      } finally {
        if (head === undefined) await claim.release();
      }
      if (head !== undefined) return lanePayer(session, set, claim, head);
      short.push(lane);
    }
    // Every lane too poor, and no refill on its way: the funding account cannot pay for them.
    if (short.length === set.lanes.length && !short.some((l) => keeper.refillingNow(l))) {
      const failure = short.map((l) => keeper.refillFailure(l)).find((f) => f !== undefined);
      if (failure instanceof NanoPayError) throw failure;
      throw new NanoPayError('INSUFFICIENT_FUNDS', `No lane of wallet "${set.wallet}" holds ${rawToXno(input.amountRaw)} XNO, and they could not be refilled; nothing was paid`, {
        hint: 'Fund the wallet\'s account that funds them (nanopay lanes shows it), then try again.',
      });
    }
    await waitForLane(deadline, `Every lane of wallet "${set.wallet}"`, input.signal);
  }
}

/**
 * Resolves a cheque a lane of this session handed out, once its answer came
 * (in the background, after `first`): recorded paid when the ledger shows it,
 * else cancelled; the lane is given back then. False when no lane of this
 * session holds it.
 */
export function settleHandedCheque(session: Session, hash: string, first?: (ctx: OpsContext) => Promise<unknown>): boolean {
  return keeperOf(session).settleHanded(hash, first);
}
