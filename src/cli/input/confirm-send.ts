import { NanoPayError } from '../../errors.js';
import type { SendPreview } from '../../ops/spending/send.js';
import { confirmOnTerminal } from './confirm.js';

export type PaymentConfirmation = (p: SendPreview) => Promise<boolean>;

/**
 * How a payment (send, pay, donate, top-up) is confirmed: not at all with --yes
 * or --dry-run; on a terminal by showing what it will do (on stderr) and asking;
 * without a terminal it refuses before anything happens.
 */
export function paymentConfirmation(
  what: { action: string; question: (amount: string) => string },
  flags: { yes: boolean; 'dry-run'?: boolean },
): PaymentConfirmation | undefined {
  if (flags.yes || flags['dry-run']) return undefined;
  if (!process.stdin.isTTY || !process.stderr.isTTY) {
    throw new NanoPayError('USAGE', `${what.action} needs confirmation, and there is no terminal to ask on`, { hint: 'Pass --yes to pay from a script.' });
  }
  return (p) => {
    process.stderr.write(`From:     ${p.from}\nTo:       ${p.to}${p.contact === undefined ? '' : ` (@${p.contact})`}\nAmount:   ${p.amount} XNO\nBalance:  ${p.balance} XNO -> ${p.balance_after} XNO\n`);
    return confirmOnTerminal(what.question(p.amount), false);
  };
}
