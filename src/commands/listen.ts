import { Flags } from '@oclif/core';
import { runFlags, ServerRuntime } from '../cli/server-runtime.js';
import { SessionCommand } from '../cli/session-command.js';
import { shopStatusSource, webhookSecrets } from '../cli/shop.js';
import { endpointLabel } from '../shop/endpoint-label.js';
import { startListener } from '../shop/listener.js';
import { ShopMonitor } from '../shop/monitor.js';

export default class Listen extends SessionCommand {
  static override summary = "Forward the profile's webhook events to a local endpoint, for development (as stripe listen).";
  static override description = `Follows the shop's requests as checkout serve does (a status change records an event) and delivers every
event recorded from its start, signed, to --forward-to, printing each with the endpoint's answer. It prints the file
that holds the signing secret to verify them with (verifyWebhook), and the secret itself with --show-secret. It is one more destination: a checkout serve --webhook beside it still
delivers every event to its endpoints. Runs until SIGTERM or Ctrl-C (deliveries in flight finish within --drain-timeout);
a listener killed stops being a destination within a minute. --log-format json logs one object a line.`;
  static override examples = ['<%= config.bin %> listen --forward-to http://localhost:3000/webhooks'];
  static override flags = {
    'forward-to': Flags.string({ description: 'the local endpoint that receives the events', required: true }),
    'show-secret': Flags.boolean({ description: 'print the signing secret itself, not only the file that holds it' }),
    'webhook-secret-file': Flags.string({ description: 'the signing secret(s), current first, made when absent (default: webhook.secret in the config dir)' }),
    'poll-interval': Flags.integer({ description: 'seconds between reads of every unsettled request', default: 2, min: 1 }),
    'webhook-backoff-ms': Flags.integer({ description: 'first retry wait of a webhook (doubling)', default: 1000, min: 1, hidden: true }),
    'webhook-timeout-ms': Flags.integer({ description: "an endpoint's time to answer (a delivery's lease is 5 s more)", default: 10_000, min: 100, hidden: true }),
    ...runFlags,
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Listen);
    const runtime = new ServerRuntime(flags);
    const session = this.session(flags);
    const store = await session.dataStore();
    const { secrets, file, current } = await webhookSecrets(flags['webhook-secret-file'], session.profileName);
    const forwardTo = endpointLabel(flags['forward-to']);
    const json = this.jsonEnabled();
    const { log } = runtime;
    const listener = await startListener({
      store,
      url: flags['forward-to'],
      secrets: current,
      backoffMs: flags['webhook-backoff-ms'],
      timeoutMs: flags['webhook-timeout-ms'],
      log,
      onAttempt: (event, answers) => {
        const answer = answers[0];
        const said = answer?.status === undefined ? (answer?.error ?? 'no answer') : String(answer.status);
        if (json) process.stdout.write(`${JSON.stringify({ event_id: event.id, type: event.type, request_id: event.data.object.id, answer: said })}\n`);
        else this.log(`${new Date().toISOString()}  --> ${event.type} [${event.id}] request ${event.data.object.id}  <-- [${said}] POST ${forwardTo}`);
      },
    });
    const monitor = new ShopMonitor({ store, source: await shopStatusSource(session), pollMs: flags['poll-interval'] * 1000, onChange: () => listener.poke(), log });
    // The secret itself only when asked: a terminal's scrollback, a recorded session or a CI log would keep it.
    const shown = flags['show-secret'] ? { webhook_secret: secrets[0] } : {};
    if (json) process.stdout.write(`${JSON.stringify({ forward_to: forwardTo, webhook_secret_file: file, ...shown })}\n`);
    else {
      const secret = flags['show-secret'] ? `Your webhook signing secret is ${secrets[0] as string}` : `Your webhook signing secret is in ${file} (--show-secret prints it)`;
      this.log(`Ready! ${secret}; verify with verifyWebhook. Forwarding to ${forwardTo}; Ctrl-C to stop.`);
    }
    monitor.start();
    await runtime.untilStopped(async () => {
      await Promise.all([monitor.stop(), listener.stop(runtime.drainMs)]);
      await store.close();
    });
  }
}
