import { table } from '../../cli/output/format.js';
import { SessionCommand } from '../../cli/session-command.js';
import { listWallets, type WalletSummary } from '../../ops/profile/wallet.js';

export default class WalletList extends SessionCommand {
  static override summary = 'List the wallets of the profile and their accounts.';
  protected static override allowsNewProfile = true;
  static override description = 'The active wallet and account are marked with *. Secrets are never shown (see wallet export).';
  static override examples = ['<%= config.bin %> wallet list', '<%= config.bin %> wallet list --profile shop --json'];

  async run(): Promise<WalletSummary[]> {
    const { flags } = await this.parse(WalletList);
    const wallets = listWallets(this.session(flags));
    if (wallets.length === 0) {
      this.log('No wallets yet. Create one with: nanopay wallet create');
      return wallets;
    }
    const rows = [['', 'NAME', 'KIND', 'ACCOUNT', 'ADDRESS']];
    for (const w of wallets) {
      for (const a of w.accounts) {
        rows.push([w.active && a.index === w.active_account ? '*' : '', w.name, w.kind + (w.remote ? ' (remote)' : ''), String(a.index), a.address]);
      }
    }
    this.log(table(rows));
    return wallets;
  }
}
