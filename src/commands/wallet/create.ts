import { Flags } from '@oclif/core';
import { SessionCommand } from '../../cli/session-command.js';
import { createRemoteWallet, createWallet, type CreatedWallet } from '../../ops/profile/wallet.js';

export default class WalletCreate extends SessionCommand {
  static override summary = 'Create a wallet: a new seed made on this machine, stored encrypted.';
  protected static override allowsNewProfile = true;
  static override description = `Without --remote the wallet is self-custodial: its seed is made here and never leaves this machine.
With --remote the service makes the wallet (POST /wallet/create): it generates the seed and sends it, with an API key, over the network, so the service has seen that seed. Both are stored encrypted. For real money, keep a --remote wallet for its API key and hold the funds in a wallet made here.`;
  static override examples = ['<%= config.bin %> wallet create', 'NANOPAY_PASSWORD=… <%= config.bin %> wallet create --name savings --json'];
  static override flags = {
    name: Flags.string({ description: 'wallet name (default: "default", then wallet-2, …)' }),
    remote: Flags.boolean({ description: 'let the service make the wallet (it then knows the seed) and an API key' }),
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
    if (created.remote) {
      this.log('');
      this.log('The service made this seed, so it has seen it: this wallet is not self-custodial. For real money, keep it for its API key and create a wallet here (nanopay wallet create, then nanopay wallet use NAME).');
    }
    return created;
  }
}
