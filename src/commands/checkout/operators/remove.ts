import { Args } from '@oclif/core';
import { SessionCommand } from '../../../cli/session-command.js';
import { removeOperator } from '../../../ops/access/operators.js';

export default class CheckoutOperatorsRemove extends SessionCommand {
  static override summary = "Remove an operator of the shop's dashboard; its sessions end at once.";
  static override description = 'Its name may then be given to a new operator. API keys are not affected (checkout keys revoke).';
  static override examples = ['<%= config.bin %> checkout operators remove alice'];
  static override args = { name: Args.string({ ignoreStdin: true, description: "the operator's name", required: true }) };

  async run(): Promise<{ removed: string }> {
    const { args, flags } = await this.parse(CheckoutOperatorsRemove);
    await removeOperator(await this.session(flags).dataStore(), args.name);
    this.log(`Removed operator ${args.name}; its sessions ended.`);
    return { removed: args.name };
  }
}
