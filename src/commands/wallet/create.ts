import { Flags } from '@oclif/core';
import { SessionCommand } from '../../cli/session-command.js';
import { createRemoteWallet, createWallet, type CreatedWallet } from '../../ops/profile/wallet.js';

export default class WalletCreate extends SessionCommand {
  static override summary = 'Create a wallet: a new seed made on this machine, stored encrypted.';
  protected static override allowsNewProfile = true;
  static override description = 'With --remote the service makes the wallet (POST /wallet/create) and its secrets and API key are stored encrypted.';
  static override examples = ['<%= config.bin %> wallet create', 'NANOPAY_PASSWORD=… <%= config.bin %> wallet create --name savings --json'];
  static override flags = {
    name: Flags.string({ description: 'wallet name (default: "default", then wallet-2, …)' }),
    remote: Flags.boolean({ description: 'let the service create the wallet and an API key' }),
  };

  async run(): Promise<CreatedWallet> {
    const { flags } = await this.parse(WalletCreate);
    const session = this.session(flags);
    const input = flags.name === undefined ? {} : { name: flags.name };
    const created = flags.remote ? await createRemoteWallet(session, input) : await createWallet(session, input);
    this.log(`Created wallet "${created.name}"${created.remote ? ' (by the service, with an API key)' : ''}.`);
    this.log(`Address: ${created.address}`);
    this.log('');
    this.log(created.backup);
    return created;
  }
}
