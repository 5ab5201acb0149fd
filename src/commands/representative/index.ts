import { Args, Flags } from '@oclif/core';
import { SessionCommand } from '../../cli/session-command.js';
import { showRepresentative, type RepresentativeShown } from '../../ops/account/representative.js';

export default class Representative extends SessionCommand {
  static override summary = 'Show the representative of the active account (or any address) and the one new accounts open with.';
  static override description = `The account's representative is read from its head block, checked (hash, signature, account) like every block
nanopay builds on. "configured" is the profile's representative setting (config set representative): new accounts open
with it; change an existing account's with representative set.`;
  static override examples = ['<%= config.bin %> representative', '<%= config.bin %> representative --account 1 --json'];
  static override args = { address: Args.string({ ignoreStdin: true, description: 'any account (default: the active one)' }) };
  static override flags = {
    wallet: Flags.string({ description: 'wallet to use instead of the active one' }),
    account: Flags.integer({ description: 'account index within the wallet', min: 0 }),
  };

  async run(): Promise<RepresentativeShown> {
    const { args, flags } = await this.parse(Representative);
    const result = await showRepresentative(this.session(flags), {
      signal: this.signal,
      ...(args.address === undefined ? {} : { address: args.address }),
      ...(flags.wallet === undefined ? {} : { wallet: flags.wallet }),
      ...(flags.account === undefined ? {} : { index: flags.account }),
    });
    this.log(`Account:        ${result.account}`);
    this.log(`Representative: ${result.representative ?? '(none: the account has no block yet)'}`);
    this.log(`Configured:     ${result.configured} (new accounts open with it)`);
    if (result.representative !== null && result.representative !== result.configured) {
      this.log('The account\'s representative is not the configured one; change it with: nanopay representative set');
    }
    return result;
  }
}
