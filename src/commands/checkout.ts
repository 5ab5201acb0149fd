import { networkInterfaces } from 'node:os';
import { Args, Flags } from '@oclif/core';
import { openBrowser } from '../cli/open-browser.js';
import type { PasswordFlags } from '../cli/input/password.js';
import { runFlags, ServerRuntime } from '../cli/server-runtime.js';
import { SessionCommand } from '../cli/session-command.js';
import { DEFAULT_REDIRECT_SECONDS, DEFAULT_RELOAD_SECONDS } from '../checkout/page.js';
import { talkedToSandbox } from '../ops/observe.js';
import { startCheckoutServer } from '../checkout/server.js';
import { checkoutConfirmations, checkoutReader, openCheckout } from '../ops/requests/checkout.js';

/** A URL customers on the network can open when the server listens on every interface. */
function reachableUrl(url: string, host: string): string {
  if (host !== '0.0.0.0' && host !== '::') return url;
  const lan = Object.values(networkInterfaces())
    .flat()
    .find((i) => i !== undefined && i.family === 'IPv4' && !i.internal);
  return lan === undefined ? url : url.replace(/^http:\/\/[^/]+:(\d+)/, `http://${lan.address}:$1`);
}

export default class Checkout extends SessionCommand {
  static override summary = 'Serve a checkout page for a payment request: QR code, wallet link, live confirmation, redirect.';
  static override description = `Serves the page of an existing request (TRANSACTION_ID) or of a new one (--amount) and prints its URL.
The server only reads the request's status (once per --interval while someone looks at the page, whatever the number of
viewers, and at once when a node's WebSocket reports a payment to the address) and pushes changes to the page. It holds
the API key or the node client and no signing key, and has no route that sends, so it may face customers on a local
network (--host 0.0.0.0). On a node backend it serves the requests nanopay keeps, paid only on the exact amount. Runs
until SIGTERM or Ctrl-C (which drain it: open pages are told to retry, then it exits 0); logs one line per request to
stderr (--log-format json: one object a line).`;
  static override examples = [
    '<%= config.bin %> checkout --amount 1.5 --open',
    '<%= config.bin %> checkout --amount 1.5 --redirect-url https://shop.example/thanks --host 0.0.0.0 --port 8080',
    '<%= config.bin %> checkout --amount 1.5 --redirect-url https://shop.example/thanks --redirect-delay 2',
    '<%= config.bin %> checkout 0b8f…-…',
  ];
  static override args = { transaction_id: Args.string({ ignoreStdin: true, description: 'an existing payment request (instead of --amount)' }) };
  static override flags = {
    amount: Flags.string({ description: 'create a request for this amount in XNO' }),
    to: Flags.string({ description: 'receive address (default: the active account)' }),
    'redirect-url': Flags.string({ description: 'http(s) URL the customer goes to after paying' }),
    'redirect-delay': Flags.integer({ description: 'seconds the paid page shows (counting down) before it goes to the redirect URL', default: DEFAULT_REDIRECT_SECONDS, min: 1 }),
    'reload-interval': Flags.integer({ description: 'seconds between reloads of a page without live updates (JavaScript off, or too many viewers)', default: DEFAULT_RELOAD_SECONDS, min: 1 }),
    host: Flags.string({ description: 'address to listen on (0.0.0.0 for a point-of-sale screen on the network)', default: '127.0.0.1' }),
    port: Flags.integer({ description: 'port (default: a free one)', default: 0, min: 0, max: 65535 }),
    interval: Flags.integer({ description: 'seconds between status reads while the page is open', default: 1, min: 1 }),
    open: Flags.boolean({ description: 'open the page in the system browser' }),
    ...runFlags,
  };

  /** The session (and the key store it may have unlocked) stays in here: the server keeps only a status reader. */
  private async prepare(transactionId: string | undefined, flags: { amount?: string; to?: string; 'redirect-url'?: string; profile?: string } & PasswordFlags) {
    const session = this.session(flags);
    const opened = await openCheckout(session, {
      ...(transactionId === undefined ? {} : { transactionId }),
      ...(flags.amount === undefined ? {} : { amount: flags.amount }),
      ...(flags.to === undefined ? {} : { to: flags.to }),
      ...(flags['redirect-url'] === undefined ? {} : { redirectUrl: flags['redirect-url'] }),
    });
    return { ...opened, read: await checkoutReader(session), confirmations: checkoutConfirmations(session) };
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Checkout);
    const runtime = new ServerRuntime(flags);
    const { request, observation, read, confirmations } = await this.prepare(args.transaction_id, flags);
    const { log } = runtime;
    const server = await startCheckoutServer({
      host: flags.host,
      port: flags.port,
      read,
      intervalMs: flags.interval * 1000,
      redirectSeconds: flags['redirect-delay'],
      reloadSeconds: flags['reload-interval'],
      // The request came from the sandbox (its answers say so): the page shows a test-mode band.
      testMode: talkedToSandbox(),
      log,
      drainMs: runtime.drainMs,
      ...(confirmations === undefined ? {} : { confirmations }),
    });
    const url = reachableUrl(server.add(request, observation), flags.host);
    if (this.jsonEnabled()) {
      // A long-running server: its one document is printed once it listens.
      process.stdout.write(`${JSON.stringify({ url, transaction_id: request.transaction_id, amount: request.amount, receive_address: request.receive_address })}\n`);
    } else {
      this.log(`Checkout page: ${url}`);
      this.log(`It asks for exactly ${request.amount} XNO to ${request.receive_address} (request ${request.transaction_id}).`);
      this.log('Stop it: Ctrl-C');
    }
    if (flags.open) {
      const failed = await openBrowser(url);
      if (failed !== undefined) log(`not opening a browser: ${failed}`);
    }
    await runtime.untilStopped(() => server.close());
  }
}
