import { Args } from '@oclif/core';
import { SessionCommand } from '../../cli/session-command.js';
import { sessionReceipt } from '../../x402/sessions/buyer-book.js';
import type { SessionReceipt } from '../../x402/sessions/seller.js';

export default class SessionsReceipt extends SessionCommand {
  static override summary = "A closed session's receipt, signed by the seller: anyone can check it with nanopay receipt verify.";
  static override description = `Prints the receipt as JSON (with or without --json): the session, the payer and the seller, the session key and the
payer's signature binding it, the deposits, what was spent, the refund and its block, the final voucher, and the
seller's signature over all of it.`;
  static override examples = ['<%= config.bin %> sessions receipt 7C1F… > receipt.json'];
  static override args = { id: Args.string({ description: 'the session id', required: true }) };

  async run(): Promise<SessionReceipt> {
    const { args, flags } = await this.parse(SessionsReceipt);
    const receipt = await sessionReceipt(this.session(flags), args.id);
    if (!this.jsonEnabled()) process.stdout.write(`${JSON.stringify(receipt, null, 2)}\n`);
    return receipt;
  }
}
