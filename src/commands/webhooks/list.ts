import { Flags } from '@oclif/core';
import { table } from '../../cli/output/format.js';
import { SessionCommand } from '../../cli/session-command.js';
import type { WebhookEvent } from '../../store/shop.js';

function deliveryOf(event: WebhookEvent): string {
  const d = event.delivery;
  if (d.delivered_at !== undefined) return `delivered ${d.delivered_at}`;
  if (d.failed === true) return `failed (${d.attempts} attempts)`;
  return d.attempts === 0 ? 'pending' : `retrying (${d.attempts} attempts)`;
}

export default class WebhooksList extends SessionCommand {
  static override summary = "List the shop server's webhook events, newest first, with how their delivery went.";
  static override description = 'Events are recorded by checkout serve (and listen) for each change of a request; resend one with webhooks resend ID.';
  static override examples = ['<%= config.bin %> webhooks list', '<%= config.bin %> webhooks list --limit 100 --json'];
  static override flags = {
    limit: Flags.integer({ description: 'how many', default: 20, min: 1, max: 1000 }),
  };

  async run(): Promise<{ events: WebhookEvent[] }> {
    const { flags } = await this.parse(WebhooksList);
    const events = await (await this.session(flags).dataStore()).shop.events(flags.limit);
    if (events.length === 0) this.log('No webhook events yet.');
    else {
      const rows = events.map((e) => [e.id, e.type, e.data.object.id, e.data.object.order_id ?? '', new Date(e.created * 1000).toISOString(), deliveryOf(e), e.delivery.last_result ?? '']);
      this.log(table([['EVENT', 'TYPE', 'REQUEST', 'ORDER', 'CREATED', 'DELIVERY', 'LAST ANSWER'], ...rows]));
    }
    return { events };
  }
}
