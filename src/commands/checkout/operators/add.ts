import { Args, Flags } from '@oclif/core';
import { operatorPassword } from '../../../cli/input/operator-password.js';
import { SessionCommand } from '../../../cli/session-command.js';
import { addOperator, MIN_OPERATOR_PASSWORD, type OperatorShown } from '../../../ops/access/operators.js';
import { ROLES } from '../../../shop/roles.js';

export default class CheckoutOperatorsAdd extends SessionCommand {
  static override summary = "Add an operator of the shop's dashboard, with a role and a password.";
  static override description = `The password is typed twice at a hidden prompt, or read from the first line of stdin with --password-stdin;
at least ${MIN_OPERATOR_PASSWORD} characters. The store keeps its scrypt hash. --replace replaces an operator (role and password) and ends its sessions.`;
  static override examples = ['<%= config.bin %> checkout operators add alice --role refund', 'printf "%s\\n" "$PASSWORD" | <%= config.bin %> checkout operators add ci --role read --password-stdin'];
  static override args = { name: Args.string({ ignoreStdin: true, description: "the operator's name (sign-in name)", required: true }) };
  static override flags = {
    role: Flags.string({ description: 'what the operator may do', options: [...ROLES], required: true }),
    replace: Flags.boolean({ description: 'replace the operator of this name (its sessions end)' }),
    'password-stdin': Flags.boolean({ description: "read the operator's password from the first line of stdin" }),
  };

  async run(): Promise<{ operator: OperatorShown }> {
    const { args, flags } = await this.parse(CheckoutOperatorsAdd);
    const store = await this.session(flags).dataStore();
    const password = await operatorPassword(args.name, flags['password-stdin']);
    const operator = await addOperator(store, { name: args.name, role: flags.role, password, replace: flags.replace });
    this.log(`${flags.replace ? 'Replaced' : 'Added'} operator ${operator.name} (role ${operator.role}).`);
    return { operator };
  }
}
