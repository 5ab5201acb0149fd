import { Flags } from '@oclif/core';
import { SessionCommand } from '../cli/session-command.js';
import { progress, type Progress } from '../cli/output/spinner.js';
import { xnoToRaw } from '../nano/index.js';
import { receive, watchReceive, type ReceiveResult } from '../ops/account/receive.js';
import { withSandboxMark } from '../ops/observe.js';
import { waitFlag } from '../cli/duration-flag.js';

export default class Receive extends SessionCommand {
  static override summary = 'Receive every pending block of the active account (opening it if new).';
  static override description = `On a node backend it also receives on the fresh accounts of your payment requests (request --fresh-address).
With --watch it keeps receiving as payments confirm (at once where the node's WebSocket is known), until Ctrl-C or --timeout;
with --json it prints one JSON document per receive (NDJSON).`;
  static override examples = ['<%= config.bin %> receive', '<%= config.bin %> receive --min 0.001 --json', '<%= config.bin %> receive --watch --timeout 600'];
  static override flags = {
    min: Flags.string({ description: 'leave pending blocks below this many XNO (dust) alone' }),
    wallet: Flags.string({ description: 'wallet to use instead of the active one' }),
    account: Flags.integer({ description: 'account index within the wallet', min: 0 }),
    watch: Flags.boolean({ description: 'keep receiving as payments arrive' }),
    interval: Flags.integer({ description: 'seconds between checks with --watch (without a WebSocket)', default: 2, min: 1 }),
    timeout: waitFlag('with --watch, stop after this long'),
  };

  async run(): Promise<ReceiveResult | void> {
    const { flags } = await this.parse(Receive);
    const input = {
      signal: this.signal,
      ...(flags.min === undefined ? {} : { minimumRaw: xnoToRaw(flags.min) }),
      ...(flags.wallet === undefined ? {} : { wallet: flags.wallet }),
      ...(flags.account === undefined ? {} : { index: flags.account }),
    };
    const session = this.session(flags);
    if (flags.watch) {
      const json = this.jsonEnabled();
      const started = Date.now();
      // A spinner on stderr while it waits (not while it receives: the proof of work has its own).
      let spinner: Progress | undefined;
      let showing = 0;
      const result = await watchReceive(session, {
        ...input,
        intervalMs: flags.interval * 1000,
        ...(flags.timeout === undefined ? {} : { timeoutMs: flags.timeout * 1000 }),
        onReceived: (r) => {
          if (json) process.stdout.write(`${JSON.stringify(withSandboxMark(r))}\n`);
          else {
            for (const item of r.received) this.log(`Received ${item.amount} XNO on ${item.account} (${item.subtype} ${item.hash})`);
            this.warnNotReceived(r);
          }
        },
        onWaiting: (accounts) => {
          const turn = ++showing;
          spinner?.stop();
          spinner = undefined;
          if (accounts === undefined || json) return;
          const what = accounts.length === 1 ? accounts[0] : `${accounts.length} accounts`;
          const text = (): string => `Waiting for payments to ${what} (${Math.round((Date.now() - started) / 1000)} s; Ctrl-C to stop)`;
          void progress(text(), true).then((p) => {
            // A wait that ended while ora loaded shows nothing.
            if (turn !== showing) return p.stop();
            const tick = setInterval(() => p.update(text()), 1000);
            spinner = {
              ...p,
              stop: () => {
                clearInterval(tick);
                p.stop();
              },
            };
          });
        },
      });
      if (!json) this.log(`Stopped watching; received ${result.total} XNO in all.`);
      return;
    }
    const result = await receive(session, input);
    if (result.received.length === 0 && result.not_received === undefined) this.log('Nothing to receive.');
    for (const r of result.received) this.log(`Received ${r.amount} XNO${r.account === result.account ? '' : ` on ${r.account}`} (${r.subtype} ${r.hash})`);
    if (result.received.length > 1) this.log(`Total: ${result.total} XNO`);
    if (!this.jsonEnabled()) this.warnNotReceived(result);
    return result;
  }

  /** The blocks left waiting, on stderr: received they were not, and they count for nothing. */
  private warnNotReceived(result: ReceiveResult): void {
    for (const r of result.not_received ?? []) process.stderr.write(`Warning: block ${r.hash} on ${r.account} was not received (${r.code}: ${r.message}); it stays waiting and counts for nothing.\n`);
  }
}
