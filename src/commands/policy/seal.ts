import { policyLines } from '../../cli/output/policy.js';
import { SessionCommand } from '../../cli/session-command.js';
import { sealPolicy, type PolicyDocument } from '../../ops/spending/policy-edit.js';

export default class PolicySeal extends SessionCommand {
  static override summary = 'Seal the profile\'s spending policy as it stands, once you checked it (needs the key store password).';
  static override description = `A policy changed by other means than nanopay with the password (config.json edited, by hand or by a program) no
longer matches its seal, and every spend is refused with POLICY_TAMPERED until a person reseals it. Check it first
(nanopay policy show): this seals exactly what it shows, with the addresses the contacts it names have now. To put back
a policy you trust instead, use nanopay policy set --from FILE.`;
  static override examples = ['<%= config.bin %> policy show', '<%= config.bin %> policy seal'];

  async run(): Promise<PolicyDocument> {
    const { flags } = await this.parse(PolicySeal);
    const result = await sealPolicy(this.session(flags));
    this.log(`Sealed the spending policy of profile "${result.profile}":\n${policyLines(result.policy).join('\n')}`);
    return result.policy;
  }
}
