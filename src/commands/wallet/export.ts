import { Args, Flags } from '@oclif/core';
import { confirmOnTerminal } from '../../cli/confirm.js';
import { SessionCommand } from '../../cli/session-command.js';
import { NanoPayError } from '../../errors.js';
import { exportWallet, type ExportedWallet } from '../../ops/wallet.js';

export default class WalletExport extends SessionCommand {
  static override summary = 'Print a wallet\'s secrets (seed or mnemonic and private keys) for backup.';
  static override description = 'Asks for confirmation on a terminal; scripts must pass --yes. Anyone who sees the output can spend the funds.';
  static override examples = ['<%= config.bin %> wallet export', '<%= config.bin %> wallet export savings --yes --json > backup.json'];
  static override args = { name: Args.string({ ignoreStdin: true, description: 'wallet name (default: the active one)' }) };
  static override flags = { yes: Flags.boolean({ char: 'y', description: 'do not ask for confirmation' }) };

  async run(): Promise<ExportedWallet> {
    const { args, flags } = await this.parse(WalletExport);
    const session = this.session(flags);
    const ok = await confirmOnTerminal('Print the wallet secrets on screen? Anyone who sees them can spend the funds.', flags.yes);
    if (!ok) throw new NanoPayError('CANCELLED', 'Export cancelled; nothing was printed');
    const exported = await exportWallet(session, args.name);
    this.log(`Wallet "${exported.name}" (${exported.kind})`);
    this.log(`Secret: ${exported.secret}`);
    if (exported.passphrase !== undefined) this.log(`Passphrase: ${exported.passphrase}`);
    for (const a of exported.accounts) this.log(`  account ${a.index}: ${a.address}  private key ${a.private_key}`);
    return exported;
  }
}
