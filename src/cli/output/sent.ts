import type { SendResult } from '../../ops/spending/send.js';

/**
 * What a send, a pay or a donation did, for people: a dry run, a repeat under --id
 * (nothing new moved, which must not read like a payment), or the block that moved the money.
 */
export function sentText(result: SendResult, verb: { base: 'send' | 'pay' | 'donate'; past: 'Sent' | 'Paid' | 'Donated' }, id: string | undefined): string {
  if (result.dry_run) {
    return `Dry run: would ${verb.base} ${result.amount} XNO from ${result.from} to ${result.to}; balance after ${result.balance_after} XNO. Nothing was signed.`;
  }
  if (result.repeated) {
    return `Already ${verb.past.toLowerCase()} under --id ${id}: ${result.amount} XNO to ${result.to} (block ${result.hash}). Nothing new was ${verb.base === 'donate' ? 'donated' : 'sent'}.`;
  }
  return `${verb.past} ${result.amount} XNO to ${result.contact === undefined ? '' : `@${result.contact} `}${result.to}\nBlock:   ${result.hash}\nBalance: ${result.balance_after} XNO`;
}
