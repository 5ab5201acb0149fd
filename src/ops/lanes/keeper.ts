import { setTimeout as sleep } from 'node:timers/promises';
import { readAccountHead, receiveAllPending } from '../ledger/chain.js';
import { seenConfirmed } from '../ledger/confirmed-wait.js';
import { allProvedReceivable } from '../ledger/proofs.js';
import { recordLanded } from '../ledger/landed.js';
import { settleJournal } from '../ledger/recovery.js';
import { move } from '../spending/movement.js';
import { stateDir } from '../../wallet/paths.js';
import type { OpsContext, Signer } from '../context.js';
import type { Session } from '../session.js';
import { fundingSigner, laneSigner, type Lane, type LaneSet } from './accounts.js';
import { claimWaiting, type LaneClaim } from './claims.js';

/** How long a lane is held for its own upkeep (a refill received) at most. */
const UPKEEP_LEASE_MS = 60_000;
/** How long upkeep waits for a lane that payments keep busy. */
const UPKEEP_WAIT_MS = 120_000;
/** How often `idle` looks whether the cheques handed out have resolved. */
const HANDED_POLL_MS = 50;
/** How long after a failed refill a lane is not refilled again. */
const REFILL_RETRY_MS = 10_000;

/** A cheque a lane handed to a client library: the lane stays claimed until it resolves. */
interface Handed {
  claim: LaneClaim;
  set: LaneSet;
  timer: NodeJS.Timeout;
}

/**
 * What a process does for its lanes besides paying, per session: refills
 * (a send from the funding account, received by the lane) in the background,
 * and the cheques handed out by lanes, each resolved when its answer comes or
 * its lease ends. `idle` waits for all of it.
 */
class Keeper {
  readonly tasks = new Set<Promise<void>>();
  readonly refilling = new Set<string>();
  /** When each lane's last refill failed (the funding account short, the backend down): not tried again for a while. */
  private readonly failed = new Map<string, { at: number; error: unknown }>();
  readonly handed = new Map<string, Handed>();

  constructor(private readonly session: Session) {}

  /** Runs `task` in the background; a failure is left for the next payment or upkeep to meet again. */
  spawn(task: () => Promise<void>): void {
    const running = task().catch(() => undefined);
    this.tasks.add(running);
    void running.finally(() => this.tasks.delete(running));
  }

  /** Until every background task is done and every cheque handed out resolved (answered, or its lease over). */
  async idle(): Promise<void> {
    while (this.tasks.size > 0 || this.handed.size > 0) {
      // The wait itself keeps the process alive for the leases' timers, which alone would not.
      if (this.tasks.size > 0) await Promise.all([...this.tasks]);
      else await sleep(HANDED_POLL_MS);
    }
  }

  /**
   * Tops `lane` up to its fund when it holds less than half of it, or less
   * than `needRaw`: the funding account sends the difference (a move between
   * own accounts, which no budget counts), and the lane receives it once it
   * is free. In the background; one refill per lane at a time, and none for
   * a while after one failed.
   */
  refillIfLow(set: LaneSet, lane: Lane, balanceRaw: bigint, needRaw = 0n): void {
    const fund = BigInt(set.settings.fundRaw);
    if ((balanceRaw * 2n >= fund && balanceRaw >= needRaw) || this.refilling.has(lane.address)) return;
    if (Date.now() - (this.failed.get(lane.address)?.at ?? 0) < REFILL_RETRY_MS) return;
    this.refilling.add(lane.address);
    this.spawn(async () => {
      try {
        const ctx = await this.session.context();
        const signer = await laneSigner(this.session, set, lane);
        // Held from the read of what the lane lacks until the refill is received: a node lists a send as on its way
        // only once it is confirmed, so another process refilling the lane meanwhile would not see this refill and
        // would send one more. Held, it waits, then finds the lane funded.
        await this.holding(lane, async () => {
          await ownSendConfirmed(ctx, (await fundLane(this.session, ctx, set, lane, signer)).hash);
          await receiveOnLane(ctx, signer);
        });
        this.failed.delete(lane.address);
      } catch (error) {
        this.failed.set(lane.address, { at: Date.now(), error });
        throw error;
      } finally {
        this.refilling.delete(lane.address);
      }
    });
  }

  /** Whether a refill of the lane is under way. */
  refillingNow(lane: Lane): boolean {
    return this.refilling.has(lane.address);
  }

  /** Why the lane's last refill failed, when it did a moment ago. */
  refillFailure(lane: Lane): unknown {
    const failed = this.failed.get(lane.address);
    return failed !== undefined && Date.now() - failed.at < REFILL_RETRY_MS ? failed.error : undefined;
  }

  /** Runs `upkeep` holding the lane (its refill). */
  private async holding(lane: Lane, upkeep: () => Promise<void>): Promise<void> {
    const claim = await claimWaiting(stateDir(this.session.dir, 'lanes'), lane, () => Date.now() + UPKEEP_LEASE_MS, UPKEEP_WAIT_MS);
    try {
      await upkeep();
    } finally {
      await claim.release();
    }
  }

  /** Keeps `claim` until its cheque `hash` resolves: `settleHanded`, or at `untilMs` at the latest. */
  handOut(claim: LaneClaim, set: LaneSet, hash: string, untilMs: number): void {
    const timer = setTimeout(() => this.settleHanded(hash), Math.max(0, untilMs - Date.now()));
    timer.unref();
    this.handed.set(hash, { claim, set, timer });
  }

  /**
   * Resolves a cheque a lane handed out, in the background, after `first`
   * (a wait for it to be seen confirmed): recorded paid when the ledger shows
   * it, else cancelled by a block of the lane on its previous; then the lane
   * is given back, and refilled when low. With `seenPaid` (the caller saw it
   * confirmed) it is recorded paid at once. False when no lane of this
   * process holds that cheque.
   */
  settleHanded(hash: string, first?: (ctx: OpsContext) => Promise<unknown>, seenPaid = false): boolean {
    const handed = this.handed.get(hash);
    if (handed === undefined) return false;
    this.handed.delete(hash);
    clearTimeout(handed.timer);
    const { claim, set } = handed;
    const address = claim.lane.address;
    this.spawn(async () => {
      let balance: bigint | undefined;
      try {
        const ctx = await this.session.context();
        const signer = await laneSigner(this.session, set, claim.lane);
        await first?.(ctx);
        balance = await ctx.lock(address, async () => {
          const entry = await ctx.journal.read(address);
          if (seenPaid && entry?.hash === hash) {
            await recordLanded(ctx, entry);
            await ctx.journal.clear(address);
            return BigInt(entry.block.balance);
          }
          const settled = await settleJournal(ctx, address, signer);
          return settled.outcome === 'confirmed' && settled.entry?.hash === hash ? BigInt(settled.entry.block.balance) : undefined;
        });
      } finally {
        await claim.release();
      }
      if (balance !== undefined) this.refillIfLow(set, claim.lane, balance);
    });
    return true;
  }
}

const keepers = new WeakMap<Session, Keeper>();

/** The lane upkeep of a session (one per session, made on first use). */
export function keeperOf(session: Session): Keeper {
  let keeper = keepers.get(session);
  if (keeper === undefined) keepers.set(session, (keeper = new Keeper(session)));
  return keeper;
}

/**
 * Resolves when the session's lane upkeep is done: refills received, and every
 * cheque handed to a client library resolved (recorded paid, or cancelled when
 * its answer never came, at the end of its lease). A program calls it before
 * it exits, so no lane is left holding a cheque.
 */
export function lanesIdle(session: Session): Promise<void> {
  return keepers.get(session)?.idle() ?? Promise.resolve();
}

/** How long a send between the wallet's accounts is awaited to be seen confirmed (a lone dev node takes about 0.2 s, the live network about 1 s). */
const OWN_SEND_CONFIRM_MS = 30_000;

/** What the lane holds and has on its way to it. */
export async function laneFunds(ctx: OpsContext, address: string): Promise<bigint> {
  const balance = (await readAccountHead(ctx, address)).state.balance;
  const coming = await allProvedReceivable(ctx.api, address, await ctx.api.pending(address));
  return coming.reduce((sum, p) => sum + p.amountRaw, balance);
}

/**
 * Sends the lane what it lacks of its fund (with what is on its way to it),
 * from the wallet's funding account: between own accounts, so the spending
 * policy does not judge it and no budget counts it. Returns what was sent and
 * its block, whose confirmation the lane awaits (ownSendConfirmed) before it
 * receives it.
 */
export async function fundLane(session: Session, ctx: OpsContext, set: LaneSet, lane: Lane, signer: Signer): Promise<{ raw: bigint; hash?: string }> {
  const lacking = BigInt(set.settings.fundRaw) - (await laneFunds(ctx, lane.address));
  if (lacking <= 0n) return { raw: 0n };
  const from = await fundingSigner(session, set);
  const moved = await move(ctx, { signer: from, to: lane.address, amountRaw: lacking, ownAccount: signer });
  return { raw: lacking, ...(moved.hash === null ? {} : { hash: moved.hash }) };
}

/**
 * Waits, bounded, until a send between the wallet's accounts (a lane funded
 * or emptied) is seen confirmed: a node lists a send as receivable only then,
 * so the account it goes to could neither receive it nor count it on its way
 * before. Past the bound it is left for that account's next receive.
 */
export async function ownSendConfirmed(ctx: OpsContext, hash: string | undefined): Promise<void> {
  if (hash !== undefined) await seenConfirmed(ctx.api, hash, OWN_SEND_CONFIRM_MS, ctx.signal);
}

/** Receives what waits for a lane (held by the caller): its earlier cheque resolved first. */
export async function receiveOnLane(ctx: OpsContext, signer: Signer): Promise<void> {
  await ctx.lock(signer.address, async () => {
    await settleJournal(ctx, signer.address, signer);
    await receiveAllPending(ctx, signer);
  });
}
