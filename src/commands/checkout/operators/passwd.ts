import { Args, Flags } from '@oclif/core';
import { operatorPassword } from '../../../cli/input/operator-password.js';
import { SessionCommand } from '../../../cli/session-command.js';
import { requireOperator, setOperatorPassword, type OperatorShown } from '../../../ops/access/operators.js';

export default class CheckoutOperatorsPasswd extends SessionCommand {
  static override summary = "Give an operator of the shop's dashboard a new password; its sessions end.";
  static override description = 'Typed twice at a hidden prompt, or read from the first line of stdin with --password-stdin; at least 12 characters. The role stays.';
  static override examples = ['<%= config.bin %> checkout operators passwd alice', 'printf "%s\\n" "$PASSWORD" | <%= config.bin %> checkout operators passwd alice --password-stdin'];
  static override args = { name: Args.string({ ignoreStdin: true, description: "the operator's name", required: true }) };
  static override flags = {
    'password-stdin': Flags.boolean({ description: "read the operator's new password from the first line of stdin" }),
  };

  async run(): Promise<{ operator: OperatorShown }> {
    const { args, flags } = await this.parse(CheckoutOperatorsPasswd);
    const store = await this.session(flags).dataStore();
    // Said before the password is asked for, not after it was typed twice.
    await requireOperator(store, args.name);
    const operator = await setOperatorPassword(store, args.name, await operatorPassword(args.name, flags['password-stdin']));
    this.log(`New password for operator ${operator.name}; its sessions ended.`);
    return { operator };
  }
}
