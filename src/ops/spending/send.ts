import { normalizeAddress, rawToXno } from '../../nano/index.js';
import { rawOf, type Amount } from '../money.js';
import { move, type Confirm, type Moved, type SendPreview } from './movement.js';
import type { Session } from '../session.js';

export type { SendPreview } from './movement.js';

export interface SendInput {
  to: string;
  amount: Amount;
  /** Idempotency key: a repeat with the same parameters returns the first result and sends nothing. */
  id?: string;
  dryRun?: boolean;
  wallet?: string;
  index?: number;
  /** Asked once the preview is known; false cancels. Front ends decide how to ask. */
  confirm?: Confirm;
  signal?: AbortSignal;
}

export interface SendResult extends Omit<SendPreview, 'balance' | 'balance_raw'> {
  hash: string | null;
  dry_run: boolean;
  /** True when `id` had already been used: nothing was sent this time. */
  repeated: boolean;
}

/** The edge form of a movement: amounts as XNO and raw strings. */
function sendResult(moved: Moved<unknown>): SendResult {
  return {
    hash: moved.hash,
    from: moved.from,
    to: moved.to,
    amount: rawToXno(moved.amountRaw),
    amount_raw: moved.amountRaw.toString(),
    balance_after: rawToXno(moved.balanceAfterRaw),
    balance_after_raw: moved.balanceAfterRaw.toString(),
    dry_run: moved.dryRun,
    repeated: moved.repeated,
  };
}

/** A send from the active account (or the one named), through the one guarded money path. */
export async function send(session: Session, input: SendInput): Promise<SendResult> {
  // A mistyped address is reported before the key store is unlocked.
  normalizeAddress(input.to);
  const ctx = await session.context(input.signal);
  const signer = await session.account(input.wallet, input.index);
  return sendResult(
    await move(ctx, {
      signer,
      to: input.to,
      amountRaw: rawOf(input.amount),
      ...(input.id === undefined ? {} : { id: input.id }),
      ...(input.dryRun === undefined ? {} : { dryRun: input.dryRun }),
      ...(input.confirm === undefined ? {} : { confirm: input.confirm }),
    }),
  );
}
