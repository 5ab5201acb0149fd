import { Flags } from '@oclif/core';
import { backendCheck, serverFlags, ServerRuntime, writableDirCheck } from '../cli/server-runtime.js';
import { SessionCommand } from '../cli/session-command.js';
import { startFacilitatorServer } from '../x402/facilitator-server.js';
import { parseNetwork } from '../x402/network.js';
import { profileSettler, settlementsDir } from '../x402/profile-settler.js';

export default class Facilitator extends SessionCommand {
  static override summary = 'Serve an x402 facilitator for Nano: POST /verify, POST /settle, GET /supported.';
  static override description = `Any x402 v2 resource server (for example @x402/express with HTTPFacilitatorClient) can then accept
Nano (scheme "exact", asset XNO, amounts in raw) on the backend's network: nano:mainnet on the live network, the sandbox's
or a test node's own otherwise (e.g. nano:dev), as /supported and every answer say. /verify checks the signed send block of a payment
against the ledger; /settle publishes it and answers once the ledger confirms it (within 30 s: give the client a longer
timeout). Each payer's previous block is claimed in a record under the config dir before publishing, so a block settles at
most once, even when sent twice or concurrently. Holds no key: it needs only the profile's backend (a node, or the
sandbox). GET /healthz and /readyz answer without a token; /metrics only on --metrics-listen. Logs one line per
request to stderr (--log-format json: one object a line). Runs until SIGTERM or Ctrl-C, which drain it: requests in
flight (a settlement awaiting its confirmation) finish within --drain-timeout, then it exits 0.`;
  static override examples = ['<%= config.bin %> facilitator --port 4020', 'NANOPAY_BACKEND=node NANOPAY_NODE_URL=http://127.0.0.1:7076 <%= config.bin %> facilitator'];
  static override flags = {
    network: Flags.string({ description: 'the x402 network (nano:mainnet…) when the node does not say; one that says must agree (default: x402-network)' }),
    host: Flags.string({ description: 'address to listen on', default: '127.0.0.1' }),
    port: Flags.integer({ description: 'port (default: a free one)', default: 0, min: 0, max: 65535 }),
    ...serverFlags,
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Facilitator);
    const runtime = new ServerRuntime(flags);
    const session = this.session(flags);
    const settler = await profileSettler(session, flags.network === undefined ? {} : { network: parseNetwork(flags.network, '--network') });
    const network = await settler.network();
    const { server, shown: probesShown } = await runtime.start([writableDirCheck('store', settlementsDir(session)), backendCheck(session)], (probes) =>
      startFacilitatorServer({ host: flags.host, port: flags.port, settler, log: runtime.log, probes, drainMs: runtime.drainMs }),
    );
    if (this.jsonEnabled()) process.stdout.write(`${JSON.stringify({ url: server.url, network, ...probesShown })}\n`);
    else this.log(`x402 facilitator (Nano exact, ${network}): ${server.url}\nStop it: Ctrl-C`);
    await runtime.untilStopped(() => server.close());
  }
}
