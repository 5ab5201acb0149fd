import { rawToXno } from '../../nano/index.js';
import { resolveRecipient } from '../profile/contacts.js';
import { rawOf, type Amount } from '../money.js';
import { move, type Confirm, type Moved, type SendPreview } from './movement.js';
import type { Session } from '../session.js';
import type { PaymentKind } from '../../wallet/send-log.js';

export type { SendPreview } from './movement.js';

export interface SendInput {
  /** An address, or @NAME for a contact's. */
  to: string;
  amount: Amount;
  /** Idempotency key: a repeat with the same parameters returns the first result and sends nothing. */
  id?: string;
  dryRun?: boolean;
  wallet?: string;
  index?: number;
  /** Asked once the preview is known; false cancels. Front ends decide how to ask. */
  confirm?: Confirm;
  /** The approval a person gave for this very spend (APPROVAL_REQUIRED named it). */
  approval?: string;
  signal?: AbortSignal;
}

export interface SendResult extends Omit<SendPreview, 'balance' | 'balance_raw'> {
  hash: string | null;
  dry_run: boolean;
  /** True when `id` had already been used: nothing was sent this time. */
  repeated: boolean;
  /** The contact the recipient was given as (@NAME), if it was. */
  contact?: string;
  /** A dry run: what the spending policy would say (allow, or ask: an approval would be needed, under `rule`). */
  policy?: { outcome: 'allow' | 'deny' | 'ask'; rule?: string; message?: string };
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
    ...(moved.policy === undefined ? {} : { policy: moved.policy }),
  };
}

/** A send from the active account (or the one named), through the one guarded money path; `kind` is what its --id is the key of. */
export async function send(session: Session, input: SendInput, kind: PaymentKind = 'send'): Promise<SendResult> {
  // A mistyped address or an unknown contact is reported before the key store is unlocked.
  const recipient = await resolveRecipient(session, input.to);
  const ctx = await session.context(input.signal);
  const signer = await session.account(input.wallet, input.index);
  const sent = sendResult(
    await move(ctx, {
      signer,
      to: recipient.address,
      ...(recipient.contact === undefined ? {} : { contact: recipient.contact }),
      amountRaw: rawOf(input.amount),
      ...(input.id === undefined ? {} : { id: input.id }),
      kind,
      spend: { kind: kind === 'donate' ? 'donate' : 'send', ...(input.approval === undefined ? {} : { approvalId: input.approval }) },
      ...(input.dryRun === undefined ? {} : { dryRun: input.dryRun }),
      ...(input.confirm === undefined ? {} : { confirm: input.confirm }),
    }),
  );
  return recipient.contact === undefined ? sent : { ...sent, contact: recipient.contact };
}
