import { Args, Flags } from '@oclif/core';
import { SessionCommand } from '../../cli/session-command.js';
import { useWallet, type WalletSummary } from '../../ops/profile/wallet.js';

export default class WalletUse extends SessionCommand {
  static override summary = 'Make a wallet (and account index) the active one.';
  static override description = 'Commands that pay or read use the active account unless given --wallet and --account. A new account index is derived on first use.';
  static override examples = ['<%= config.bin %> wallet use savings', '<%= config.bin %> wallet use savings --account 2'];
  static override args = { name: Args.string({ ignoreStdin: true, description: 'wallet name', required: true }) };
  static override flags = { account: Flags.integer({ description: 'account index', default: 0, min: 0 }) };

  async run(): Promise<WalletSummary> {
    const { args, flags } = await this.parse(WalletUse);
    const wallet = await useWallet(this.session(flags), { name: args.name, index: flags.account });
    const account = wallet.accounts.find((a) => a.index === flags.account);
    this.log(`Active: wallet "${wallet.name}", account ${flags.account} (${account?.address ?? ''})`);
    return wallet;
  }
}
