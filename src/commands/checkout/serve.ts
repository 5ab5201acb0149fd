import { Flags } from '@oclif/core';
import { talkedToSandbox } from '../../ops/observe.js';
import { NanoPayError } from '../../errors.js';
import { claimRefund, createClaim, viewClaim } from '../../ops/requests/refund-claims.js';
import { backendCheck, serverFlags, ServerRuntime, shopWalletCheck, storeCheck } from '../../cli/server-runtime.js';
import { SessionCommand } from '../../cli/session-command.js';
import { shopStatusSource, shopToken, webhookSecrets } from '../../cli/shop.js';
import { DEFAULT_REDIRECT_SECONDS, DEFAULT_RELOAD_SECONDS } from '../../checkout/page.js';
import { checkoutConfirmations } from '../../ops/requests/checkout.js';
import { createShopRequest } from '../../shop/create.js';
import { startShopServer } from '../../shop/server.js';
import { startShopSigner } from '../../cli/shop-signer.js';
import { parseDuration } from '../../ops/duration.js';
import { orderRefund } from '../../ops/requests/refunds.js';
import { endpointLabel } from '../../shop/endpoint-label.js';

export default class CheckoutServe extends SessionCommand {
  static override summary = "Run the shop's payment server: an API for the shop's backend, a checkout page per request, signed webhooks.";
  static override description = `One long-running server for all of the profile's requests, on either backend.
The shop's backend creates requests with POST /api/v1/requests (bearer token from --token-file, made when absent) and
sends the customer to the checkout_url it gets back. The pages (/checkout/ID and their live updates) are public and
read-only. Every change of a request's status (paid, paid late, underpaid, overpaid, expired), as nanopay's verified view (node)
or the service reports it, is recorded with an event in the store and delivered to each --webhook URL, signed
(Nanopay-Signature) with the secret in --webhook-secret-file, retried for 3 days. Refunds ordered through the API
(POST /api/v1/requests/ID/refunds) wait in the store for a signer: --refunds makes this server one, else nanopay refund --pending.
--sweep-to sweeps the fresh accounts every --sweep-every. GET /healthz and /readyz answer
without a token, GET /metrics (Prometheus) with it, or without one on --metrics-listen. Logs to stderr (--log-format json:
one object a line). Runs until SIGTERM or Ctrl-C, which drain it: answers and deliveries in flight finish within
--drain-timeout (a delivery cut then goes again), then it exits 0; a second signal stops it at once.`;
  static override examples = [
    '<%= config.bin %> checkout serve --port 8080 --public-url https://pay.shop.example --webhook https://shop.example/nanopay-webhook',
    '<%= config.bin %> checkout serve --token-file ./shop.token --webhook http://127.0.0.1:3000/hooks --json',
  ];
  static override flags = {
    host: Flags.string({ description: 'address to listen on', default: '127.0.0.1' }),
    port: Flags.integer({ description: 'port (default: a free one)', default: 0, min: 0, max: 65535 }),
    'public-url': Flags.string({ description: 'the URL customers reach this server at (checkout_url is made from it)' }),
    'token-file': Flags.string({ description: 'the API bearer token, made (0600) when the file is absent (default: checkout.token in the config dir)' }),
    webhook: Flags.string({ description: 'URL that receives the signed events (repeatable)', multiple: true, default: [] }),
    'webhook-secret-file': Flags.string({ description: 'the signing secret(s), current first, made when absent (default: webhook.secret in the config dir)' }),
    'fresh-addresses': Flags.boolean({
      description: 'node backend: each request gets an unused account of the wallet (unlocks the key store to derive them); under- and overpayments are then reported',
    }),
    'shop-name': Flags.string({ description: 'name shown on the checkout pages' }),
    interval: Flags.integer({ description: 'seconds between status reads of a request whose page is open', default: 1, min: 1 }),
    'poll-interval': Flags.integer({ description: 'seconds between reads of every unsettled request (a credit each on the service)', default: 10, min: 1 }),
    'redirect-delay': Flags.integer({ description: 'seconds the paid page shows before it goes to the redirect URL', default: DEFAULT_REDIRECT_SECONDS, min: 1 }),
    'reload-interval': Flags.integer({ description: 'seconds between reloads of a page without live updates', default: DEFAULT_RELOAD_SECONDS, min: 1 }),
    'max-streams': Flags.integer({ description: 'pages with live updates at once; beyond it a page reloads instead', default: 1000, min: 1 }),
    'max-streams-per-client': Flags.integer({ description: 'pages with live updates at once from one client address', default: 16, min: 1 }),
    refunds: Flags.boolean({
      description: 'carry out the refunds ordered through the API (unlocks the key store at start, or uses the unlocked session); without it they wait for nanopay refund --pending',
    }),
    'sweep-to': Flags.string({ description: 'node backend: sweep the fresh accounts to this address or @NAME every --sweep-every (unlocks the key store at start)' }),
    'sweep-every': Flags.string({ description: 'how often --sweep-to sweeps: 30m, 1h, 1d', default: '1h' }),
    'sweep-min': Flags.string({ description: 'with --sweep-to: leave balances below this many XNO' }),
    'webhook-backoff-ms': Flags.integer({ description: 'first retry wait of a webhook (doubling)', default: 1000, min: 1, hidden: true }),
    'webhook-timeout-ms': Flags.integer({ description: "an endpoint's time to answer (a delivery's lease is 5 s more)", default: 10_000, min: 100, hidden: true }),
    ...serverFlags,
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(CheckoutServe);
    const runtime = new ServerRuntime(flags);
    const session = this.session(flags);
    const store = runtime.timed(await session.dataStore());
    if (flags['fresh-addresses']) {
      if (session.backendKind() !== 'node') throw new NanoPayError('USAGE', '--fresh-addresses is for the node backend (the service keeps its requests)');
      // Unlocked now (a prompt, scrypt), not at the first customer's request.
      await session.account();
    }
    // Signing for refunds or sweeps: unlocked now, once (a prompt, scrypt, or the unlocked session), not at the first order.
    const sweepEvery = flags['sweep-to'] === undefined ? undefined : parseDuration(flags['sweep-every'], { max: 7 * 86_400, what: '--sweep-every' }) * 1000;
    if (flags['sweep-to'] !== undefined && session.backendKind() !== 'node') throw new NanoPayError('USAGE', '--sweep-to is for the node backend (fresh addresses)');
    if (flags.refunds || sweepEvery !== undefined) await session.account();
    const { token, file: tokenFile } = await shopToken(flags['token-file'], session.profileName);
    const { current: secrets, file: secretFile } = await webhookSecrets(flags['webhook-secret-file'], session.profileName);
    const { log } = runtime;
    const confirmations = checkoutConfirmations(session);
    const signer = startShopSigner(session, {
      refunds: flags.refunds,
      ...(sweepEvery === undefined ? {} : { sweep: { to: flags['sweep-to'] as string, everyMs: sweepEvery, ...(flags['sweep-min'] === undefined ? {} : { min: { xno: flags['sweep-min'] } }) } }),
      pollMs: flags['poll-interval'] * 1000,
      log,
    });
    const source = await shopStatusSource(session);
    const { server, shown: probesShown } = await runtime.start([storeCheck(store), backendCheck(session), shopWalletCheck(session)], (probes) =>
      startShopServer({
        host: flags.host,
        port: flags.port,
        ...(flags['public-url'] === undefined ? {} : { publicUrl: flags['public-url'].replace(/\/+$/, '') }),
        token,
        store,
        source,
        create: (body, key) => createShopRequest(session, store, body, key, { freshAddress: flags['fresh-addresses'] }),
        refund: async (id, body, key) => {
          const ordered = await orderRefund(session, store, {
            requestId: id,
            ...(typeof body.amount === 'string' ? { amount: { xno: body.amount } } : {}),
            ...(typeof body.to === 'string' ? { to: body.to } : {}),
            ...(key === undefined ? {} : { key }),
          });
          signer.poke();
          return ordered;
        },
        claims: {
          create: async (id, body) => createClaim(session, store, { requestId: id, ...(typeof body.amount === 'string' ? { amount: { xno: body.amount } } : {}), ...(typeof body.expires_in === 'string' ? { expiresIn: body.expires_in } : {}) }),
          view: (token) => viewClaim(store, token),
          claim: async (token, address) => {
            const view = await claimRefund(session, store, token, address);
            signer.poke();
            return view;
          },
        },
        intervalMs: flags.interval * 1000,
        pollMs: flags['poll-interval'] * 1000,
        redirectSeconds: flags['redirect-delay'],
        reloadSeconds: flags['reload-interval'],
        maxStreams: flags['max-streams'],
        maxStreamsPerClient: flags['max-streams-per-client'],
        ...(flags['shop-name'] === undefined ? {} : { shopName: flags['shop-name'] }),
        ...(confirmations === undefined ? {} : { confirmations }),
        webhooks: { endpoints: flags.webhook, secrets, backoffMs: flags['webhook-backoff-ms'], timeoutMs: flags['webhook-timeout-ms'] },
        testMode: talkedToSandbox,
        log,
        probes,
        drainMs: runtime.drainMs,
      }),
    );
    if (this.jsonEnabled()) {
      const started = { url: server.url, token_file: tokenFile, webhook_secret_file: secretFile, webhooks: flags.webhook.map(endpointLabel), store: store.location, ...probesShown };
      process.stdout.write(`${JSON.stringify(started)}\n`);
    } else {
      this.log(`Shop server: ${server.url} (API: ${server.url}/api/v1/requests)`);
      this.log(`API token: in ${tokenFile} (Authorization: Bearer <token>)`);
      this.log(flags.webhook.length === 0 ? 'Webhooks: none (--webhook URL; events wait in the store)' : `Webhooks: ${flags.webhook.map(endpointLabel).join(', ')}, signed with the secret in ${secretFile}`);
      this.log('Stop it: Ctrl-C');
    }
    await runtime.untilStopped(async () => {
      await server.close();
      await signer.stop();
      await store.close();
    });
  }
}
