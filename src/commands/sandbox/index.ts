import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { serverFlags, ServerRuntime, writableDirCheck } from '../../cli/server-runtime.js';
import { startSandbox } from '../../sandbox/index.js';

export default class Sandbox extends BaseCommand {
  static override summary = 'Run the offline sandbox: an emulator of the payment service with a real, validating ledger.';
  static override description = `Starts in the foreground and keeps its ledger, keys and credits in --data-dir across restarts.
Point nanopay at it with NANOPAY_API_URL=<url>, and get test funds from its faucet with sandbox fund. To keep using the same
terminal, run it in the background without its request log (<%= config.bin %> sandbox --quiet &), and stop it with kill %1 or
kill PID (it prints its PID). With --json it prints one document once it listens: {url, ws_url, data_dir, thresholds, pid}.
GET /healthz and /readyz (its data dir writable) answer as on every server; /metrics on --metrics-listen.`;
  static override examples = ['<%= config.bin %> sandbox', '<%= config.bin %> sandbox --quiet &', '<%= config.bin %> sandbox --port 7070 --thresholds live'];
  static override flags = {
    port: Flags.integer({ description: 'port to listen on (0 picks a free one)', default: 7076, min: 0, max: 65535 }),
    host: Flags.string({ description: 'address to listen on', default: '127.0.0.1' }),
    'data-dir': Flags.string({ description: 'where the ledger is kept', default: '.nanopay-sandbox' }),
    thresholds: Flags.string({
      description: 'proof-of-work thresholds: the node dev network (fast, the default for a new ledger) or the live network; a restart keeps the ledger\'s unless given',
      options: ['dev', 'live'],
    }),
    quiet: Flags.boolean({ description: 'do not log to stderr' }),
    ...serverFlags,
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Sandbox);
    const runtime = new ServerRuntime(flags, { silent: flags.quiet });
    const { server: sandbox, shown: probesShown } = await runtime.start([writableDirCheck('store', flags['data-dir'])], (probes) =>
      startSandbox({
        port: flags.port,
        host: flags.host,
        dataDir: flags['data-dir'],
        ...(flags.thresholds === undefined ? {} : { thresholds: flags.thresholds as 'dev' | 'live' }),
        log: runtime.log,
        probes,
        drainMs: runtime.drainMs,
      }),
    );
    const { send, receive } = sandbox.service.thresholds;
    const info = { url: sandbox.url, ws_url: sandbox.wsUrl, data_dir: flags['data-dir'], thresholds: { send, receive }, pid: process.pid, ...probesShown };
    // A long-running server: in JSON mode its one document is printed once it listens.
    if (this.jsonEnabled()) {
      process.stdout.write(`${JSON.stringify(info)}\n`);
    } else {
      this.log(`nanopay sandbox listening on ${sandbox.url} (work thresholds: send ${send}, receive ${receive}; data: ${flags['data-dir']})`);
      this.log(`Use it:   export NANOPAY_API_URL=${sandbox.url}`);
      this.log(`Or as a node (RPC and WebSocket): export NANOPAY_BACKEND=node NANOPAY_NODE_URL=${sandbox.url} NANOPAY_NODE_WS_URL=${sandbox.wsUrl}`);
      this.log(`Try it:   curl -s -X POST ${sandbox.url}/wallet/create`);
      this.log(`Stop it:  Ctrl-C, or kill ${process.pid}`);
    }
    await runtime.untilStopped(() => sandbox.close());
  }
}
