import { rawOf } from './money.js';
import { send, type SendInput, type SendResult } from './send.js';
import type { Session } from './session.js';

export interface DonateResult extends SendResult {
  success: boolean;
  message: string;
}

/** Asks the service where donations go (unless `to` names the address), then sends there like any send (limits, confirmation). */
export async function donate(session: Session, input: Omit<SendInput, 'to'> & { to?: string }): Promise<DonateResult> {
  const amount = { raw: rawOf(input.amount) };
  const address = input.to ?? (await (await session.api()).donationAddress());
  const sent = await send(session, { ...input, to: address, amount });
  return {
    ...sent,
    success: true,
    message: sent.dry_run ? `Would donate ${sent.amount} XNO to ${sent.to}` : `Thank you! Donated ${sent.amount} XNO to ${sent.to}`,
  };
}
