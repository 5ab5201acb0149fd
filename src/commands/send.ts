import { Args, Flags } from '@oclif/core';
import { paymentConfirmation } from '../cli/input/confirm-send.js';
import { sentText } from '../cli/output/sent.js';
import { SessionCommand } from '../cli/session-command.js';
import { send, type SendResult } from '../ops/spending/send.js';

export default class Send extends SessionCommand {
  static override summary = 'Send XNO to an address: built, worked and signed here, then published.';
  static override description = `On a terminal it shows the recipient, the amount and the resulting balance and asks to confirm;
--yes skips the question (never the spending limits). Without a terminal and without --yes it refuses.
--id makes the send idempotent: a repeat with the same key returns the first result and sends nothing.`;
  static override examples = ['<%= config.bin %> send nano_1… 1.5', '<%= config.bin %> send @alice 1', '<%= config.bin %> send nano_1… 1000000 --raw --yes --id order-42 --json'];
  static override args = {
    address: Args.string({ ignoreStdin: true, description: 'recipient address (nano_… or xrb_…), or @NAME of a contact', required: true }),
    amount: Args.string({ ignoreStdin: true, description: 'amount in XNO (in raw with --raw)', required: true }),
  };
  static override flags = {
    raw: Flags.boolean({ description: 'the amount is in raw' }),
    yes: Flags.boolean({ char: 'y', description: 'do not ask for confirmation' }),
    'dry-run': Flags.boolean({ description: 'show what would happen; sign nothing' }),
    id: Flags.string({ description: 'idempotency key' }),
    approval: Flags.string({ description: 'the id of an approval a person gave for this very spend (APPROVAL_REQUIRED named it)' }),
    wallet: Flags.string({ description: 'wallet to send from instead of the active one' }),
    account: Flags.integer({ description: 'account index within the wallet', min: 0 }),
  };

  async run(): Promise<SendResult> {
    const { args, flags } = await this.parse(Send);
    const confirm = paymentConfirmation({ action: 'Sending', question: (a) => `Send ${a} XNO?` }, flags);
    const result = await send(this.session(flags), {
      to: args.address,
      amount: flags.raw ? { raw: args.amount } : { xno: args.amount },
      dryRun: flags['dry-run'],
      signal: this.signal,
      ...(flags.id === undefined ? {} : { id: flags.id }),
      ...(flags.approval === undefined ? {} : { approval: flags.approval }),
      ...(flags.wallet === undefined ? {} : { wallet: flags.wallet }),
      ...(flags.account === undefined ? {} : { index: flags.account }),
      ...(confirm === undefined ? {} : { confirm }),
    });
    this.log(sentText(result, { base: 'send', past: 'Sent' }, flags.id));
    return result;
  }
}
