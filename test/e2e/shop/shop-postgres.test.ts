import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { payUri } from '../../../src/ops/requests/payments.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { backendUser, fundedUser } from '../../helpers/ledger/backend-users.js';
import { postgresUnavailable, startPostgres, type PostgresCluster } from '../../helpers/ledger/postgres.js';
import { parsePrometheus, sampleValue, type PromFamily } from '../../helpers/network/prometheus.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { startCommand, type RunningCommand } from '../../helpers/processes/serve.js';
import { startWebhookReceiver, until, type WebhookReceiver } from '../../helpers/network/webhook-receiver.js';

/**
 * Two `checkout serve` processes of one shop on one PostgreSQL database (node backend), both with the
 * same webhook: a request made through one is served by the other, its payment is claimed once,
 * recorded once, and notified once.
 */
const skip = postgresUnavailable();
type Printed = { url: string; token_file: string; webhook_secret_file: string };

let sb: RunningSandbox;
let cluster: PostgresCluster;
let receiver: WebhookReceiver;
const servers: RunningCommand<Printed>[] = [];

describe.skipIf(skip !== undefined)('two shop servers on one PostgreSQL', () => {
  beforeAll(async () => {
    sb = await sandbox();
    cluster = await startPostgres();
  });

  afterAll(async () => {
    for (const server of servers) await server.stop();
    await receiver?.close();
    await cluster?.stop();
    await sb?.close();
    await shutdownWorkers();
  });

  it('a request made through one is paid on the pages of the other, recorded once, notified once', async () => {
    const url = await cluster.createDatabase(`shop_${randomUUID().replaceAll('-', '')}`);
    const merchant = await backendUser(sb, 'node');
    const payer = await fundedUser(sb, 'node', '2');
    let secret = '';
    receiver = await startWebhookReceiver(() => secret);
    const env = { ...merchant.user.env, NANOPAY_DATABASE_URL: url };
    for (let i = 0; i < 2; i++) {
      servers.push(await startCommand<Printed>(['checkout', 'serve', '--json', '--webhook', receiver.url, '--poll-interval', '1', '--webhook-backoff-ms', '100'], env));
    }
    const [a, b] = servers as [RunningCommand<Printed>, RunningCommand<Printed>];
    const token = readFileSync(a.printed.token_file, 'utf8').trim();
    secret = readFileSync(a.printed.webhook_secret_file, 'utf8').trim();
    const made = (await (
      await fetch(`${a.printed.url}/api/v1/requests`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ amount: '0.4', order_id: 'PG-1' }),
      })
    ).json()) as { data: { id: string; uri: string } };
    // The other server's page, with live updates.
    const onB = `${b.printed.url}/checkout/${made.data.id}`;
    expect((await fetch(onB)).status).toBe(200);
    let stream = '';
    const req = httpRequest(`${onB}/events`, (res) => res.on('data', (d: Buffer) => (stream += d.toString())));
    req.end();
    await until(() => stream.includes('"state":"waiting"'), 'the stream on the other server');
    await payUri(payer.session, made.data.uri, {});
    await until(() => stream.includes('"state":"paid"'), 'paid on the other server');
    await until(() => receiver.events.length >= 1, 'the webhook');
    // Give a second notification every chance to come: it must not.
    await new Promise((r) => setTimeout(r, 2500));
    req.destroy();
    expect(receiver.events.map((e) => [e.type, e.data.object.id])).toEqual([['request.paid', made.data.id]]);
    expect(receiver.refused).toEqual([]);

    // The export reads the shared store: the CLI and the other server's API give the same rows.
    const cli = await merchant.user.run(['requests', 'export', '--format', 'json'], { env: { NANOPAY_DATABASE_URL: url } });
    expect(cli.code).toBe(0);
    expect(JSON.parse(cli.stdout)).toMatchObject([{ id: made.data.id, order_id: 'PG-1', status: 'paid', payer_accounts: [payer.address] }]);
    const api = await fetch(`${b.printed.url}/api/v1/requests/export?format=json`, { headers: { authorization: `Bearer ${token}` } });
    expect(await api.text()).toBe(cli.stdout);
  });

  it('each is ready on the shared store, and both show its webhook backlog and the age of its oldest event', async () => {
    const url = await cluster.createDatabase(`shop_${randomUUID().replaceAll('-', '')}`);
    const merchant = await backendUser(sb, 'node');
    const payer = await fundedUser(sb, 'node', '2');
    let secret = '';
    const down = await startWebhookReceiver(() => secret);
    down.down = true;
    const env = { ...merchant.user.env, NANOPAY_DATABASE_URL: url };
    const pair: RunningCommand<Printed>[] = [];
    try {
      for (let i = 0; i < 2; i++) pair.push(await startCommand<Printed>(['checkout', 'serve', '--json', '--webhook', down.url, '--poll-interval', '1', '--webhook-backoff-ms', '100'], env));
      const [a, b] = pair as [RunningCommand<Printed>, RunningCommand<Printed>];
      const token = readFileSync(a.printed.token_file, 'utf8').trim();
      secret = readFileSync(a.printed.webhook_secret_file, 'utf8').trim();
      const scrape = async (server: RunningCommand<Printed>): Promise<Map<string, PromFamily>> =>
        parsePrometheus(await (await fetch(`${server.printed.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text());
      for (const server of pair) {
        expect(await (await fetch(`${server.printed.url}/readyz`)).json()).toEqual({ success: true, data: { status: 'ready', checks: { store: 'ok', backend: 'ok', wallet: 'ok' } }, error: null });
      }
      const made = (await (
        await fetch(`${a.printed.url}/api/v1/requests`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ amount: '0.41' }) })
      ).json()) as { data: { uri: string } };
      await payUri(payer.session, made.data.uri, {});
      for (const server of pair) await until(async () => sampleValue(await scrape(server), 'nanopay_webhook_backlog') === 1, 'the backlog of the shared store');
      expect(sampleValue(await scrape(b), 'nanopay_webhook_oldest_pending_seconds')).toBeGreaterThan(0);
      down.down = false;
      for (const server of pair) await until(async () => sampleValue(await scrape(server), 'nanopay_webhook_backlog') === 0, 'the backlog delivered');
      expect(sampleValue(await scrape(a), 'nanopay_store_operation_seconds_count', { op: 'shop.create' })).toBe(1);
    } finally {
      for (const server of pair) await server.stop();
      await down.close();
    }
  });
});

if (skip !== undefined) describe('two shop servers on one PostgreSQL', () => it.skip(`skipped: ${skip}`, () => undefined));
