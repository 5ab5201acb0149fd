import { readFile } from 'node:fs/promises';
import { Args, Flags } from '@oclif/core';
import { stdinRest } from '../../cli/input/stdin.js';
import { policyLines } from '../../cli/output/policy.js';
import { SessionCommand } from '../../cli/session-command.js';
import { NanoPayError } from '../../errors.js';
import { POLICY_RULES, replacePolicy, setPolicyRule, type PolicyDocument } from '../../ops/spending/policy-edit.js';
import { SCOPE_FLAGS, scopeOf } from '../../cli/policy-flags.js';

export default class PolicySet extends SessionCommand {
  static override summary = 'Set a rule of the profile\'s spending policy (or, with --from, the whole policy from its JSON form).';
  static override description = `Rules (amounts in XNO): per-send (the most one spend may be), hour, day, 30d (rolling budgets), ask-above (a spend
above it waits for a person's yes), ask-above-hour (so does one that would take the last hour's spending without a yes
above it); each for the whole profile, or with --recipient, --host or --front-end for that part only (x402 as a front end
means every x402 payment). allow and deny take --recipient or --host and add it to the list (a non-empty allow list
refuses everything else). approval-ttl: how long an approval waits (30m, 1h, 1d; default 1h). --from FILE (or - for
stdin) replaces the whole policy with the JSON document policy show --json prints.

The policy is sealed: a change needs the key store password (a prompt, --password-file, --password-stdin or
NANOPAY_PASSWORD), never an unlocked session, and is recorded in the audit trail with what it was before and after. A
policy changed by any other means (a file edit) stops every spend until a person reseals it (policy seal, or --from).`;
  static override examples = [
    '<%= config.bin %> policy set day 10',
    '<%= config.bin %> policy set per-send 0.01 --front-end x402',
    '<%= config.bin %> policy set day 1 --recipient @alice',
    '<%= config.bin %> policy set deny --host evil.example',
    '<%= config.bin %> policy set ask-above 0.5',
    '<%= config.bin %> policy set --from policy.json',
  ];
  static override args = {
    rule: Args.string({ ignoreStdin: true, description: 'the rule', options: [...POLICY_RULES] }),
    value: Args.string({ ignoreStdin: true, description: 'its value: XNO, or a duration for approval-ttl' }),
  };
  static override flags = { ...SCOPE_FLAGS, from: Flags.string({ description: 'replace the whole policy with this JSON file (- for stdin)', exclusive: ['recipient', 'host', 'front-end'] }) };

  async run(): Promise<PolicyDocument> {
    const { args, flags } = await this.parse(PolicySet);
    const session = this.session(flags);
    let result: { profile: string; policy: PolicyDocument };
    if (flags.from !== undefined) {
      if (args.rule !== undefined) throw new NanoPayError('USAGE', 'Give either a rule or --from, not both');
      const text = flags.from === '-' ? (await stdinRest('the policy (JSON)')).lines.join('\n') : await readFile(flags.from, 'utf8');
      let doc: unknown;
      try {
        doc = JSON.parse(text);
      } catch {
        throw new NanoPayError('INVALID_JSON', `The policy in ${flags.from === '-' ? 'stdin' : flags.from} is not JSON; nothing was changed`);
      }
      result = await replacePolicy(session, doc);
    } else {
      if (args.rule === undefined) throw new NanoPayError('USAGE', 'Give a rule (and its value), or --from FILE');
      result = await setPolicyRule(session, args.rule, args.value, scopeOf(flags));
    }
    this.log(`Spending policy of profile "${result.profile}":\n${policyLines(result.policy).join('\n')}`);
    return result.policy;
  }
}
