import { SessionCommand } from '../../cli/session-command.js';
import { policyLines } from '../../cli/output/policy.js';
import { showPolicy, type PolicyDocument } from '../../ops/spending/policy-edit.js';

export default class PolicyShow extends SessionCommand {
  static override summary = 'Show the profile\'s spending policy: every rule that decides a spend, whoever spends.';
  static override description = `The rules hold for every spend of the profile (send, pay, donate, credits topup, fetch; the toolset, MCP, the
agent and the SDK alike). --json prints the policy as the JSON document policy set --from takes.`;
  static override examples = ['<%= config.bin %> policy show', '<%= config.bin %> policy show --json > policy.json'];

  async run(): Promise<PolicyDocument> {
    const { flags } = await this.parse(PolicyShow);
    const { profile, policy } = showPolicy(this.session(flags));
    this.log(`Spending policy of profile "${profile}":`);
    this.log(policyLines(policy).join('\n'));
    return policy;
  }
}
