import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCheckoutServer } from '../../../src/checkout/server.js';
import { NanoPayError } from '../../../src/errors.js';
import { xnoToRaw } from '../../../src/nano/index.js';
import { checkoutConfirmations, checkoutReader, openCheckout, type CheckoutObservation } from '../../../src/ops/requests/checkout.js';
import { payUri, paymentStatus, requestPayment } from '../../../src/ops/requests/payments.js';
import { send } from '../../../src/ops/spending/send.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { userSession } from '../../helpers/ledger/backend-users.js';
import { startCheckout } from '../../helpers/network/browser.js';
import type { CliUser } from '../../helpers/processes/cli.js';
import { nodeMerchantAndCustomer } from '../../helpers/ledger/node-users.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';

/**
 * The checkout page on the node backend: requests nanopay keeps, its own exact matching, and the WebSocket.
 * `nanopay checkout` is the child process under test; the requests, payments and status reads around it
 * run in-process through the operations (those commands have their own tests).
 */
let sb: RunningSandbox;
/** Node RPC calls the sandbox answered (`POST /`), in order. */
const rpcCalls: string[] = [];
let merchant: CliUser;
let customer: CliUser;
let merchantAddress: string;
/** The merchant with the node's WebSocket set. */
let merchantWs: CliUser;

/** Waits for `condition`, failing after `ms` (a bound, not a measurement). */
async function until(condition: () => boolean, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`gave up after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

interface Stream {
  text(): string;
  ended: Promise<void>;
  close(): void;
}

/** A page's event stream, collected as it arrives. */
function events(pageUrl: string): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${pageUrl}/events`, (response) => {
      let text = '';
      response.on('data', (d: Buffer) => (text += d.toString()));
      const ended = new Promise<void>((done) => response.on('close', () => done()));
      resolve({ text: () => text, ended, close: () => req.destroy() });
    });
    req.on('error', reject);
    req.end();
  });
}

const states = (stream: Stream): string[] => [...stream.text().matchAll(/^data: (.*)$/gm)].map((m) => m[1] as string);

/** Sends exactly `raw` raw from the customer to the merchant; returns the block. */
async function sendRaw(raw: bigint): Promise<string> {
  return (await send(userSession(customer), { to: merchantAddress, amount: { raw: raw.toString() } })).hash as string;
}

beforeAll(async () => {
  sb = await sandbox({ log: (line) => void (line.startsWith('POST / ') && rpcCalls.push(line)) });
  // Without a WebSocket: the checkout polls at --interval.
  ({ merchant, customer, merchantAddress } = await nodeMerchantAndCustomer(sb, {}));
  merchantWs = { ...merchant, env: { ...merchant.env, NANOPAY_NODE_WS_URL: sb.wsUrl } };
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

describe('nanopay checkout on the node backend', () => {
  it('serves a request nanopay keeps, stays waiting on an under- or overpayment, and turns paid on the exact amount', async () => {
    const request = await requestPayment(userSession(merchant), { amount: { xno: '0.5' } });
    const checkout = await startCheckout(merchant, [request.transaction_id]);
    try {
      // The exact amount and the address, from the requests store.
      expect(checkout).toMatchObject({ transaction_id: request.transaction_id, amount: request.amount, receive_address: merchantAddress });
      const html = await (await fetch(checkout.url)).text();
      expect(html).toContain(`>${request.amount}<`);
      expect(html).toContain(`>${merchantAddress}<`);
      expect(html).toContain('data-state="waiting"');

      const stream = await events(checkout.url);
      await until(() => states(stream).length === 1, 'the first event');
      const wanted = BigInt(request.amount_raw);
      await sendRaw(wanted - 1n);
      await sendRaw(wanted + 1n);
      // Nothing but the checkout asks the node now: a few of its reads see both payments.
      const seen = rpcCalls.length;
      await until(() => rpcCalls.length >= seen + 3, 'the checkout to read the status again');
      expect(states(stream)).toEqual(['{"state":"waiting","is_paid":false}']);
      expect(await paymentStatus(userSession(merchant), request.transaction_id)).toMatchObject({ is_paid: false });

      const paid = await payUri(userSession(customer), request.uri, {});
      // Paid is final: the stream ends on it, naming the exact payment (the wrong amounts never paid it).
      await stream.ended;
      expect(states(stream)).toEqual(['{"state":"waiting","is_paid":false}', `{"state":"paid","is_paid":true,"block_hash":"${paid.hash}"}`]);
      // The server goes on serving the page, and the request is paid for `status` too.
      expect(await (await fetch(checkout.url)).text()).toContain('data-state="paid"');
      expect(await paymentStatus(userSession(merchant), request.transaction_id)).toMatchObject({ is_paid: true });
    } finally {
      await checkout.stop();
    }
  });

  it('with the WebSocket, a new request for --amount turns paid on the confirmation, long before the next read (--interval 600)', async () => {
    const checkout = await startCheckout(merchantWs, ['--amount', '0.3', '--interval', '600']);
    try {
      expect(checkout.receive_address).toBe(merchantAddress);
      // The base plus the request's own offset, kept in the merchant's requests store.
      const amountRaw = xnoToRaw(checkout.amount);
      expect(amountRaw > xnoToRaw('0.3') && amountRaw < xnoToRaw('0.3') + 2n ** 48n).toBe(true);
      const stream = await events(checkout.url);
      await until(() => states(stream).length === 1 && sb.nodeSockets.subscribers() === 1, 'the page and the subscription');

      const hash = await sendRaw(amountRaw);
      // Bounded far below the 600 s interval: only the confirmation can have woken the read.
      await until(() => states(stream).length === 2, 'the paid state', 20_000);
      expect(states(stream)).toEqual(['{"state":"waiting","is_paid":false}', `{"state":"paid","is_paid":true,"block_hash":"${hash}"}`]);
      expect(await paymentStatus(userSession(merchant), checkout.transaction_id)).toMatchObject({ is_paid: true, amount: checkout.amount });
    } finally {
      await checkout.stop();
    }
    await until(() => sb.nodeSockets.subscribers() === 0, 'the subscription to end');
  });

  it('in process: refuses another --to than the request names (exit 10), and an id nanopay does not keep (exit 9)', async () => {
    // The refusals are the operation's; the command's front end for them is test/e2e/shop/checkout-command.test.ts.
    const session = userSession(merchant);
    const request = await requestPayment(session, { amount: { xno: '1' } });
    const other = 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj';
    const conflict = await openCheckout(session, { transactionId: request.transaction_id, to: other }).catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(NanoPayError);
    expect(conflict).toMatchObject({ exitCode: 10, code: 'CONFLICT' });
    const unknown = await openCheckout(session, { transactionId: '11111111-1111-4111-8111-111111111111' }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(NanoPayError);
    expect(unknown).toMatchObject({ exitCode: 9, code: 'INVALID_TRANSACTION_ID' });
  });

  it('in process: reads on each confirmation to its address, ignores a wrong amount, and unsubscribes on close', async () => {
    const session = userSession(merchantWs);
    const opened = await openCheckout(session, { amount: '0.2' });
    const real = await checkoutReader(session);
    const reads: CheckoutObservation[] = [];
    const server = await startCheckoutServer({
      host: '127.0.0.1',
      port: 0,
      read: async (id) => {
        const observation = await real(id);
        reads.push(observation);
        return observation;
      },
      intervalMs: 600_000,
      confirmations: checkoutConfirmations(session) as NonNullable<ReturnType<typeof checkoutConfirmations>>,
    });
    try {
      const pageUrl = server.add(opened.request, opened.observation);
      const stream = await events(pageUrl);
      await until(() => states(stream).length === 1 && sb.nodeSockets.subscribers() === 1, 'the page and the subscription');
      const wanted = BigInt(opened.request.amount_raw);

      const before = reads.length;
      await sendRaw(wanted * 2n);
      // The confirmation of the overpayment makes the server read at once; the request stays open.
      await until(() => reads.length > before, 'a read on the confirmation');
      expect(reads.slice(before).every((r) => r.state === 'waiting')).toBe(true);

      const hash = await sendRaw(wanted);
      await until(() => states(stream).length === 2, 'the paid state');
      expect(states(stream)).toEqual(['{"state":"waiting","is_paid":false}', `{"state":"paid","is_paid":true,"block_hash":"${hash}"}`]);
    } finally {
      await server.close();
    }
    await until(() => sb.nodeSockets.subscribers() === 0, 'the subscription to end with the server');
  });
});
