import { Flags } from '@oclif/core';
import { backendCheck, serverFlags, ServerRuntime, writableDirCheck } from '../cli/server-runtime.js';
import { SessionCommand, commandAfterDashes } from '../cli/session-command.js';
import { NanoPayError } from '../errors.js';
import { normalizeAddress, rawToXno, xnoToRaw } from '../nano/index.js';
import { parseNetwork } from '../x402/network.js';
import { answersDir, profileSettler, settlementsDir } from '../x402/profile-settler.js';
import { Paywall, parseRoute } from '../x402/paywall.js';
import { startPaywallServer } from '../x402/paywall-server.js';
import type { NanoSettler } from '../x402/facilitator.js';
import { profileSessionSeller } from '../x402/sessions/profile-seller.js';
import type { SessionSeller } from '../x402/sessions/seller.js';
import { parseDuration } from '../ops/duration.js';
import { ToolPaywall } from '../x402/mcp/tool-paywall.js';
import { forwardCall, serveStdioProxy } from '../x402/mcp/stdio-proxy.js';
import { startHttpServer } from '../http/server.js';
import type { ServerLog } from '../http/log.js';
import { sessionRoutes } from '../x402/sessions/paywall-sessions.js';
import { SESSIONS_PATH } from '../x402/sessions/wire.js';
import { AnswerStore, PAYMENT_IDENTIFIER, paymentIdentifierOffer } from '../x402/answers.js';

export default class PaywallCommand extends SessionCommand {
  static override summary = 'Charge for an HTTP API in Nano (x402): a reverse proxy that answers 402 until paid.';
  static override description = `Requests to the paywall are forwarded to --upstream once paid. An unpaid request gets 402 with a PAYMENT-REQUIRED
header (x402 v2, scheme exact, the price in raw, on the backend's network: nano:mainnet on the live network, the
sandbox's or a test node's own otherwise, e.g. nano:dev). A payment (the buyer's signed send block, not
published) is verified against the ledger. On GET and HEAD the request is forwarded, and the block is published and its
confirmation awaited only when the upstream answered below 400: a failed request costs the buyer nothing. On any other
method (POST, PUT, PATCH, DELETE…) the block is settled first and the request forwarded only once paid, so nothing changes
unpaid. Each payer's previous block is claimed in a record under the config dir before publishing, so a block settles at
most once. --route sets a price per method and path ('GET /api/*=0.001', METHOD may be *; a price of 0 is free; add
settle=before or settle=after to choose the order); other requests cost --price. The path priced is the path forwarded,
under --upstream's path: a path with dot segments (also encoded), an encoded / \ or %, a backslash or a ';' is refused
with 400. Holds no key:
payments go to --to (default: the active account's address) and it needs only the profile's backend (a node, or the
sandbox). GET /healthz and GET /readyz are answered by the paywall itself (not forwarded); /metrics only on
--metrics-listen. Logs one line per request to stderr (--log-format json: one object a line). Runs until SIGTERM or
Ctrl-C, which drain it: requests in flight finish within --drain-timeout, then it exits 0.`;
  static override examples = [
    "<%= config.bin %> paywall --upstream http://127.0.0.1:8080 --price 0.001",
    "<%= config.bin %> paywall --upstream http://127.0.0.1:8080 --price 0 --route 'GET /premium/*=0.01' --port 4021",
  ];
  static override flags = {
    upstream: Flags.string({ description: 'the API to forward to (http://host:port[/prefix]); with --mcp, the MCP server is the command after --', exclusive: ['mcp'] }),
    price: Flags.string({ description: 'price of a request in XNO (0: free unless a --route prices it); with --mcp, of a tool no --tool names (default 0)' }),
    mcp: Flags.boolean({ description: 'sell the tools of the MCP server started by the command after -- (stdio), priced by --tool; this process speaks MCP on its stdio' }),
    tool: Flags.string({ description: "with --mcp: a tool's price, 'NAME=XNO' (repeatable)", multiple: true, default: [] }),
    route: Flags.string({ description: "price for a method and path: 'METHOD /path/*=XNO [settle=before|after]' (repeatable; the first match wins)", multiple: true, default: [] }),
    to: Flags.string({ description: 'address paid (default: the active account)' }),
    network: Flags.string({ description: 'the x402 network (nano:mainnet…) when the node does not say; one that says must agree (default: x402-network)' }),
    host: Flags.string({ description: 'address to listen on', default: '127.0.0.1' }),
    port: Flags.integer({ description: 'port (default: a free one)', default: 0, min: 0, max: 65535 }),
    sessions: Flags.boolean({ description: 'offer Nano sessions beside exact: one deposit, a signed voucher a call, the rest refunded at close (needs the key of --to)' }),
    'session-deposit': Flags.string({ description: 'the least deposit a session takes, in XNO (default: 100 calls at --price)', dependsOn: ['sessions'] }),
    'session-idle': Flags.string({ description: 'a session without a call this long is closed and refunded (e.g. 10m)', default: '10m' }),
    'session-expiry': Flags.string({ description: 'a session is closed and refunded this long after it opened (e.g. 24h)', default: '24h' }),
    wallet: Flags.string({ description: 'with --sessions: the wallet whose account is paid and refunds' }),
    account: Flags.integer({ description: 'with --sessions: that account index within the wallet', min: 0 }),
    ...serverFlags,
  };

  static override strict = false;

  async run(): Promise<void> {
    const { flags, argv } = await this.parse(PaywallCommand);
    if (flags.mcp) return this.sellTools(flags, commandAfterDashes(this.argv));
    const runtime = new ServerRuntime(flags);
    if (flags.tool.length > 0) throw new NanoPayError('USAGE', '--tool prices the tools of an MCP server: it goes with --mcp');
    if (flags.upstream === undefined || flags.price === undefined) throw new NanoPayError('USAGE', 'paywall needs --upstream URL and --price XNO (or --mcp and the MCP server command after --)');
    if (!URL.canParse(flags.upstream) || !/^https?:$/.test(new URL(flags.upstream).protocol)) {
      throw new NanoPayError('USAGE', `--upstream must be an http(s) URL, not "${flags.upstream}"`);
    }
    if ((argv as string[]).length > 0) throw new NanoPayError('USAGE', `paywall takes no arguments (got ${(argv as string[]).join(' ')}); the command after -- is for --mcp`);
    const routes = flags.route.map(parseRoute);
    const defaultRaw = xnoToRaw(flags.price);
    const session = this.session(flags);
    const upstream = flags.upstream;
    const payTo = normalizeAddress(flags.to ?? (await session.address()));
    const settler = await profileSettler(session, flags.network === undefined ? {} : { network: parseNetwork(flags.network, '--network') });
    const network = await settler.network();
    const workThreshold = String((await settler.supported()).kinds[0]?.extra?.workThreshold);
    const paywall = new Paywall({ payTo, settler, workThreshold, extensions: { [PAYMENT_IDENTIFIER]: paymentIdentifierOffer } });
    const sessions = flags.sessions ? await this.sessionSeller(session, settler, payTo, workThreshold, defaultRaw, flags, (line, fields) => runtime.log(line, fields)) : undefined;
    const { server, shown: probesShown } = await runtime.start([writableDirCheck('store', settlementsDir(session)), backendCheck(session)], (probes) =>
      startPaywallServer({
        host: flags.host,
        port: flags.port,
        upstream,
        paywall,
        routes,
        defaultRaw,
        log: runtime.log,
        probes,
        drainMs: runtime.drainMs,
        ...(sessions === undefined ? {} : { sessions }),
        answers: new AnswerStore(answersDir(session)),
      }),
    );
    sessions?.start();
    if (this.jsonEnabled()) {
      const started = { url: server.url, upstream, network, pay_to: payTo, price: rawToXno(defaultRaw), price_raw: defaultRaw.toString(), sessions: sessions !== undefined, ...probesShown };
      process.stdout.write(`${JSON.stringify(started)}\n`);
    } else {
      this.log(`x402 paywall (${network}): ${server.url} -> ${upstream}\nPrice: ${rawToXno(defaultRaw)} XNO per request${routes.length > 0 ? ` (and ${routes.length} priced route(s))` : ''}, paid to ${payTo}\nStop it: Ctrl-C`);
    }
    await runtime.untilStopped(async () => {
      await server.close();
      await sessions?.shutdown();
    });
  }

  /** --mcp: the fronted server's tools over MCP on stdio, priced ones sold for Nano (exact); logs on stderr, stdout is the protocol's. */
  private async sellTools(
    flags: SessionFlags & { tool: string[]; price?: string; to?: string; network?: string; profile?: string; sessions: boolean; host: string; port: number },
    command: string[],
  ): Promise<void> {
    const [program, ...args] = command;
    if (program === undefined) throw new NanoPayError('USAGE', 'paywall --mcp needs the MCP server to sell, after --: nanopay paywall --mcp --tool NAME=XNO -- COMMAND [ARGS…]');
    const prices = toolPrices(flags.tool);
    const otherRaw = flags.price === undefined ? 0n : xnoToRaw(flags.price);
    const session = this.session(flags);
    const payTo = normalizeAddress(flags.to ?? (await session.address()));
    const settler = await profileSettler(session, flags.network === undefined ? {} : { network: parseNetwork(flags.network, '--network') });
    const workThreshold = String((await settler.supported()).kinds[0]?.extra?.workThreshold);
    const log = (line: string): void => void process.stderr.write(`${line}\n`);
    // Sessions open over HTTP (this process listens on --host/--port for their endpoints only); calls pay by voucher in _meta.
    const highest = [...prices.values(), otherRaw].reduce((a, b) => (b > a ? b : a), 0n);
    const seller = flags.sessions ? await this.sessionSeller(session, settler, payTo, workThreshold, highest, flags, (line) => log(line)) : undefined;
    const endpoints = seller === undefined ? undefined : await startHttpServer({ host: flags.host, port: flags.port, routes: sessionRoutes(seller), log: (line) => log(line) });
    seller?.start();
    const sessions = seller === undefined || endpoints === undefined ? undefined : { seller, url: `${endpoints.url}${SESSIONS_PATH}` };
    const tools = new ToolPaywall(new Paywall({ payTo, settler, workThreshold }), prices, otherRaw, log, sessions);
    const shown = [...[...prices].map(([name, raw]) => `${name} ${rawToXno(raw)} XNO`), ...(otherRaw === 0n ? [] : [`others ${rawToXno(otherRaw)} XNO`])];
    log(`x402 MCP paywall (${await settler.network()}): ${shown.join(', ') || 'no tool priced'}, paid to ${payTo}${sessions === undefined ? '' : `; sessions at ${sessions.url}`}`);
    const { closed } = await serveStdioProxy({ command: program, args, name: 'nanopay-paywall', version: this.config.version, call: (c, upstream) => tools.call(c.name, c.args, c.meta, () => forwardCall(upstream, c)) });
    await closed;
    await endpoints?.close();
    await seller?.shutdown();
  }

  private async sessionSeller(
    session: ReturnType<PaywallCommand['session']>,
    settler: NanoSettler,
    payTo: string,
    workThreshold: string,
    priceRaw: bigint,
    flags: SessionFlags,
    log: ServerLog,
  ): Promise<SessionSeller> {
    const day = 366 * 86_400;
    const terms = {
      minDepositRaw: flags['session-deposit'] === undefined ? priceRaw * 100n : xnoToRaw(flags['session-deposit']),
      idleSeconds: parseDuration(flags['session-idle'], { max: day, what: '--session-idle' }),
      expirySeconds: parseDuration(flags['session-expiry'], { max: day, what: '--session-expiry' }),
    };
    if (terms.minDepositRaw <= 0n) throw new NanoPayError('USAGE', 'A session needs a deposit above 0: give --session-deposit XNO');
    return profileSessionSeller(session, settler, {
      payTo,
      terms,
      workThreshold,
      ...(flags.wallet === undefined ? {} : { wallet: flags.wallet }),
      ...(flags.account === undefined ? {} : { index: flags.account }),
      log: (message, { event, ...fields }) => log(message, { event: String(event), fields: Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, v ?? undefined])) }),
    });
  }
}

/** The flags of the sessions a paywall sells. */
interface SessionFlags {
  'session-deposit'?: string;
  'session-idle': string;
  'session-expiry': string;
  wallet?: string;
  account?: number;
}

/** --tool NAME=XNO prices, by tool name. */
function toolPrices(specs: readonly string[]): Map<string, bigint> {
  const prices = new Map<string, bigint>();
  for (const spec of specs) {
    const match = /^\s*([A-Za-z0-9_.-]{1,128})\s*=\s*(\S+)\s*$/.exec(spec);
    if (match === null) throw new NanoPayError('USAGE', `A tool's price is 'NAME=XNO' (e.g. 'forecast=0.001'), not "${spec}"`);
    prices.set(match[1] as string, xnoToRaw(match[2] as string));
  }
  return prices;
}
