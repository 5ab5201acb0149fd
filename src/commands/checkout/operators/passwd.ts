import { Args, Flags } from '@oclif/core';
import { SessionCommand } from '../../../cli/session-command.js';
import { operatorPassword } from '../../../cli/input/operator-password.js';
import { setOperatorPassword, type OperatorShown } from '../../../ops/access/operators.js';

export default class OperatorsPasswd extends SessionCommand {
  static override summary = "Give a dashboard operator a new password: the operator's sessions end.";
  static override examples = ['<%= config.bin %> checkout operators passwd alice'];
  static override args = { name: Args.string({ ignoreStdin: true, description: 'the operator', required: true }) };
  static override flags = { stdin: Flags.boolean({ description: 'read the new password from the first line of stdin' }) };

  async run(): Promise<OperatorShown> {
    const { args, flags } = await this.parse(OperatorsPasswd);
    const store = await this.session(flags).dataStore();
    const operator = await setOperatorPassword(store, args.name, await operatorPassword(flags.stdin, `New password for ${args.name}:`));
    this.log(`Changed the password of ${operator.name}; its sessions ended.`);
    return operator;
  }
}
