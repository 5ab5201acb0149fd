import { Args, Flags } from '@oclif/core';
import { confirmOnTerminal } from '../../cli/input/confirm.js';
import { SessionCommand } from '../../cli/session-command.js';
import { NanoPayError } from '../../errors.js';
import { exportWallet, type ExportedWallet } from '../../ops/profile/wallet.js';

export default class WalletExport extends SessionCommand {
  static override summary = 'Print a wallet\'s secrets (seed or mnemonic and private keys) and the profile\'s API key for backup.';
  static override description = 'Asks for the key store password (even while an unlocked session runs) and for confirmation on a terminal; scripts must pass --yes. Also prints the profile\'s API key (it holds the credits bought) and node-auth when they are set. Anyone who sees the output can spend the funds and the credits.';
  static override examples = ['<%= config.bin %> wallet export', '<%= config.bin %> wallet export savings --yes --json > backup.json'];
  static override args = { name: Args.string({ ignoreStdin: true, description: 'wallet name (default: the active one)' }) };
  static override flags = { yes: Flags.boolean({ char: 'y', description: 'do not ask for confirmation' }) };

  async run(): Promise<ExportedWallet> {
    const { args, flags } = await this.parse(WalletExport);
    const session = this.session(flags);
    const ok = await confirmOnTerminal('Print the wallet secrets and the API key on screen? Anyone who sees them can spend the funds and the credits.', flags.yes);
    if (!ok) throw new NanoPayError('DECLINED', 'Declined; nothing was printed');
    const exported = await exportWallet(session, args.name);
    this.log(`Wallet "${exported.name}" (${exported.kind})`);
    this.log(`Secret: ${exported.secret}`);
    if (exported.passphrase !== undefined) this.log(`Passphrase: ${exported.passphrase}`);
    for (const a of exported.accounts) this.log(`  account ${a.index}: ${a.address}  private key ${a.private_key}`);
    if (exported.api_key !== undefined) this.log(`API key of profile "${session.profileName}": ${exported.api_key}`);
    if (exported.node_auth !== undefined) this.log(`node-auth of profile "${session.profileName}": ${exported.node_auth}`);
    return exported;
  }
}
