import { Args } from '@oclif/core';
import { SessionCommand } from '../../cli/session-command.js';
import { closeSession, type ClosedSession } from '../../x402/sessions/buyer-close.js';

export default class SessionsClose extends SessionCommand {
  static override summary = 'Close a Nano session: the seller refunds what was not spent, and signs a receipt.';
  static override description = `Signs the close with the session's key and asks the seller for it (or reads the close the seller already made). The
seller's receipt is checked (its signature, the payer's binding of the session key, the final voucher, the sums, and
that it charged no more than our vouchers allowed), then our own ledger must show the refund block sending us the
rest; the refund is recorded in the audit trail, which frees it in the spending policy's budgets. Run it again to
finish a close whose refund was not yet confirmed.`;
  static override examples = ['<%= config.bin %> sessions close 7C1F…', '<%= config.bin %> sessions close 7C1F… --json'];
  static override args = { id: Args.string({ description: 'the session id (nanopay sessions lists them)', required: true }) };

  async run(): Promise<Omit<ClosedSession, 'receipt'>> {
    const { args, flags } = await this.parse(SessionsClose);
    const { receipt: _receipt, ...closed } = await closeSession(this.session(flags), args.id, { signal: this.signal });
    this.log(
      `Session ${closed.session} closed: deposit ${closed.deposit} XNO, spent ${closed.spent} XNO, refunded ${closed.refunded} XNO${
        closed.refund_block === null ? '' : ` (block ${closed.refund_block}${closed.refund_confirmed ? ', confirmed' : ', not confirmed yet: run it again'})`
      }\nThe receipt: nanopay sessions receipt ${closed.session}`,
    );
    return closed;
  }
}
