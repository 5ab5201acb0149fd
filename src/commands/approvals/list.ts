import { Flags } from '@oclif/core';
import { table } from '../../cli/output/format.js';
import { SessionCommand } from '../../cli/session-command.js';
import { listApprovals, type ApprovalShown } from '../../ops/spending/approvals.js';

export default class ApprovalsList extends SessionCommand {
  static override summary = 'Spends waiting for your approval (above an "ask above" rule), and approved ones not yet used.';
  static override description = `Each: its id, what it pays (kind, amount, recipient or host, the account), which front end asked, the rule that held
it and when it expires. Answer one with nanopay approvals approve ID or deny ID. --all adds the answered, used and
expired ones (newest first).`;
  static override examples = ['<%= config.bin %> approvals list', '<%= config.bin %> approvals list --all --json'];
  static override flags = { all: Flags.boolean({ description: 'every approval, answered and expired ones too' }) };

  async run(): Promise<{ approvals: ApprovalShown[] }> {
    const { flags } = await this.parse(ApprovalsList);
    const approvals = await listApprovals(this.session(flags), { all: flags.all });
    if (approvals.length === 0) this.log(flags.all ? 'No approvals.' : 'No spend waits for an approval.');
    else this.log(table([['ID', 'STATE', 'FRONT END', 'AMOUNT (XNO)', 'TO', 'RULE', 'EXPIRES'], ...approvals.map((a) => [a.id, a.state, a.front_end, a.amount, a.host ?? (a.contact === undefined ? a.recipient : `@${a.contact}`), a.rule, a.expires_at])]));
    return { approvals };
  }
}
