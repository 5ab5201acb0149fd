import { NanoPayError } from '../../errors.js';
import { rawToXno, xnoToRaw } from '../../nano/index.js';
import { stateDir } from '../../wallet/paths.js';
import { readAccountHead } from '../ledger/chain.js';
import { receive } from '../account/receive.js';
import { move } from '../spending/movement.js';
import type { OpsContext, Signer } from '../context.js';
import type { Session } from '../session.js';
import { LANE_BASE, type LaneSettings } from '../../wallet/config.js';
import { MAX_LANES, laneSigner, lanesOf, type Lane, type LaneSet } from './accounts.js';
import { claimHolder, claimWaiting } from './claims.js';
import { fundLane, laneFunds, ownSendConfirmed, receiveOnLane } from './keeper.js';

/** How long `lanes set` waits for a lane that payments keep busy. */
const SET_WAIT_MS = 120_000;
/** How long `lanes set` holds a lane at most. */
const SET_LEASE_MS = 120_000;

export interface LaneShown {
  lane: number;
  /** The account index in the wallet. */
  index: number;
  address: string;
  balance: string;
  balance_raw: string;
  /** On its way to the lane (a refill not yet received). */
  receivable: string;
  receivable_raw: string;
  /** The cheque the lane carries, until it is seen paid or is cancelled. */
  outstanding: { hash: string; for: string } | null;
  /** The process holding the lane for a payment, and until when at most. */
  held_by: { pid: number; until: string } | null;
}

export interface LanesResult {
  wallet: string;
  count: number;
  /** What each lane is kept funded with. */
  fund: string | null;
  fund_raw: string | null;
  /** The account lanes are funded from and emptied into. */
  from: string | null;
  lanes: LaneShown[];
}

export interface LanesSetResult extends LanesResult {
  /** Sent from the funding account to the lanes by this change. */
  funded: string;
  funded_raw: string;
  /** Sent back to the funding account by lanes this change removed. */
  returned: string;
  returned_raw: string;
}

function walletOf(session: Session, wallet?: string): string {
  const name = wallet ?? session.profile().activeWallet;
  if (name === undefined || session.profile().wallets[name] === undefined) {
    throw new NanoPayError('NOT_FOUND', name === undefined ? 'No active wallet' : `No wallet named "${name}" in profile "${session.profileName}"`, { hint: 'Create one (nanopay wallet create) or pick one (nanopay wallet use NAME).' });
  }
  return name;
}

/** What a lane holds and has on its way to it. */
async function shown(ctx: OpsContext, dir: string, lane: Lane): Promise<LaneShown> {
  const balance = (await readAccountHead(ctx, lane.address)).state.balance;
  const coming = (await laneFunds(ctx, lane.address)) - balance;
  const entry = await ctx.journal.read(lane.address);
  return {
    lane: lane.number,
    index: lane.index,
    address: lane.address,
    balance: rawToXno(balance),
    balance_raw: balance.toString(),
    receivable: rawToXno(coming),
    receivable_raw: coming.toString(),
    outstanding: entry?.chequeFor === undefined ? null : { hash: entry.hash, for: entry.chequeFor },
    held_by: (await claimHolder(dir, lane)) ?? null,
  };
}

async function described(session: Session, ctx: OpsContext, wallet: string): Promise<LanesResult> {
  const set = lanesOf(session, wallet);
  if (set === undefined) return { wallet, count: 0, fund: null, fund_raw: null, from: null, lanes: [] };
  const dir = stateDir(session.dir, 'lanes');
  return {
    wallet,
    count: set.settings.count,
    fund: rawToXno(BigInt(set.settings.fundRaw)),
    fund_raw: set.settings.fundRaw,
    from: await session.address(wallet, set.settings.from),
    lanes: await Promise.all(set.lanes.map((lane) => shown(ctx, dir, lane))),
  };
}

/** The wallet's lanes: what each holds, has on its way, carries, and who holds it. Reads only. */
export async function showLanes(session: Session, input: { wallet?: string; signal?: AbortSignal } = {}): Promise<LanesResult> {
  return described(session, await session.context(input.signal), walletOf(session, input.wallet));
}

/** Empties a lane into the funding account (held, its cheque resolved first); returns what it sent, and its block. */
async function empty(session: Session, ctx: OpsContext, set: LaneSet, lane: Lane, into: Signer): Promise<{ raw: bigint; hash?: string }> {
  const signer = await laneSigner(session, set, lane);
  const claim = await claimWaiting(stateDir(session.dir, 'lanes'), lane, () => Date.now() + SET_LEASE_MS, SET_WAIT_MS, ctx.signal);
  try {
    await receiveOnLane(ctx, signer);
    const balance = (await readAccountHead(ctx, lane.address)).state.balance;
    if (balance === 0n) return { raw: 0n };
    const moved = await move(ctx, { signer, to: into.address, amountRaw: balance, ownAccount: into });
    return { raw: balance, ...(moved.hash === null ? {} : { hash: moved.hash }) };
  } finally {
    await claim.release();
  }
}

/**
 * Keeps `count` lanes: accounts of the wallet at the lane indexes, each
 * funded with `fund` XNO from the account that funds them (the active one
 * when lanes are first set). New lanes, and lanes holding less, are sent what
 * they lack (sends between own accounts: the spending policy does not judge
 * them and budgets never count them; what lanes pay counts) and receive it.
 * Lanes beyond `count` are emptied back into the funding account (each
 * resolved first), which then receives. Refused before anything is sent when
 * the funding account holds too little.
 */
export async function setLanes(session: Session, input: { count: number; fundXno?: string; wallet?: string; signal?: AbortSignal }): Promise<LanesSetResult> {
  if (!Number.isInteger(input.count) || input.count < 0 || input.count > MAX_LANES) throw new NanoPayError('USAGE', `The number of lanes is 0 to ${MAX_LANES}, not ${input.count}`);
  const wallet = walletOf(session, input.wallet);
  const profile = session.profile();
  const record = profile.wallets[wallet] as NonNullable<(typeof profile.wallets)[string]>;
  if (record.kind === 'private-key' && input.count > 0) throw new NanoPayError('INVALID_REQUEST', 'A wallet imported from a private key has one account only: lanes need a seed or mnemonic wallet');
  const fundRaw = input.fundXno === undefined ? record.lanes?.fundRaw : xnoToRaw(input.fundXno).toString();
  if (input.count > 0 && (fundRaw === undefined || BigInt(fundRaw) <= 0n)) throw new NanoPayError('USAGE', 'Say what each lane is funded with: --fund XNO (more than 0)');
  const from = record.lanes?.from ?? (wallet === profile.activeWallet ? (profile.activeAccount ?? 0) : 0);
  const ctx = await session.context(input.signal);
  const funder = await session.account(wallet, from);
  const before = lanesOf(session, wallet);

  const accounts: Record<string, string> = {};
  for (let number = 0; number < input.count; number++) accounts[String(number)] = before?.settings.accounts[String(number)] ?? (await session.derive(wallet, record, LANE_BASE + number)).address;
  const settings: LaneSettings | undefined = input.count === 0 ? undefined : { count: input.count, fundRaw: fundRaw as string, from, accounts };
  // Refused before anything changes: no lane emptied, no setting saved, nothing sent.
  if (settings !== undefined) {
    const lacking = await Promise.all(Object.values(accounts).map(async (address) => BigInt(settings.fundRaw) - (await laneFunds(ctx, address))));
    const needed = lacking.reduce((sum, l) => sum + (l > 0n ? l : 0n), 0n);
    const held = (await readAccountHead(ctx, funder.address)).state.balance;
    if (needed > held) {
      throw new NanoPayError('INSUFFICIENT_FUNDS', `Funding the lanes needs ${rawToXno(needed)} XNO from ${funder.address}, which holds ${rawToXno(held)} XNO; nothing was sent and the lanes are as they were`, {
        hint: 'Receive or add funds to it first (nanopay receive), or fund the lanes with less (--fund).',
      });
    }
  }

  let returned = 0n;
  const emptied: (string | undefined)[] = [];
  for (const lane of before?.lanes.slice(input.count) ?? []) {
    const sent = await empty(session, ctx, before as LaneSet, lane, funder);
    returned += sent.raw;
    emptied.push(sent.hash);
  }
  session.updateProfile((p) => {
    const w = p.wallets[wallet];
    if (w === undefined) return p;
    const { lanes: _lanes, ...rest } = w;
    return { ...p, wallets: { ...p.wallets, [wallet]: settings === undefined ? rest : { ...rest, lanes: settings } } };
  });

  let funded = 0n;
  const set = lanesOf(session, wallet);
  if (set !== undefined) {
    const funding = new Map<string, string | undefined>();
    for (const lane of set.lanes) {
      const sent = await fundLane(session, ctx, set, lane, await laneSigner(session, set, lane));
      funded += sent.raw;
      funding.set(lane.address, sent.hash);
    }
    // Each lane receives its funding once it is confirmed: the waits run at once, not one lane after another.
    await Promise.all(
      set.lanes.map(async (lane) => {
        await ownSendConfirmed(ctx, funding.get(lane.address));
        const claim = await claimWaiting(stateDir(session.dir, 'lanes'), lane, () => Date.now() + SET_LEASE_MS, SET_WAIT_MS, ctx.signal);
        try {
          await receiveOnLane(ctx, await laneSigner(session, set, lane));
        } finally {
          await claim.release();
        }
      }),
    );
  }
  if (returned > 0n) {
    await Promise.all(emptied.map((hash) => ownSendConfirmed(ctx, hash)));
    await receive(session, { wallet, index: from, ...(input.signal === undefined ? {} : { signal: input.signal }) });
  }
  return { ...(await described(session, ctx, wallet)), funded: rawToXno(funded), funded_raw: funded.toString(), returned: rawToXno(returned), returned_raw: returned.toString() };
}
