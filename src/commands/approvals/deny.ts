import { Args, Flags } from '@oclif/core';
import { answerAsPerson } from '../../cli/approval-answer.js';
import { SessionCommand } from '../../cli/session-command.js';
import type { ApprovalShown } from '../../ops/spending/approvals.js';

export default class ApprovalsDeny extends SessionCommand {
  static override summary = 'Deny a spend that waits for you: it never runs under this approval.';
  static override description = 'Like approve, it shows the spend, asks on a terminal (--yes skips it) and needs the key store password.';
  static override examples = ['<%= config.bin %> approvals deny apr_…'];
  static override args = { id: Args.string({ ignoreStdin: true, description: 'the approval id', required: true }) };
  static override flags = { yes: Flags.boolean({ char: 'y', description: 'do not ask on the terminal (the password is still needed)' }) };

  async run(): Promise<ApprovalShown> {
    const { args, flags } = await this.parse(ApprovalsDeny);
    const approval = await answerAsPerson(this.session(flags), args.id, 'deny', flags.yes);
    this.log(`Denied ${approval.id}: ${approval.description}.`);
    return approval;
  }
}
