import { Args, Flags } from '@oclif/core';
import { SessionCommand } from '../../../cli/session-command.js';
import { operatorPassword } from '../../../cli/input/operator-password.js';
import { addOperator, type OperatorShown } from '../../../ops/access/operators.js';
import { ROLES } from '../../../shop/roles.js';

export default class OperatorsAdd extends SessionCommand {
  static override summary = "Add a person who signs in to the shop's dashboard (checkout serve, /dashboard), with a role.";
  static override description = `Roles: read (orders, refunds, events, exports), refund (and refunds, claim links), admin (and webhook
resends). The password (at least 12 characters) is asked twice at a terminal, or read from the first line of stdin
with --stdin; it is kept as a scrypt hash in the profile's store. --replace gives an existing operator a new role or
password and ends its sessions.`;
  static override examples = ['<%= config.bin %> checkout operators add alice --role admin', 'printf "%s\\n" "$PASS" | <%= config.bin %> checkout operators add accountant --role read --stdin'];
  static override args = { name: Args.string({ ignoreStdin: true, description: 'the name the operator signs in with', required: true }) };
  static override flags = {
    role: Flags.string({ description: 'what the operator may do', options: [...ROLES], required: true }),
    stdin: Flags.boolean({ description: "read the operator's password from the first line of stdin" }),
    replace: Flags.boolean({ description: 'replace the operator of this name (its sessions end)' }),
  };

  async run(): Promise<OperatorShown> {
    const { args, flags } = await this.parse(OperatorsAdd);
    const store = await this.session(flags).dataStore();
    const password = await operatorPassword(flags.stdin, `Password for ${args.name}:`);
    const operator = await addOperator(store, { name: args.name, role: flags.role, password, replace: flags.replace });
    this.log(`${flags.replace ? 'Replaced' : 'Added'} operator ${operator.name} (${operator.role}); they sign in at /dashboard of checkout serve.`);
    return operator;
  }
}
