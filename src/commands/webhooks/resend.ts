import { Args } from '@oclif/core';
import { SessionCommand } from '../../cli/session-command.js';
import { resendWebhook } from '../../shop/deliver.js';

export default class WebhooksResend extends SessionCommand {
  static override summary = 'Queue a webhook event to be delivered again (same event id and body, a new signature).';
  static override description = 'The running checkout serve (or listen) delivers it, retrying for 3 days from now as for a new event.';
  static override examples = ['<%= config.bin %> webhooks resend evt_0f3c…'];
  static override args = { id: Args.string({ ignoreStdin: true, description: 'the event id (webhooks list)', required: true }) };

  async run(): Promise<{ id: string; type: string; queued: true }> {
    const { args, flags } = await this.parse(WebhooksResend);
    const event = await resendWebhook(await this.session(flags).dataStore(), args.id);
    this.log(`Queued ${event.id} (${event.type} of request ${event.data.object.id}) for delivery.`);
    return { id: event.id, type: event.type, queued: true };
  }
}
