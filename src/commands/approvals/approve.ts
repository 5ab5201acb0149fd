import { Args, Flags } from '@oclif/core';
import { answerAsPerson } from '../../cli/approval-answer.js';
import { SessionCommand } from '../../cli/session-command.js';
import type { ApprovalShown } from '../../ops/spending/approvals.js';

export default class ApprovalsApprove extends SessionCommand {
  static override summary = 'Approve a spend that waits for you: it then runs once, when its caller runs it again with the id.';
  static override description = `Shows what the spend pays and asks on a terminal (--yes skips the question), and always asks for the key store
password (even while an unlocked session runs): approving is a person's act, which no tool of the toolset, MCP or the agent
can do. The approval lets exactly that spend (front end, account, recipient or host, amount, x402 requirement) run once,
before it expires; the budgets and other rules still apply when it runs.`;
  static override examples = ['<%= config.bin %> approvals approve apr_…', '<%= config.bin %> approvals approve apr_… --yes --password-file pass.txt --json'];
  static override args = { id: Args.string({ ignoreStdin: true, description: 'the approval id', required: true }) };
  static override flags = { yes: Flags.boolean({ char: 'y', description: 'do not ask on the terminal (the password is still needed)' }) };

  async run(): Promise<ApprovalShown> {
    const { args, flags } = await this.parse(ApprovalsApprove);
    const approval = await answerAsPerson(this.session(flags), args.id, 'approve', flags.yes);
    this.log(`Approved ${approval.id}: ${approval.description}. It runs once when its caller runs it again with this id, until ${approval.expires_at}.`);
    return approval;
  }
}
