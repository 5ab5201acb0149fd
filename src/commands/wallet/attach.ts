import { Args } from '@oclif/core';
import { SessionCommand } from '../../cli/session-command.js';
import { attachSession, type AttachedSession } from '../../ops/profile/wallet.js';

export default class WalletAttach extends SessionCommand {
  static override summary = 'Use the wallets of an unlocked session another user shares with you (the strongest mode for agents).';
  static override description = `The owner of the keys runs, as their own user: nanopay unlock --scope agent --socket PATH --group GROUP. An agent's
user in that group runs this once: its profile then signs through that socket only, holding no secret, and every
spend is judged there by the owner's sealed policy and the scope granted, and recorded in the owner's store. The
agent's user can neither read nor change any of it.`;
  static override examples = ['<%= config.bin %> wallet attach /run/nanopay-agent/agent.sock', '<%= config.bin %> wallet attach /run/nanopay-agent/agent.sock --profile shared'];
  static override args = { socket: Args.string({ ignoreStdin: true, description: 'the shared session\'s socket (absolute path)', required: true }) };
  protected static override allowsNewProfile = true;

  async run(): Promise<AttachedSession> {
    const { args, flags } = await this.parse(WalletAttach);
    const attached = await attachSession(this.session(flags), args.socket);
    this.log(`Profile "${attached.profile}" now signs through the session at ${attached.socket} (scope ${attached.scope}):`);
    for (const wallet of attached.wallets) this.log(`  ${wallet.name} (${wallet.kind}): ${wallet.accounts[0]?.address ?? ''}`);
    return attached;
  }
}
