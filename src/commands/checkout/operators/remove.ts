import { Args } from '@oclif/core';
import { SessionCommand } from '../../../cli/session-command.js';
import { removeOperator } from '../../../ops/access/operators.js';

export default class OperatorsRemove extends SessionCommand {
  static override summary = 'Remove a dashboard operator: its sessions end at once.';
  static override examples = ['<%= config.bin %> checkout operators remove alice'];
  static override args = { name: Args.string({ ignoreStdin: true, description: 'the operator', required: true }) };

  async run(): Promise<{ name: string; removed: true }> {
    const { args, flags } = await this.parse(OperatorsRemove);
    await removeOperator(await this.session(flags).dataStore(), args.name);
    this.log(`Removed operator ${args.name}; its sessions ended.`);
    return { name: args.name, removed: true };
  }
}
