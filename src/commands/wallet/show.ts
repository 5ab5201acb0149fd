import { Args } from '@oclif/core';
import { SessionCommand } from '../../cli/session-command.js';
import { showWallet, type WalletSummary } from '../../ops/profile/wallet.js';

export default class WalletShow extends SessionCommand {
  static override summary = 'Show a wallet (the active one by default): kind and addresses, never secrets.';
  static override description = 'It shows the kind of secret (seed, mnemonic, legacy mnemonic or private key), whether the service made it, and each derived account.';
  static override examples = ['<%= config.bin %> wallet show', '<%= config.bin %> wallet show savings --json'];
  static override args = { name: Args.string({ ignoreStdin: true, description: 'wallet name' }) };

  async run(): Promise<WalletSummary> {
    const { args, flags } = await this.parse(WalletShow);
    const wallet = showWallet(this.session(flags), args.name);
    this.log(`Wallet "${wallet.name}"${wallet.active ? ' (active)' : ''}: ${wallet.kind}${wallet.remote ? ', made by the service' : ''}, created ${wallet.created_at}`);
    for (const a of wallet.accounts) this.log(`  account ${a.index}: ${a.address}${a.index === wallet.active_account ? '  *' : ''}`);
    return wallet;
  }
}
