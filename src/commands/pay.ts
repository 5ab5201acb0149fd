import { Args, Flags } from '@oclif/core';
import { paymentConfirmation } from '../cli/input/confirm-send.js';
import { sentText } from '../cli/output/sent.js';
import { SessionCommand } from '../cli/session-command.js';
import { payUri } from '../ops/requests/payments.js';
import type { SendResult } from '../ops/spending/send.js';

export default class Pay extends SessionCommand {
  static override summary = 'Pay a nano: URI exactly (address and raw amount), like send.';
  static override description = `The URI gives the address and the exact amount in raw (nano:<address>?amount=<raw>, or nano://…), as a payment
request's QR code does; a URI without an amount is refused. Limits, confirmation, --dry-run and --id work as for send.`;
  static override examples = ['<%= config.bin %> pay "nano:nano_1…?amount=1500000000000000000000000000123" --yes'];
  static override args = { uri: Args.string({ ignoreStdin: true, description: 'nano:<address>?amount=<raw> (or nano://…)', required: true }) };
  static override flags = {
    yes: Flags.boolean({ char: 'y', description: 'do not ask for confirmation' }),
    'dry-run': Flags.boolean({ description: 'show what would happen; sign nothing' }),
    id: Flags.string({ description: 'idempotency key' }),
    approval: Flags.string({ description: 'the id of an approval a person gave for this very spend (APPROVAL_REQUIRED named it)' }),
    wallet: Flags.string({ description: 'wallet to send from instead of the active one' }),
    account: Flags.integer({ description: 'account index within the wallet', min: 0 }),
  };

  async run(): Promise<SendResult & { uri: string }> {
    const { args, flags } = await this.parse(Pay);
    const confirm = paymentConfirmation({ action: 'Paying', question: (a) => `Pay ${a} XNO?` }, flags);
    const result = await payUri(this.session(flags), args.uri, {
      dryRun: flags['dry-run'],
      signal: this.signal,
      ...(flags.id === undefined ? {} : { id: flags.id }),
      ...(flags.approval === undefined ? {} : { approval: flags.approval }),
      ...(flags.wallet === undefined ? {} : { wallet: flags.wallet }),
      ...(flags.account === undefined ? {} : { index: flags.account }),
      ...(confirm === undefined ? {} : { confirm }),
    });
    this.log(sentText(result, { base: 'pay', past: 'Paid' }, flags.id));
    return result;
  }
}
