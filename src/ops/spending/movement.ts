import { NanoPayError } from '../../errors.js';
import { normalizeAddress, rawToXno, type StateBlock } from '../../nano/index.js';
import type { JournalEntry } from '../../wallet/journal.js';
import type { PaymentKind, SendRecord } from '../../wallet/send-log.js';
import { planOn, planSend, publishEntry, readAccountHead, sendBlockOf, signAndJournal, submitEntry, type AccountHead, type SendPlan } from '../ledger/chain.js';
import type { BlockNote, OpsContext, SignContext, Signer } from '../context.js';
import { harderThreshold } from '../../work/index.js';
import { recordLanded } from '../ledger/landed.js';
import { settleJournal } from '../ledger/recovery.js';
import { admitSpend, decideSpend, denial, recordDeclined, screenSpend, type Judge, type SpendRequest } from './decide.js';
import type { SpendKind, Verdict } from './policy.js';
import { countedSpends, importLegacySpends, markSpend, resolveOrphans, withSpendingLock } from './spend-log.js';

/** What a payment will do, shown before it is confirmed. */
export interface SendPreview {
  from: string;
  to: string;
  amount: string;
  amount_raw: string;
  balance: string;
  balance_raw: string;
  balance_after: string;
  balance_after_raw: string;
  /** The contact the recipient is (send @NAME, or an address of a contact). */
  contact?: string;
}

export type Confirm = (preview: SendPreview) => Promise<boolean>;

/** The one door money leaves by: send, pay, donate, top-up, refunds and sweeps all come through here. */
export interface Movement<A> {
  signer: Signer;
  to: string;
  amountRaw: bigint;
  /** Idempotency key: a repeat with the same parameters returns the first result and moves nothing. */
  id?: string;
  /** What kind of payment `id` is the key of: a key of another kind is refused. By default an x402 cheque (`note.chequeFor`) or a send. */
  kind?: PaymentKind;
  /** The contact `to` is, shown in the preview. */
  contact?: string;
  dryRun?: boolean;
  /** Work at least this hard (16 hex), when the payee states a harder send threshold than the backend's (an x402 seller). */
  workThreshold?: string;
  /** Asked once the preview is known, after the policy passed; false cancels. Not asked when a person already said yes to an "ask above" rule. */
  confirm?: Confirm;
  /**
   * What the spending policy sees besides payer, recipient and amount: the
   * kind (by default from `kind` and `note`), the host and requirement of an
   * x402 payment, and the approval the caller got for this spend.
   */
  spend?: { kind?: SpendKind; host?: string; requirement?: unknown; approvalId?: string; payer?: string };
  /**
   * The recipient is another account of the same wallet, which this signer
   * signs for (a payment lane funded or emptied): no spend, so the spending
   * policy does not judge it and budgets never count it. Only ops/lanes sets
   * it, with an account it derived from the wallet's own secret.
   */
  ownAccount?: Signer;
  /** What the entry carries to finish its purpose after a crash (a top-up's transaction id). */
  note?: BlockNote;
  /** How the signed block reaches the ledger; the API's publish by default. */
  submit?: (block: StateBlock) => Promise<A>;
  /**
   * The block leaves as a cheque whose fate submit does not learn (handed to an
   * x402 client library that presents it): its journal entry stays, nothing is
   * recorded, and the account's next block resolves it (recovery.ts).
   */
  outstanding?: boolean;
  /** Runs on the answer once the block landed and was recorded, before its journal entry goes (a top-up keeps its answer there until reported). */
  landed?: (answer: A | undefined, entry: JournalEntry, plan: SendPlan) => Promise<void>;
  /**
   * The account's verified head, read holding its claim (a payment lane: no
   * other call or process signs on it until the claim is given back): the
   * send is planned on it, not on a head read again, unless a journal entry
   * of the account was settled meanwhile (then the head is read again).
   */
  head?: AccountHead;
  /** How the account's head is read each time the send is planned: its verified head from the backend (readAccountHead) by default. */
  readHead?: () => Promise<AccountHead>;
}

export interface Moved<A> {
  hash: string | null;
  from: string;
  to: string;
  amountRaw: bigint;
  balanceRaw: bigint;
  balanceAfterRaw: bigint;
  dryRun: boolean;
  /** True when `id` had already been used: nothing moved this time. */
  repeated: boolean;
  answer?: A;
  /** A dry run's verdict of the policy: allowed, or waiting for an approval under `rule`. */
  policy?: Pick<Verdict, 'outcome' | 'rule' | 'message'>;
}

function preview(from: string, to: string, amountRaw: bigint, balanceRaw: bigint, contact: string | undefined): SendPreview {
  return {
    ...(contact === undefined ? {} : { contact }),
    from,
    to,
    amount: rawToXno(amountRaw),
    amount_raw: amountRaw.toString(),
    balance: rawToXno(balanceRaw),
    balance_raw: balanceRaw.toString(),
    balance_after: rawToXno(balanceRaw - amountRaw),
    balance_after_raw: (balanceRaw - amountRaw).toString(),
  };
}

const KIND_NAMES: Record<PaymentKind, [article: string, name: string]> = {
  send: ['a', 'send'],
  donate: ['a', 'donation'],
  x402: ['an', 'x402 payment (nanopay fetch)'],
  refund: ['a', 'refund'],
  sweep: ['a', 'sweep'],
  topup: ['a', 'top-up'],
};
const named = (kind: PaymentKind): string => KIND_NAMES[kind].join(' ');

const kindOf = (m: Pick<Movement<unknown>, 'kind' | 'note'>): PaymentKind => m.kind ?? (m.note?.chequeFor === undefined ? 'send' : 'x402');

/**
 * The earlier result under `id`, if the parameters are the same; a different payment under the same key is refused,
 * and so is a payment of another kind (a key recorded before kinds stands for its payment whatever the kind).
 */
function repeatOf<A>(record: SendRecord, m: { from: string; to: string; amountRaw: bigint; id: string; kind: PaymentKind }): Moved<A> {
  if (record.kind !== undefined && record.kind !== m.kind) {
    const first = `${named(record.kind)} of ${rawToXno(BigInt(record.amountRaw))} XNO to ${record.to} (block ${record.hash}, ${record.at})`;
    throw new NanoPayError('IDEMPOTENCY_MISMATCH', `The key "${m.id}" was first used for ${first}; it cannot be the key of ${named(m.kind)} too. Nothing was sent`, {
      hint: `Use a new --id for this ${KIND_NAMES[m.kind][1]}; repeat the ${KIND_NAMES[record.kind][1]} itself to get its result.`,
    });
  }
  const differs: string[] = [];
  if (record.from !== m.from) differs.push(`account (first ${record.from}, now ${m.from})`);
  if (record.to !== m.to) differs.push(`recipient (first ${record.to}, now ${m.to})`);
  if (BigInt(record.amountRaw) !== m.amountRaw) differs.push(`amount (first ${rawToXno(BigInt(record.amountRaw))} XNO, now ${rawToXno(m.amountRaw)} XNO)`);
  if (differs.length > 0) {
    throw new NanoPayError('IDEMPOTENCY_MISMATCH', `The key "${m.id}" was already used for another payment; nothing was sent. It differs in: ${differs.join('; ')}`, {
      hint: 'Use a new --id for a new payment; repeat the same parameters to get the first result.',
    });
  }
  const amountRaw = BigInt(record.amountRaw);
  const balanceAfterRaw = BigInt(record.balanceRaw);
  return { hash: record.hash, from: record.from, to: record.to, amountRaw, balanceRaw: balanceAfterRaw + amountRaw, balanceAfterRaw, dryRun: false, repeated: true };
}

async function earlier<A>(ctx: OpsContext, m: Movement<A>, to: string): Promise<Moved<A> | undefined> {
  if (m.id === undefined) return undefined;
  const record = await ctx.sendLog.result(ctx.profile, m.id);
  return record === undefined ? undefined : repeatOf<A>(record, { from: m.signer.address, to, amountRaw: m.amountRaw, id: m.id, kind: kindOf(m) });
}

function planned<A>(plan: SendPlan, from: string, extra: Pick<Moved<A>, 'hash' | 'dryRun' | 'answer' | 'policy'>): Moved<A> {
  return { from, to: plan.to, amountRaw: plan.amountRaw, balanceRaw: plan.head.state.balance, balanceAfterRaw: plan.balanceAfterRaw, repeated: false, ...extra };
}

/** The spend as the policy sees it. */
function spendRequest<A>(ctx: OpsContext, m: Movement<A>, to: string): SpendRequest {
  const kind = m.spend?.kind ?? (m.note?.topupTransactionId !== undefined ? 'topup' : kindOf(m));
  return {
    account: m.signer.address,
    to,
    amountRaw: m.amountRaw,
    kind,
    ...(m.contact === undefined ? {} : { contact: m.contact }),
    ...(m.spend?.host === undefined ? {} : { host: m.spend.host.toLowerCase() }),
    ...(m.spend?.requirement === undefined ? {} : { requirement: m.spend.requirement }),
    ...(m.spend?.approvalId === undefined ? {} : { approvalId: m.spend.approvalId }),
    ...(m.spend?.payer === undefined ? {} : { payer: m.spend.payer }),
    caller: ctx.frontEnd,
  };
}

/** The spending decisions of this process: the key store opened with the password, the policy checked against its seal. */
export function judgeOf(ctx: OpsContext): Judge {
  return { profile: ctx.profile, frontEnd: ctx.frontEnd, policy: ctx.policy, now: ctx.now, store: ctx.store, contacts: ctx.contacts, counted: (since) => countedSpends(ctx, since), sealKey: ctx.sealKey };
}

/**
 * What the policy would say of a spend, recording nothing (a dry run, a
 * quote): an approval the caller holds for it makes an "ask" an allow. Judged
 * by the unlocked session when the keys are there.
 */
export async function judgeDry(ctx: OpsContext, request: SpendRequest): Promise<Verdict> {
  const authority = await ctx.authority();
  if (authority !== undefined) return authority.judge(request, 'dry');
  const { verdict, approval } = await decideSpend(judgeOf(ctx), request);
  return verdict.outcome === 'ask' && approval !== undefined ? { outcome: 'allow' } : verdict;
}

/**
 * Judges a spend before anything is asked or signed: refused (recorded,
 * POLICY_DENIED), or held for a person (APPROVAL_REQUIRED). At a terminal a
 * held spend is asked about there (askPerson answers its approval: yes needs
 * the key store password); a no is DECLINED. Returns the spend with the
 * approval it then carries, and whether the person at the terminal said yes.
 */
async function screen(ctx: OpsContext, request: SpendRequest): Promise<{ request: SpendRequest; attended: boolean }> {
  const authority = await ctx.authority();
  const judged = (r: SpendRequest): Promise<unknown> => (authority === undefined ? screenSpend(judgeOf(ctx), r) : authority.judge(r, 'screen'));
  try {
    await judged(request);
    return { request, attended: false };
  } catch (error) {
    if (!(error instanceof NanoPayError) || error.code !== 'APPROVAL_REQUIRED' || ctx.askPerson === undefined) throw error;
    const approval = error.details?.approval as { id: string; reason: string; rule: string };
    if (!(await ctx.askPerson(`${approval.reason} (rule: ${approval.rule}). Pay it?`, approval.id))) {
      await recordDeclined(judgeOf(ctx), request, approval.id);
      throw new NanoPayError('DECLINED', 'Declined; nothing was signed');
    }
    const approved = { ...request, approvalId: approval.id };
    await judged(approved);
    return { request: approved, attended: true };
  }
}

/**
 * Moves money, guarded at every step: the spending policy judges the spend
 * before any question (refused, or held for a person's yes); the preview is
 * built on the verified head; the user confirms (when asked); then, holding the account
 * lock, any earlier entry is settled, the send is planned again on the fresh
 * head, and the block is signed, judged again and journaled in one hold of the
 * profile's spending lock (so it counts at once), submitted and recorded
 * (spend and idempotency result) before its journal entry goes.
 */
export async function move<A = void>(ctx: OpsContext, m: Movement<A>): Promise<Moved<A>> {
  const to = normalizeAddress(m.to);
  if (m.amountRaw <= 0n) throw new NanoPayError('INVALID_NUMBER_FORMAT', 'The amount must be greater than zero');
  if (m.ownAccount !== undefined) return moveWithin(ctx, m, to, m.ownAccount);
  let repeat = await earlier(ctx, m, to);
  const pending = await ctx.journal.read(m.signer.address);
  // A block signed under this very key and not yet settled (a run killed after signing): it is this payment.
  // Settled first, the rerun is its repeat, not a second payment planned on a head it already spent.
  if (repeat === undefined && m.id !== undefined && pending?.sendId === m.id) {
    await ctx.lock(m.signer.address, () => settleJournal(ctx, m.signer.address, m.signer));
    repeat = await earlier(ctx, m, to);
  }
  if (repeat !== undefined) {
    // A run killed after recording but before clearing its entry leaves it for the next command: settle it now.
    if (pending !== undefined) await ctx.lock(m.signer.address, () => settleJournal(ctx, m.signer.address, m.signer));
    return repeat;
  }

  await importLegacySpends(ctx);
  const readHead = m.readHead ?? (() => readAccountHead(ctx, m.signer.address));
  let request = spendRequest(ctx, m, to);
  if (m.dryRun) {
    // Judged as it would be, recording nothing and holding nothing.
    const verdict = await judgeDry(ctx, request);
    if (verdict.outcome === 'deny') throw denial(verdict);
    const first = planOn(await readHead(), to, m.amountRaw);
    return planned(first, m.signer.address, { hash: null, dryRun: true, policy: { outcome: verdict.outcome, ...(verdict.rule === undefined ? {} : { rule: verdict.rule, message: verdict.message as string }) } });
  }
  const screened = await screen(ctx, request);
  request = screened.request;
  // A person asked sees a preview planned on the verified head; without one, the plan made holding the lock is the only one.
  if (!screened.attended && m.confirm !== undefined) {
    const first = planOn(await readHead(), to, m.amountRaw);
    if (!(await m.confirm(preview(m.signer.address, to, m.amountRaw, first.head.state.balance, m.contact)))) throw new NanoPayError('DECLINED', 'Declined; nothing was signed');
  }

  return ctx.lock(m.signer.address, async () => {
    const settled = await settleJournal(ctx, m.signer.address, m.signer);
    await resolveOrphans(ctx, m.signer.address);
    const resumed = await earlier(ctx, m, to);
    if (resumed !== undefined) return resumed;
    // The head may have moved while the user confirmed: plan again on the fresh one (a claimed lane's cannot move).
    const plan = m.head !== undefined && settled.outcome === 'none' ? planOn(m.head, to, m.amountRaw) : planOn(await readHead(), to, m.amountRaw);
    const note: BlockNote = { thresholds: plan.head.thresholds, amountRaw: m.amountRaw.toString(), profile: ctx.profile, ...(m.id === undefined ? {} : { sendId: m.id, sendKind: kindOf(m) }), ...m.note };
    // Judged again and journaled in one hold of the profile's spending lock: the journaled send counts at once.
    const thresholds = m.workThreshold === undefined ? plan.head.thresholds : { ...plan.head.thresholds, send: harderThreshold(plan.head.thresholds.send, m.workThreshold) };
    // An unlocked session judges (and records) the spend as it signs; else the decision is made again here, holding the lock.
    const shown: SignContext = { ...(plan.head.block === undefined ? {} : { previous: plan.head.block }), spend: request };
    const entry = await signAndJournal(
      ctx,
      m.signer,
      sendBlockOf(plan),
      'send',
      thresholds,
      note,
      (signed) =>
        withSpendingLock(ctx, async () => {
          if (shown.judged !== true) await admitSpend(judgeOf(ctx), request, signed.hash);
          await ctx.journal.record(m.signer.address, signed).catch(async (error: unknown) => {
            await markSpend(ctx, signed, 'dropped');
            throw error;
          });
        }),
      shown,
    );
    const answer = m.submit === undefined ? ((await publishEntry(ctx, entry)) as A | undefined) : await submitEntry(ctx, entry, m.submit);
    if (m.outstanding === true) return planned(plan, m.signer.address, { hash: entry.hash, dryRun: false, ...(answer === undefined ? {} : { answer }) });
    await recordLanded(ctx, entry);
    await m.landed?.(answer, entry, plan);
    await ctx.journal.clear(m.signer.address);
    return planned(plan, m.signer.address, { hash: entry.hash, dryRun: false, ...(answer === undefined ? {} : { answer }) });
  });
}

/**
 * A send to another account of the wallet (`own` signs for the recipient):
 * not a spend, so no policy decision and nothing that counts; otherwise the
 * same guarded steps (account lock, the earlier entry settled, planned on the
 * fresh head, journaled before it leaves, recorded before the entry goes).
 */
async function moveWithin<A>(ctx: OpsContext, m: Movement<A>, to: string, own: Signer): Promise<Moved<A>> {
  if (normalizeAddress(own.address) !== to) throw new NanoPayError('INTERNAL_ERROR', `A send between own accounts must go to the account it signs for (${own.address}), not ${to}`);
  return ctx.lock(m.signer.address, async () => {
    await settleJournal(ctx, m.signer.address, m.signer);
    const plan = await planSend(ctx, m.signer.address, to, m.amountRaw);
    const entry = await signAndJournal(ctx, m.signer, sendBlockOf(plan), 'send', plan.head.thresholds, { amountRaw: m.amountRaw.toString(), profile: ctx.profile, ownTransfer: true }, undefined, {
      ...(plan.head.block === undefined ? {} : { previous: plan.head.block }),
      ...(own.keyRef === undefined ? {} : { own: own.keyRef.index }),
    });
    await publishEntry(ctx, entry);
    await recordLanded(ctx, entry);
    await ctx.journal.clear(m.signer.address);
    return planned<A>(plan, m.signer.address, { hash: entry.hash, dryRun: false });
  });
}
