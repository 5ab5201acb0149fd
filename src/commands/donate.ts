import { Args, Flags } from '@oclif/core';
import { paymentConfirmation } from '../cli/input/confirm-send.js';
import { sentText } from '../cli/output/sent.js';
import { SessionCommand } from '../cli/session-command.js';
import { donate, type DonateResult } from '../ops/spending/donate.js';

export default class Donate extends SessionCommand {
  static override summary = 'Donate XNO to the service (it names the address) or to --to; confirmed and limited like send.';
  static override description = `The service names its donation address (on a node backend give --to). The donation goes through the same
guarded path as send: spending limits, confirmation on a terminal (--yes skips it), --dry-run. --id makes it idempotent:
a repeat with the same key returns the first result and donates nothing, to the address recorded for that key.`;
  static override examples = ['<%= config.bin %> donate 0.01', '<%= config.bin %> donate 0.5 --yes --id gift-2026 --json'];
  static override args = { amount: Args.string({ ignoreStdin: true, description: 'amount in XNO', required: true }) };
  static override flags = {
    yes: Flags.boolean({ char: 'y', description: 'do not ask for confirmation' }),
    'dry-run': Flags.boolean({ description: 'show what would happen; sign nothing' }),
    to: Flags.string({ description: 'the address to donate to, or @NAME of a contact (required with backend node: only the service names one)' }),
    id: Flags.string({ description: 'idempotency key' }),
    approval: Flags.string({ description: 'the id of an approval a person gave for this very spend (APPROVAL_REQUIRED named it)' }),
    wallet: Flags.string({ description: 'wallet to send from instead of the active one' }),
    account: Flags.integer({ description: 'account index within the wallet', min: 0 }),
  };

  async run(): Promise<DonateResult> {
    const { args, flags } = await this.parse(Donate);
    const confirm = paymentConfirmation({ action: 'Donating', question: (a) => `Donate ${a} XNO?` }, flags);
    const result = await donate(this.session(flags), {
      amount: { xno: args.amount },
      dryRun: flags['dry-run'],
      ...(flags.to === undefined ? {} : { to: flags.to }),
      signal: this.signal,
      ...(flags.id === undefined ? {} : { id: flags.id }),
      ...(flags.approval === undefined ? {} : { approval: flags.approval }),
      ...(flags.wallet === undefined ? {} : { wallet: flags.wallet }),
      ...(flags.account === undefined ? {} : { index: flags.account }),
      ...(confirm === undefined ? {} : { confirm }),
    });
    if (result.repeated) {
      this.log(sentText(result, { base: 'donate', past: 'Donated' }, flags.id));
    } else {
      this.log(result.message);
      if (result.hash !== null) this.log(`Block: ${result.hash}`);
    }
    return result;
  }
}
