import { SessionCommand } from '../../../cli/session-command.js';
import { listOperators, type OperatorShown } from '../../../ops/access/operators.js';

export default class OperatorsList extends SessionCommand {
  static override summary = "List the dashboard's operators and their roles (never their passwords).";
  static override examples = ['<%= config.bin %> checkout operators list --json'];

  async run(): Promise<{ operators: OperatorShown[] }> {
    const { flags } = await this.parse(OperatorsList);
    const operators = await listOperators(await this.session(flags).dataStore());
    if (operators.length === 0) this.log('No operator. Add one: nanopay checkout operators add NAME --role admin');
    for (const o of operators) this.log(`${o.name.padEnd(20)} ${o.role.padEnd(7)} added ${o.created_at}, password set ${o.password_changed_at}`);
    return { operators };
  }
}
