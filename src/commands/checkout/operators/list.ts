import { table } from '../../../cli/output/format.js';
import { SessionCommand } from '../../../cli/session-command.js';
import { listOperators, type OperatorShown } from '../../../ops/access/operators.js';

export default class CheckoutOperatorsList extends SessionCommand {
  static override summary = "List the operators of the shop's dashboard and their roles.";
  static override description = 'Passwords are never shown: the store keeps their scrypt hashes. Operators sign in to the dashboard of checkout serve.';
  static override examples = ['<%= config.bin %> checkout operators list --json'];

  async run(): Promise<{ operators: OperatorShown[] }> {
    const { flags } = await this.parse(CheckoutOperatorsList);
    const operators = await listOperators(await this.session(flags).dataStore());
    if (operators.length === 0) this.log('No operators yet (checkout operators add makes one).');
    else this.log(table([['NAME', 'ROLE', 'CREATED', 'PASSWORD CHANGED'], ...operators.map((o) => [o.name, o.role, o.created_at, o.password_changed_at])]));
    return { operators };
  }
}
