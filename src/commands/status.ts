import { Args, Flags } from '@oclif/core';
import { watch } from '../cli/output/watch.js';
import { SessionCommand } from '../cli/session-command.js';
import { statusLine } from '../ops/requests/matching.js';
import { paymentStatus, type PaymentStatusResult } from '../ops/requests/payments.js';
import { priceLine } from '../cli/output/format.js';
import { waitFlag } from '../cli/duration-flag.js';

export default class Status extends SessionCommand {
  static override summary = 'Check whether a payment request is paid; --watch polls until it is.';
  static override description = `With --watch it shows a spinner on stderr while unpaid and exits 0 once paid; --timeout exits 8 when time runs out,
and the request's expiry (when it has one) ends it with exit 11;
network errors back off and keep trying. A malformed id exits 3, an unknown one 9. With --json --watch it prints one JSON event per line (NDJSON) on each change.`;
  static override examples = ['<%= config.bin %> status 1b0e…', '<%= config.bin %> status 1b0e… --watch --timeout 300 --json'];
  static override args = { transaction_id: Args.string({ ignoreStdin: true, description: 'the request\'s transaction id', required: true }) };
  static override flags = {
    watch: Flags.boolean({ description: 'poll until paid' }),
    interval: Flags.integer({ description: 'seconds between checks', default: 2, min: 1 }),
    timeout: waitFlag('give up after this long (exit 8)'),
  };

  async run(): Promise<PaymentStatusResult | void> {
    const { args, flags } = await this.parse(Status);
    const session = this.session(flags);
    if (!flags.watch) {
      const status = await paymentStatus(session, args.transaction_id);
      this.log(statusLine(status.status, status.message));
      if (status.expires_at !== undefined && status.expired !== true && !status.is_paid) this.log(`Expires at ${status.expires_at}.`);
      if (status.fiat !== undefined) this.log(`Price: ${priceLine(status.fiat)}`);
      return status;
    }
    await watch(this, session, args.transaction_id, { interval: flags.interval, timeout: flags.timeout, json: this.jsonEnabled(), signal: this.signal });
  }
}
