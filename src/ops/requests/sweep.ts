import { randomUUID } from 'node:crypto';
import { NanoPayError } from '../../errors.js';
import { rawToXno } from '../../nano/index.js';
import type { RefundRecord, SweepAccount, SweepRun } from '../../store/refunds.js';
import { readAccountHead } from '../ledger/chain.js';
import { allProvedReceivable } from '../ledger/proofs.js';
import { rawOf, xnoAndRaw, type Amount } from '../money.js';
import { awaitsAnswer } from '../spending/approvals.js';
import { receiveTakings } from './takings.js';
import { resolveRecipient } from '../profile/contacts.js';
import type { Session } from '../session.js';
import { move } from '../spending/movement.js';
import { failedBeforeSigning } from '../spending/spend-outcome.js';
import { nodePaymentStatus } from './node-requests.js';

export interface SweepInput {
  /** An address, or @NAME for a contact's. */
  to: string;
  /** Balances below this are left where they are (dust); default 1 raw. */
  min?: Amount;
  /** Requests the merchant settled though their status does not say so (a late payment honoured): swept too. */
  include?: string[];
  dryRun?: boolean;
  signal?: AbortSignal;
}

export interface SweepResult {
  /** The run's id (absent in a dry run). */
  run_id?: string;
  to: string;
  dry_run: boolean;
  /** A run stopped before it finished (a crash) was finished. */
  resumed: boolean;
  accounts: (Omit<SweepAccount, 'wallet'> & { amount?: string })[];
  /** Accounts whose balance moved (or would move). */
  swept: number;
  total: string;
  total_raw: string;
  /** Accounts left alone as their requests are not settled (each says why), and what they hold. */
  left: number;
  left_total: string;
  left_total_raw: string;
  /** Accounts the spending policy holds for a person's approval (the run finishes them once given). */
  held: number;
}

/** The ends of an account in a run: it is not looked at again in that run. */
const SETTLED: readonly SweepAccount['status'][] = ['swept', 'below_min', 'empty', 'failed', 'left'];

const sumOf = (refunds: RefundRecord[]): bigint => refunds.reduce((sum, r) => sum + BigInt(r.amount_raw), 0n);

/**
 * Why a fresh account's money is not the shop's to move yet, or undefined when its request is settled: paid
 * (or nothing came and it expired) with no refund waiting; under- or overpaid, or paid late, only once what
 * went back settles it (all of it, or an overpayment's difference). The merchant decides the others.
 */
async function unsettledReason(session: Session, requestId: string): Promise<string | undefined> {
  const status = await nodePaymentStatus(session, await session.nodeClient(), requestId);
  const refunds = await (await session.dataStore()).refunds.ofRequest(requestId);
  if (refunds.some((r) => r.status === 'pending')) return 'a refund of it waits to be sent';
  const refunded = sumOf(refunds.filter((r) => r.status === 'sent'));
  const wanted = BigInt(status.record.amountRaw);
  switch (status.state) {
    case 'paid':
    case 'expired':
      return undefined;
    case 'waiting':
      return 'it waits for its payment';
    case 'paid_late':
      return refunded >= wanted ? undefined : 'it was paid late: honour the order (sweep --include ID) or refund it';
    case 'underpaid':
      return refunded >= BigInt(status.mismatch?.amount_raw ?? '0') ? undefined : 'it is underpaid: the rest may still come, or refund it';
    case 'overpaid': {
      const arrived = BigInt(status.mismatch?.amount_raw ?? '0');
      return arrived - refunded <= wanted ? undefined : `it is overpaid by ${xnoAndRaw(arrived - refunded - wanted)}: refund the difference first`;
    }
    default:
      return undefined;
  }
}

function summary(run: SweepRun, dryRun: boolean, resumed: boolean): SweepResult {
  const moved = run.accounts.filter((a) => a.status === 'swept' || (dryRun && a.status === 'sending'));
  const total = moved.reduce((sum, a) => sum + BigInt(a.amount_raw ?? '0'), 0n);
  const left = run.accounts.filter((a) => a.status === 'left');
  const leftTotal = left.reduce((sum, a) => sum + BigInt(a.amount_raw ?? '0'), 0n);
  return {
    ...(dryRun ? {} : { run_id: run.id }),
    to: run.to,
    dry_run: dryRun,
    resumed,
    accounts: run.accounts.map(({ wallet: _wallet, ...a }) => ({ ...a, ...(a.amount_raw === undefined ? {} : { amount: rawToXno(BigInt(a.amount_raw)) }) })),
    swept: moved.length,
    total: rawToXno(total),
    total_raw: total.toString(),
    left: left.length,
    left_total: rawToXno(leftTotal),
    left_total_raw: leftTotal.toString(),
    held: run.accounts.filter((a) => a.status === 'held').length,
  };
}

/** The fresh accounts of the active wallet's requests, one line each (an account serves one request). */
async function freshLines(session: Session): Promise<SweepAccount[]> {
  const wallet = session.profile().activeWallet;
  if (wallet === undefined) throw new NanoPayError('NOT_FOUND', 'No active wallet', { hint: 'Create one (nanopay wallet create) or pick one (nanopay wallet use NAME).' });
  const records = await (await session.dataStore()).requests.fresh(wallet);
  const lines: SweepAccount[] = [];
  for (const r of records) {
    if (r.fresh === undefined || lines.some((l) => l.index === r.fresh?.index)) continue;
    lines.push({ address: await session.address(wallet, r.fresh.index), wallet, index: r.fresh.index, request_id: r.id, status: 'planned' });
  }
  return lines;
}

/** What an account holds and has waiting for it: its verified balance, and the proved payments not yet received. */
async function takingsAt(session: Session, address: string): Promise<{ held: bigint; waiting: bigint }> {
  const node = await session.nodeClient();
  const held = (await readAccountHead({ api: node }, address)).state.balance;
  const waiting = (await allProvedReceivable(node, address, await node.pending(address))).reduce((sum, p) => sum + p.amountRaw, 0n);
  return { held, waiting };
}

/** What would move from one account: its verified balance and the proved payments waiting for it (nothing, when its request is not settled). */
async function wouldMove(session: Session, line: SweepAccount, minRaw: bigint, include: Set<string>): Promise<SweepAccount> {
  const reason = include.has(line.request_id) ? undefined : await unsettledReason(session, line.request_id);
  const { held, waiting } = await takingsAt(session, line.address);
  const amount = held + waiting;
  if (reason !== undefined) return { ...line, status: 'left', reason, amount_raw: amount.toString() };
  return { ...line, status: amount === 0n ? 'empty' : amount < minRaw ? 'below_min' : 'sending', received_raw: waiting.toString(), amount_raw: amount.toString() };
}

/**
 * One account of a run, from where it stands: left alone when its request is
 * not settled (unsettledReason, unless the merchant included it); else what is
 * pending received (its request read first), then its whole balance sent to
 * the run's destination through the one money path under the run's id and the
 * account (kind `sweep`): the amount is recorded before signing, so a rerun
 * after a crash finds its block and never sends a second. One the policy held
 * goes with its approval once a person gave it, and waits while nobody has.
 */
async function sweepAccount(session: Session, run: SweepRun, line: SweepAccount, minRaw: bigint, include: Set<string>, save: () => Promise<void>, signal?: AbortSignal): Promise<void> {
  const ctx = await session.context(signal);
  const signer = await session.account(line.wallet, line.index);
  if (line.status === 'planned') {
    const reason = include.has(line.request_id) ? undefined : await unsettledReason(session, line.request_id);
    if (reason !== undefined) {
      line.status = 'left';
      line.reason = reason;
      const { held, waiting } = await takingsAt(session, line.address);
      line.amount_raw = (held + waiting).toString();
      return save();
    }
    line.received_raw = (await receiveTakings(session, ctx, signer, line.request_id)).toString();
    const balance = (await readAccountHead(ctx, line.address)).state.balance;
    line.amount_raw = balance.toString();
    line.status = balance === 0n ? 'empty' : balance < minRaw ? 'below_min' : 'sending';
    await save();
  }
  if (line.status === 'held' && line.approval_id !== undefined && (await awaitsAnswer(session, line.approval_id))) return;
  if (line.status !== 'sending' && line.status !== 'held') return;
  // Front end: nanopay sweep (the CLI), or checkout serve --sweep-to (its own timer). A spend like any other: the limits and the policy apply.
  const moved = await move(ctx, {
    signer,
    to: run.to,
    amountRaw: BigInt(line.amount_raw as string),
    id: `sweep-${run.id}-${line.index}`,
    kind: 'sweep',
    ...(line.approval_id === undefined ? {} : { spend: { approvalId: line.approval_id } }),
  });
  line.status = 'swept';
  line.block = moved.hash as string;
  delete line.error;
  await save();
}

/**
 * Moves the takings of the fresh accounts (request --fresh-address, checkout
 * serve --fresh-addresses) to one address: on each, what is pending is
 * received and the whole balance sent. The run is kept in the store, one line
 * per account, so a sweep stopped by a crash is finished by the next (no
 * account swept twice, none forgotten). A refusal before signing (a limit)
 * fails that account only; anything else stops the run, to be finished.
 */
export async function sweep(session: Session, input: SweepInput): Promise<SweepResult> {
  if (session.backendKind() !== 'node') {
    throw new NanoPayError('USAGE', 'sweep moves the takings of fresh addresses, which exist on the node backend only', { hint: 'On the service every request is paid to your own address.' });
  }
  const to = (await resolveRecipient(session, input.to)).address;
  const minRaw = input.min === undefined ? 1n : rawOf(input.min);
  if (minRaw <= 0n) throw new NanoPayError('INVALID_NUMBER_FORMAT', '--min must be greater than zero');
  const store = await session.dataStore();
  const include = new Set((input.include ?? []).map((id) => id.toLowerCase()));
  if (input.dryRun === true) {
    const lines = await Promise.all((await freshLines(session)).map((l) => wouldMove(session, l, minRaw, include)));
    return summary({ id: '', to, min_raw: minRaw.toString(), started_at: new Date().toISOString(), accounts: lines }, true, false);
  }
  return store.exclusive('sweep', async () => {
    let run = await store.sweeps.unfinished();
    const resumed = run !== undefined;
    if (run !== undefined && run.to !== to) {
      const held = run.accounts.flatMap((a) => (a.status === 'held' && a.approval_id !== undefined ? [a.approval_id] : []));
      if (held.length > 0) {
        throw new NanoPayError('CONFLICT', `A sweep to ${run.to} waits for approvals (${held.join(', ')}); it finishes once each is approved or denied`, {
          hint: `nanopay approvals approve ID (or deny), then nanopay sweep --to ${run.to}`,
        });
      }
      throw new NanoPayError('CONFLICT', `A sweep to ${run.to} stopped before it finished; finish it first`, { hint: `nanopay sweep --to ${run.to}` });
    }
    if (run === undefined) run = { id: randomUUID(), to, min_raw: minRaw.toString(), started_at: new Date().toISOString(), accounts: await freshLines(session) };
    else {
      // Finishing a run (one stopped, or one waiting for approvals) takes in the accounts made since, and the requests now included.
      for (const line of run.accounts) if (line.status === 'left' && include.has(line.request_id)) line.status = 'planned';
      const known = new Set(run.accounts.map((a) => `${a.wallet}/${a.index}`));
      run.accounts.push(...(await freshLines(session)).filter((l) => !known.has(`${l.wallet}/${l.index}`)));
    }
    const current = run;
    const save = (): Promise<void> => store.sweeps.save(current);
    await save();
    for (const line of current.accounts) {
      if (SETTLED.includes(line.status)) continue;
      try {
        await sweepAccount(session, current, line, BigInt(current.min_raw), include, save, input.signal);
      } catch (error) {
        if (!(await failedBeforeSigning(session, error, line.address))) throw error;
        const { code, message, details } = error as NanoPayError;
        const approval = code === 'APPROVAL_REQUIRED' ? (details?.approval as { id: string } | undefined) : undefined;
        line.status = approval === undefined ? 'failed' : 'held';
        line.error = { code, message };
        if (approval !== undefined) line.approval_id = approval.id;
        await save();
      }
    }
    // A run with an account held for approval stays open: the next sweep (to the same address) sends it once approved.
    if (!current.accounts.some((a) => a.status === 'held')) current.finished_at = new Date().toISOString();
    await save();
    return summary(current, false, resumed);
  });
}
