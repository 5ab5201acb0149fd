import { linkAsAccount } from '../../nano/index.js';
import { rawOf } from '../money.js';
import { send, type SendInput, type SendResult } from './send.js';
import type { Session } from '../session.js';

export interface DonateResult extends SendResult {
  success: boolean;
  message: string;
}

type DonateInput = Omit<SendInput, 'to'> & { to?: string };

/**
 * Where a donation under `id` went, if that key was used for one: its recorded
 * result, or the block signed under it and still in the journal (a run killed
 * after signing). The service is not asked again: an address it names now must
 * not turn a rerun into a second donation, or into a refusal of the first one.
 * A key of another payment (or of one recorded before kinds) is not taken for a
 * donation's: the send then compares it with this donation, and refuses.
 */
async function recordedRecipient(session: Session, input: DonateInput & { id: string }): Promise<string | undefined> {
  const ctx = await session.context(input.signal);
  const record = await ctx.sendLog.result(ctx.profile, input.id);
  if (record !== undefined) return record.kind === 'donate' ? record.to : undefined;
  const signer = await session.account(input.wallet, input.index);
  const entry = await ctx.journal.read(signer.address);
  return entry?.sendId === input.id && entry.sendKind === 'donate' ? linkAsAccount(entry.block.link) : undefined;
}

function messageOf(sent: SendResult, id: string | undefined): string {
  if (sent.dry_run) return `Would donate ${sent.amount} XNO to ${sent.to}`;
  if (sent.repeated) return `Already donated under the key "${id}": ${sent.amount} XNO to ${sent.to} (block ${sent.hash}). Nothing new was donated.`;
  return `Thank you! Donated ${sent.amount} XNO to ${sent.to}`;
}

/**
 * Asks the service where donations go (unless `to` names the address, or `id`
 * was used before: then its recipient), then sends there like any send
 * (limits, confirmation, idempotency).
 */
export async function donate(session: Session, input: DonateInput): Promise<DonateResult> {
  const amount = { raw: rawOf(input.amount) };
  const earlier = input.to === undefined && input.id !== undefined ? await recordedRecipient(session, { ...input, id: input.id }) : undefined;
  const address = input.to ?? earlier ?? (await (await session.api()).donationAddress());
  const sent = await send(session, { ...input, to: address, amount }, 'donate');
  return { ...sent, success: true, message: messageOf(sent, input.id) };
}
