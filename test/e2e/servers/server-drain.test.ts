import { readFileSync } from 'node:fs';
import { createServer, request as httpRequest, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { payUri } from '../../../src/ops/requests/payments.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { createShopRequest } from '../../../src/shop/create.js';
import type { WebhookEvent } from '../../../src/store/shop.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { backendUser, fundedUser, type BackendUser } from '../../helpers/ledger/backend-users.js';
import { parsePrometheus, sampleValue } from '../../helpers/network/prometheus.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { startCommand, type RunningCommand } from '../../helpers/processes/serve.js';
import { startWebhookReceiver, until, type WebhookReceiver } from '../../helpers/network/webhook-receiver.js';

/**
 * SIGTERM (and Ctrl-C) on the built CLI's servers: no new connections, answers and webhook deliveries in flight
 * finish (or go back to the outbox past the bound), live pages get a retry hint, exit 0; a second signal stops at once.
 */
let sb: RunningSandbox;

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

interface Printed {
  url: string;
  webhook_secret_file: string;
  metrics_url: string;
}

/** How the process ended. */
function ended(command: RunningCommand<unknown>): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => {
    if (command.child.exitCode !== null || command.child.signalCode !== null) return resolve({ code: command.child.exitCode, signal: command.child.signalCode });
    command.child.once('close', (code, signal) => resolve({ code, signal }));
  });
}

/** A page's live updates (Server-Sent Events), as a browser's EventSource reads them: everything until the server ends it. */
function openStream(url: string): { opened: Promise<void>; text: Promise<string> } {
  let opened!: () => void;
  const open = new Promise<void>((resolve) => (opened = resolve));
  const text = new Promise<string>((resolve, reject) => {
    httpRequest(url, { headers: { accept: 'text/event-stream' } }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => {
        body += d.toString();
        opened();
      });
      res.on('end', () => resolve(body));
      res.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
  return { opened: open, text };
}

/** The shop's webhook events as `webhooks list --json` shows them (the store's view). */
async function events(shop: BackendUser): Promise<WebhookEvent[]> {
  return (await shop.user.json<{ events: WebhookEvent[] }>(['webhooks', 'list'])).events;
}

describe('checkout serve on SIGTERM', () => {
  let shop: BackendUser;
  let payer: BackendUser;
  let receiver: WebhookReceiver;
  let secret = '';

  beforeAll(async () => {
    shop = await backendUser(sb, 'node');
    payer = await fundedUser(sb, 'node', '3');
    receiver = await startWebhookReceiver(() => secret);
  });

  afterAll(async () => {
    await receiver?.close();
  });

  /**
   * The server; an endpoint's time to answer of 10 minutes, so that a held delivery ends only as the test says (a
   * release, the drain's bound, a second signal), never by a timeout of its own.
   */
  const serve = async (more: string[] = []): Promise<RunningCommand<Printed>> => {
    const server = await startCommand<Printed>(
      ['checkout', 'serve', '--json', '--webhook', receiver.url, '--poll-interval', '1', '--webhook-backoff-ms', '50', '--webhook-timeout-ms', '600000', '--metrics-listen', '127.0.0.1:0', ...more],
      shop.user.env,
    );
    secret = readFileSync(server.printed.webhook_secret_file, 'utf8').trim().split('\n')[0] as string;
    return server;
  };

  /** A paid request of the shop, whose event is then being delivered; and an open one, whose page is watched live. */
  const paidAndWatched = async (server: RunningCommand<Printed>): Promise<{ paidId: string; stream: Promise<string> }> => {
    const store = await shop.session.dataStore();
    const watched = await createShopRequest(shop.session, store, { amount: '0.21' }, undefined);
    const stream = openStream(`${server.printed.url}/checkout/${watched.request.id}/events`);
    await stream.opened;
    const paid = await createShopRequest(shop.session, store, { amount: '0.2' }, undefined);
    await payUri(payer.session, paid.request.uri, {});
    return { paidId: paid.request.id, stream: stream.text };
  };

  it('stops taking connections, lets the delivery in flight finish, tells live pages to retry, exits 0; restarted, it sends nothing twice', async () => {
    receiver.holding = true;
    const arrivedBefore = receiver.arrived.length;
    const server = await serve(['--drain-timeout', '600']);
    const { paidId, stream } = await paidAndWatched(server);
    await until(() => receiver.arrived.length === arrivedBefore + 1, 'the delivery in flight');
    const exit = ended(server);
    server.child.kill('SIGTERM');
    await until(() => server.stderr().includes('SIGTERM: draining'), 'the drain');
    // No new connection; the probes say why it is not ready; the live page is told to come back later.
    await expect(fetch(`${server.printed.url}/healthz`)).rejects.toThrow();
    const ready = await fetch(`${server.printed.metrics_url}/readyz`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { error: { error: string; message: string } }).error).toEqual({ error: 'NOT_READY', message: 'Not ready: server: draining' });
    expect(await stream).toMatch(/^event: status\n[^]*\n\nretry: 3000\n\n$/);
    // The receiver answers the delivery held meanwhile: it counts, once.
    receiver.release();
    expect(await exit).toEqual({ code: 0, signal: null });
    const delivered = (await events(shop)).filter((e) => e.data.object.id === paidId);
    expect(delivered).toHaveLength(1);
    expect(delivered[0]?.delivery).toMatchObject({ attempts: 1, delivered_at: expect.any(String) });
    expect(receiver.events.filter((e) => e.data.object.id === paidId)).toHaveLength(1);

    const again = await serve();
    try {
      const metrics = parsePrometheus(await (await fetch(`${again.printed.metrics_url}/metrics`)).text());
      expect(sampleValue(metrics, 'nanopay_webhook_backlog')).toBe(0);
    } finally {
      await again.stop();
    }
    expect(receiver.arrived.filter((e) => e.data.object.id === paidId)).toHaveLength(1);
  });

  it('past --drain-timeout cuts the delivery and puts it back in the outbox, exits 0; restarted, it delivers it (at least once)', async () => {
    receiver.holding = true;
    const arrivedBefore = receiver.arrived.length;
    const server = await serve(['--drain-timeout', '1']);
    const { paidId } = await paidAndWatched(server);
    await until(() => receiver.arrived.length === arrivedBefore + 1, 'the delivery in flight');
    const exit = ended(server);
    server.child.kill('SIGTERM');
    expect(await exit).toEqual({ code: 0, signal: null });
    const cut = (await events(shop)).find((e) => e.data.object.id === paidId);
    expect(cut?.delivery.delivered_at).toBeUndefined();
    expect(cut?.delivery.last_result).toMatch(/cut short: the server stopped/);

    receiver.holding = false;
    const again = await serve();
    try {
      await until(() => receiver.events.some((e) => e.data.object.id === paidId), 'the delivery after the restart');
    } finally {
      await again.stop();
    }
    expect(receiver.arrived.filter((e) => e.data.object.id === paidId)).toHaveLength(2);
    expect((await events(shop)).find((e) => e.data.object.id === paidId)?.delivery.delivered_at).toEqual(expect.any(String));
  });

  it('a second signal during the drain stops it at once (exit 130); the delivery in flight stays in the outbox, not lost', async () => {
    receiver.holding = true;
    const arrivedBefore = receiver.arrived.length;
    // A drain that would outlast the test.
    const server = await serve(['--drain-timeout', '600']);
    const { paidId } = await paidAndWatched(server);
    await until(() => receiver.arrived.length === arrivedBefore + 1, 'the delivery in flight');
    const exit = ended(server);
    server.child.kill('SIGTERM');
    await until(() => server.stderr().includes('SIGTERM: draining'), 'the drain');
    server.child.kill('SIGINT');
    expect(await exit).toEqual({ code: 130, signal: null });
    expect(server.stderr()).toContain('SIGINT again: stopping now');

    // Not delivered, still waiting: it goes again once its lease (the endpoint's time and 5 s) runs out.
    expect((await events(shop)).find((e) => e.data.object.id === paidId)?.delivery.delivered_at).toBeUndefined();
    const again = await serve();
    try {
      const metrics = parsePrometheus(await (await fetch(`${again.printed.metrics_url}/metrics`)).text());
      expect(sampleValue(metrics, 'nanopay_webhook_backlog')).toBe(1);
    } finally {
      await again.stop();
    }
    receiver.release();
  });
});

describe('paywall on SIGTERM', () => {
  it('lets a request in flight finish while it takes no new connection, then exits 0', async () => {
    const held: ServerResponse[] = [];
    const upstream = createServer((req, res) => {
      if (req.url === '/hold') return void held.push(res);
      res.end('ok');
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const merchant = await backendUser(sb, 'node');
    const paywall = await startCommand<{ url: string }>(
      ['paywall', '--json', '--upstream', `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, '--price', '0', '--to', merchant.address],
      merchant.user.env,
    );
    try {
      const answer = fetch(`${paywall.printed.url}/hold`).then(async (r) => [r.status, await r.text()]);
      await until(() => held.length === 1, 'the request at the upstream');
      const exit = ended(paywall);
      paywall.child.kill('SIGTERM');
      await until(() => paywall.stderr().includes('SIGTERM: draining'), 'the drain');
      await expect(fetch(`${paywall.printed.url}/other`)).rejects.toThrow();
      held[0]?.end('finished');
      expect(await answer).toEqual([200, 'finished']);
      expect(await exit).toEqual({ code: 0, signal: null });
    } finally {
      await paywall.stop();
      upstream.closeAllConnections();
      await new Promise((resolve) => upstream.close(resolve));
    }
  });
});
