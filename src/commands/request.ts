import { Args, Flags } from '@oclif/core';
import { QR_STYLES, renderQr, type QrStyle } from '../cli/output/qr.js';
import { SessionCommand } from '../cli/session-command.js';
import { requestPayment, type PaymentRequestResult } from '../ops/requests/payments.js';
import { watch } from '../cli/output/watch.js';
import { withSandboxMark } from '../ops/observe.js';
import { formatDuration, parseDuration } from '../ops/duration.js';
import { DEFAULT_REQUEST_EXPIRY_S, MAX_REQUEST_EXPIRY_S } from '../ops/requests/node-requests.js';
import { askedAmount } from '../ops/money.js';
import { priceLine } from '../cli/output/format.js';
import { waitFlag } from '../cli/duration-flag.js';

export default class Request extends SessionCommand {
  static override summary = 'Create a payment request (in XNO, or priced in another currency); prints the exact amount to pay and a QR code of the nano: URI.';
  static override description = `The amount is raised by a tiny offset so the payment can be matched (by the service, or on a node
backend by nanopay itself): the payer must send exactly the amount shown. --fresh-address (node backend) uses an unused account instead. On a node backend a request expires after --expires-in (default ${formatDuration(DEFAULT_REQUEST_EXPIRY_S)}); status then says expired. The QR code encodes nano:<address>?amount=<raw>. --watch waits for the payment like status --watch.
--currency EUR prices it in another currency: the XNO amount is computed now from the rate source (config set rate-source URL),
rounded up to 0.000001 XNO, and holds for rate-quote-window (default 15m), when the request expires, on either backend (a
longer --expires-in is refused); the price, its rate and the quote's end are kept and shown with it (status too).`;
  static override examples = ['<%= config.bin %> request 1.5', '<%= config.bin %> request 0.25 --to nano_1… --no-qr --json', '<%= config.bin %> request 2 --watch --timeout 600', '<%= config.bin %> request 1 --qr-style light', '<%= config.bin %> request 5 --expires-in 2h', '<%= config.bin %> request 19.99 --currency EUR'];
  static override args = { amount: Args.string({ ignoreStdin: true, description: 'amount in XNO (or in --currency)', required: true }) };
  static override flags = {
    currency: Flags.string({ description: 'the currency of the amount (ISO 4217: EUR, USD…), turned into XNO at the rate source\'s rate; default XNO' }),
    to: Flags.string({ description: 'receive address (default: the active account)' }),
    'fresh-address': Flags.boolean({ description: 'backend node: an unused account of the wallet for this request alone (the amount is then exact, no offset)' }),
    'expires-in': Flags.string({
      description: `backend node, or a price in another currency: how long the request waits for its payment: 30m, 2h, 1d (default ${formatDuration(DEFAULT_REQUEST_EXPIRY_S)}, at most ${formatDuration(MAX_REQUEST_EXPIRY_S)}; with --currency, rate-quote-window)`,
    }),
    'redirect-url': Flags.string({ description: 'where the customer goes after paying' }),
    qr: Flags.boolean({ description: 'print a QR code (default: on a terminal)', allowNo: true }),
    'qr-style': Flags.string({
      description: 'the terminal background the QR code is drawn for: dark (light blocks) or light (dark blocks)',
      options: QR_STYLES,
      default: 'dark',
      env: 'NANOPAY_QR_STYLE',
    }),
    watch: Flags.boolean({ description: 'then wait until it is paid' }),
    interval: Flags.integer({ description: 'seconds between checks with --watch', default: 2, min: 1 }),
    timeout: waitFlag('with --watch, give up after this long (exit 8)'),
  };

  async run(): Promise<PaymentRequestResult | void> {
    const { args, flags } = await this.parse(Request);
    const session = this.session(flags);
    const request = await requestPayment(session, {
      amount: askedAmount(args.amount, flags.currency),
      ...(flags.to === undefined ? {} : { to: flags.to }),
      ...(flags['fresh-address'] ? { freshAddress: true } : {}),
      ...(flags['expires-in'] === undefined ? {} : { expiresInS: parseDuration(flags['expires-in'], { max: MAX_REQUEST_EXPIRY_S, what: 'A payment request' }) }),
      ...(flags['redirect-url'] === undefined ? {} : { redirectUrl: flags['redirect-url'] }),
    });
    const json = this.jsonEnabled();
    if (json && flags.watch) process.stdout.write(`${JSON.stringify(withSandboxMark({ event: 'request', ...request }))}\n`);
    if (!json) {
      this.log(`Payment request ${request.transaction_id}`);
      this.log(`Pay exactly ${request.amount} XNO to ${request.receive_address}`);
      if (request.fiat !== undefined) this.log(`Price: ${priceLine(request.fiat)}`);
      this.log(
        flags['fresh-address']
          ? 'This address was made for this request alone: every payment to it counts toward the request. The amount has no offset; the payer sends exactly this amount.'
          : 'The amount carries a small offset that identifies this request: the payer must send exactly that amount, not a rounded one.',
      );
      if (flags.qr ?? process.stdout.isTTY) this.log(`\n${await renderQr(request.uri, flags['qr-style'] as QrStyle)}`);
      this.log(`Link: ${request.uri}`);
      if (request.expires_at !== undefined) this.log(`Expires: ${request.expires_at}`);
    }
    if (!flags.watch) return request;
    await watch(this, session, request.transaction_id, { interval: flags.interval, timeout: flags.timeout, json, signal: this.signal });
  }
}
