import { Args, Flags } from '@oclif/core';
import { confirmOnTerminal } from '../../cli/input/confirm.js';
import { SessionCommand } from '../../cli/session-command.js';
import { NanoPayError } from '../../errors.js';
import { removeWallet } from '../../ops/profile/wallet.js';

export default class WalletRemove extends SessionCommand {
  static override summary = 'Remove a wallet and its secrets from the key store.';
  static override description = 'Without a backup of its secret, funds on its accounts are lost. Asks on a terminal; scripts pass --yes.';
  static override examples = ['<%= config.bin %> wallet remove old', '<%= config.bin %> wallet remove old --yes'];
  static override args = { name: Args.string({ ignoreStdin: true, description: 'wallet name', required: true }) };
  static override flags = { yes: Flags.boolean({ char: 'y', description: 'do not ask for confirmation' }) };

  async run(): Promise<{ removed: string }> {
    const { args, flags } = await this.parse(WalletRemove);
    const session = this.session(flags);
    const ok = await confirmOnTerminal(`Remove wallet "${args.name}" and its secret? Funds are lost without a backup.`, flags.yes);
    if (!ok) throw new NanoPayError('DECLINED', 'Declined; nothing was removed');
    const result = await removeWallet(session, args.name);
    this.log(`Removed wallet "${result.removed}".`);
    return result;
  }
}
