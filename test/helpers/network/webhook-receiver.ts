import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhook } from '../../../src/index.js';

export interface ReceivedEvent {
  id: string;
  type: string;
  created: number;
  data: { object: { id: string; status: string; order_id?: string } };
}

/**
 * A shop's webhook endpoint: verifies every signature (a failure is kept, and
 * answered 400), records each event as received, and answers 200 (503 while
 * "down"). While `holding`, a delivery is kept unanswered until release().
 */
export interface WebhookReceiver {
  url: string;
  /** The events answered 200. */
  events: ReceivedEvent[];
  /** Every verified delivery as it arrived, answered or not (held, cut by the sender). */
  arrived: ReceivedEvent[];
  /** Deliveries whose signature did not verify. */
  refused: string[];
  down: boolean;
  holding: boolean;
  /** Answers the held deliveries (200), and stops holding. */
  release(): void;
  close(): Promise<void>;
}

export async function startWebhookReceiver(secret: () => string): Promise<WebhookReceiver> {
  const receiver = { events: [] as ReceivedEvent[], arrived: [] as ReceivedEvent[], refused: [] as string[], down: false, holding: false };
  const held: (() => void)[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      if (receiver.down) {
        res.writeHead(503).end();
        return;
      }
      try {
        const event = verifyWebhook(secret(), req.headers['nanopay-signature'] as string | undefined, Buffer.concat(chunks)) as ReceivedEvent;
        receiver.arrived.push(event);
        const answer = (): void => {
          if (res.destroyed || req.socket.destroyed) return;
          receiver.events.push(event);
          res.writeHead(200).end('ok');
        };
        if (receiver.holding) held.push(answer);
        else answer();
      } catch (error) {
        receiver.refused.push((error as Error).message);
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(receiver, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    release: () => {
      receiver.holding = false;
      for (const answer of held.splice(0)) answer();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

/** Waits for `condition`, failing after `ms` (a bound, not a measurement). */
export async function until(condition: () => boolean | Promise<boolean>, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`gave up after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
