import { NanoPayError } from '../errors.js';
import { normalizeAddress, rawToXno } from '../nano/index.js';
import type { SendRecord } from '../wallet/send-log.js';
import { executeSend, planSend } from './chain.js';
import { checkPerDay, checkPerSend } from './limits.js';
import { recordLanded } from './recovery.js';
import type { Session } from './session.js';

export interface SendInput {
  to: string;
  amountRaw: bigint;
  /** Idempotency key: a repeat returns the first result and sends nothing. */
  id?: string;
  dryRun?: boolean;
  wallet?: string;
  index?: number;
  /** Asked once the preview is known; false cancels. Front ends decide how to ask. */
  confirm?: (preview: SendPreview) => Promise<boolean>;
  signal?: AbortSignal;
}

export interface SendPreview {
  from: string;
  to: string;
  amount: string;
  amount_raw: string;
  balance: string;
  balance_raw: string;
  balance_after: string;
  balance_after_raw: string;
}

export interface SendResult extends Omit<SendPreview, 'balance' | 'balance_raw'> {
  hash: string | null;
  dry_run: boolean;
  /** True when `id` had already been used: nothing was sent this time. */
  repeated: boolean;
}

function fromRecord(record: SendRecord): SendResult {
  return {
    hash: record.hash,
    from: record.from,
    to: record.to,
    amount: rawToXno(BigInt(record.amountRaw)),
    amount_raw: record.amountRaw,
    balance_after: rawToXno(BigInt(record.balanceRaw)),
    balance_after_raw: record.balanceRaw,
    dry_run: false,
    repeated: true,
  };
}

/** What a payment of `amountRaw` from an account holding `balanceRaw` will do. */
export function preview(from: string, to: string, amountRaw: bigint, balanceRaw: bigint): SendPreview {
  return {
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

/**
 * A send: limits and funds are checked before any work is made; the block is
 * built, worked, signed and journaled under the account lock, then published.
 */
export async function send(session: Session, input: SendInput): Promise<SendResult> {
  const to = normalizeAddress(input.to);
  if (input.amountRaw <= 0n) throw new NanoPayError('INVALID_NUMBER_FORMAT', 'The amount must be greater than zero');
  const limits = session.profile().limits;
  checkPerSend(limits, input.amountRaw);
  if (input.id !== undefined) {
    const earlier = await session.sendLog.result(session.profileName, input.id);
    if (earlier !== undefined) return fromRecord(earlier);
  }
  const account = await session.account(input.wallet, input.index);
  const ctx = await session.context(input.signal);

  const first = await planSend(ctx, account.address, to, input.amountRaw);
  checkPerDay(limits, await session.sendLog.spentToday(account.address), input.amountRaw);
  const shown = preview(account.address, to, input.amountRaw, first.head.state.balance);
  if (input.dryRun) {
    const { balance: _b, balance_raw: _r, ...rest } = shown;
    return { ...rest, hash: null, dry_run: true, repeated: false };
  }
  if (input.confirm !== undefined && !(await input.confirm(shown))) {
    throw new NanoPayError('CANCELLED', 'Send cancelled; nothing was signed');
  }

  return session.withAccount(ctx, account, async () => {
    if (input.id !== undefined) {
      const settled = await session.sendLog.result(session.profileName, input.id);
      if (settled !== undefined) return fromRecord(settled);
    }
    // The head may have moved while the user confirmed: plan again on the fresh one.
    const plan = await planSend(ctx, account.address, to, input.amountRaw);
    checkPerDay(limits, await session.sendLog.spentToday(account.address), input.amountRaw);
    const sent = await executeSend(ctx, account, plan, input.id === undefined ? {} : { sendId: input.id });
    await recordLanded(session, sent.entry);
    return {
      hash: sent.hash,
      from: account.address,
      to,
      amount: rawToXno(sent.amountRaw),
      amount_raw: sent.amountRaw.toString(),
      balance_after: rawToXno(sent.balanceRaw),
      balance_after_raw: sent.balanceRaw.toString(),
      dry_run: false,
      repeated: false,
    };
  });
}
