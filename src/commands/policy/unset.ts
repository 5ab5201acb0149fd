import { Args } from '@oclif/core';
import { policyLines } from '../../cli/output/policy.js';
import { SessionCommand } from '../../cli/session-command.js';
import { POLICY_RULES, unsetPolicyRule, type PolicyDocument } from '../../ops/spending/policy-edit.js';
import { SCOPE_FLAGS, scopeOf } from '../../cli/policy-flags.js';

export default class PolicyUnset extends SessionCommand {
  static override summary = 'Remove a rule of the profile\'s spending policy (from allow or deny: the --recipient or --host named).';
  static override description = `The rule is named as policy set takes it, with its scope: per-send, hour, day, 30d, ask-above and ask-above-hour
for the whole profile or with --recipient, --host or --front-end; allow and deny remove the --recipient or --host named
from their list; approval-ttl goes back to 1 hour. Needs the key store password (never an unlocked session).`;
  static override examples = ['<%= config.bin %> policy unset day', '<%= config.bin %> policy unset per-send --front-end x402', '<%= config.bin %> policy unset deny --host evil.example'];
  static override args = { rule: Args.string({ ignoreStdin: true, description: 'the rule', required: true, options: [...POLICY_RULES] }) };
  static override flags = SCOPE_FLAGS;

  async run(): Promise<PolicyDocument> {
    const { args, flags } = await this.parse(PolicyUnset);
    const result = await unsetPolicyRule(this.session(flags), args.rule, scopeOf(flags));
    this.log(`Spending policy of profile "${result.profile}":\n${policyLines(result.policy).join('\n')}`);
    return result.policy;
  }
}
