import { table } from '../../cli/output/format.js';
import { SessionCommand } from '../../cli/session-command.js';
import { buyerSessions, shownSession, type SessionShown } from '../../x402/sessions/buyer-book.js';

export default class Sessions extends SessionCommand {
  static override summary = 'Nano sessions this profile opened with sellers (fetch --session): deposit, spent, what is left.';
  static override description = `Each: its id (the deposit block's hash), the seller's origin and account, the deposit, what the seller charged so far
(as of this profile's last call or close), what is left, and once closed the refund and whether our ledger shows it.
Close one with nanopay sessions close ID; the seller also closes (and refunds) a session that sits idle or expires.`;
  static override examples = ['<%= config.bin %> sessions', '<%= config.bin %> sessions --json'];

  async run(): Promise<{ sessions: SessionShown[] }> {
    const { flags } = await this.parse(Sessions);
    const sessions = (await buyerSessions(this.session(flags))).map(shownSession);
    if (sessions.length === 0) this.log('No sessions.');
    else this.log(table([['SESSION', 'STATE', 'SELLER', 'DEPOSIT (XNO)', 'SPENT', 'LEFT', 'REFUNDED'], ...sessions.map((s) => [s.session, s.state, s.origin, s.deposit, s.spent, s.remaining, s.refunded ?? '-'])]));
    return { sessions };
  }
}
