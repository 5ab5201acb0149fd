import { Args, Flags } from '@oclif/core';
import { confirmOnTerminal } from '../../cli/input/confirm.js';
import { SessionCommand } from '../../cli/session-command.js';
import { setRepresentative, type RepresentativeChanged } from '../../ops/account/representative.js';

export default class RepresentativeSet extends SessionCommand {
  static override summary = 'Publish a change block that gives an account of yours a new representative.';
  static override description = `ADDRESS defaults to the profile's representative setting. The change block goes through the account lock and the
journal like a send: a run killed after signing republishes the same block next time. On a terminal it shows the current
and the new representative and asks; --yes skips the question; without a terminal and without --yes it refuses. An
account that already has this representative is left alone (nothing is signed).`;
  static override examples = ['<%= config.bin %> representative set nano_3… --yes', '<%= config.bin %> representative set --account 1'];
  static override args = { address: Args.string({ ignoreStdin: true, description: 'the new representative (default: the configured one)' }) };
  static override flags = {
    yes: Flags.boolean({ char: 'y', description: 'do not ask for confirmation' }),
    wallet: Flags.string({ description: 'wallet of the account instead of the active one' }),
    account: Flags.integer({ description: 'account index within the wallet', min: 0 }),
  };

  async run(): Promise<RepresentativeChanged> {
    const { args, flags } = await this.parse(RepresentativeSet);
    const result = await setRepresentative(this.session(flags), {
      signal: this.signal,
      confirm: (p) => {
        if (!flags.yes) process.stderr.write(`Account:        ${p.account}\nRepresentative: ${p.from} -> ${p.to}\n`);
        return confirmOnTerminal('Publish the change block?', flags.yes);
      },
      ...(args.address === undefined ? {} : { representative: args.address }),
      ...(flags.wallet === undefined ? {} : { wallet: flags.wallet }),
      ...(flags.account === undefined ? {} : { index: flags.account }),
    });
    if (result.changed) this.log(`Representative of ${result.account}: ${result.previous_representative} -> ${result.representative}\nBlock: ${result.hash}`);
    else this.log(`${result.account} already has the representative ${result.representative}; nothing was signed.`);
    return result;
  }
}
