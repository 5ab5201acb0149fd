import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { xnoToRaw } from '../../../src/nano/index.js';
import { balance } from '../../../src/ops/account/balance.js';
import { payUri, requestPayment } from '../../../src/ops/requests/payments.js';
import { send } from '../../../src/ops/spending/send.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { userSession } from '../../helpers/ledger/backend-users.js';
import { BIN } from '../../helpers/processes/cli.js';
import { nodeMerchantAndCustomer } from '../../helpers/ledger/node-users.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';

/**
 * Instant detection on the node backend: the WebSocket, its loss, and what is never lost with it.
 * The watching command is the child process under test; the payments it watches for, and the
 * setup, are made in-process (those commands have their own tests). Each test has its own users.
 */
let sb: RunningSandbox;
const rpcCalls: string[] = [];

const until = async (condition: () => boolean, what: string): Promise<void> => {
  for (let i = 0; i < 600; i++) {
    if (condition()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`gave up waiting for ${what}`);
};

/** Waits until the node has had no RPC call for a while: the watcher's check after a disconnect is over. */
async function quiet(): Promise<void> {
  let seen = -1;
  while (seen !== rpcCalls.length) {
    seen = rpcCalls.length;
    await new Promise((r) => setTimeout(r, 400));
  }
}

function start(args: string[], env: NodeJS.ProcessEnv): { child: ChildProcess; out: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  return { child, out: () => out, exited: new Promise((resolve) => child.on('close', resolve)) };
}

/** A merchant and a funded customer of the node, with its WebSocket. */
const shop = () => nodeMerchantAndCustomer(sb, { NANOPAY_NODE_WS_URL: sb.wsUrl });

beforeAll(async () => {
  sb = await sandbox({ log: (line) => void (line.startsWith('POST / ') && rpcCalls.push(line)) });
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

describe('status --watch over the node WebSocket', () => {
  it('loses no payment made while the WebSocket is down: the poll after the reconnect reports it paid', async () => {
    const { merchant, customer } = await shop();
    const request = await requestPayment(userSession(merchant), { amount: { xno: '0.7' } });
    // An hour between polls: only the WebSocket (or the poll after a reconnect) can see the payment.
    const watch = start(['status', request.transaction_id, '--watch', '--interval', '3600', '--timeout', '120', '--json'], merchant.env);
    await until(() => watch.out().includes('"is_paid":false') && sb.nodeSockets.subscribers() === 1, 'the watcher to subscribe');

    sb.nodeSockets.refuse(true);
    sb.nodeSockets.drop();
    await until(() => sb.nodeSockets.subscribers() === 0, 'the socket to go');
    await quiet();
    await payUri(userSession(customer), request.uri, {});
    await quiet();
    expect(watch.out()).not.toContain('"is_paid":true');

    sb.nodeSockets.refuse(false);
    expect(await watch.exited).toBe(0);
    const events = watch.out().trim().split('\n').map((line) => JSON.parse(line) as { event: string; is_paid?: boolean });
    expect(events.at(-1)).toMatchObject({ event: 'status', is_paid: true });
  });
  it('after the WebSocket is lost, polling finds the exact payment among wrong ones to the shared address, and reports none of them', async () => {
    const { merchant, customer } = await shop();
    const merchantSession = userSession(merchant);
    const a = await requestPayment(merchantSession, { amount: { xno: '0.7' } });
    // A's customer pays a few raw short, and someone else another amount: neither is B's.
    await send(userSession(customer), { to: a.receive_address, amount: { raw: (BigInt(a.amount_raw) - 3n).toString() } });
    await send(userSession(customer), { to: a.receive_address, amount: { xno: '0.8' } });
    const b = await requestPayment(merchantSession, { amount: { xno: '0.7' } });
    const watch = start(['status', b.transaction_id, '--watch', '--interval', '1', '--timeout', '60', '--json'], merchant.env);
    await until(() => watch.out().includes('"is_paid":false') && sb.nodeSockets.subscribers() === 1, 'the watcher to subscribe');

    // Broken, and not coming back: only polling can see the payment.
    sb.nodeSockets.refuse(true);
    sb.nodeSockets.drop();
    try {
      await until(() => sb.nodeSockets.subscribers() === 0, 'the socket to go');
      const paid = await payUri(userSession(customer), b.uri, {});
      expect(await watch.exited).toBe(0);
      const events = watch.out().trim().split('\n').map((line) => JSON.parse(line) as { event: string; status?: string; is_paid?: boolean; mismatch?: unknown; paid_by?: string[] });
      expect(events.filter((e) => e.mismatch !== undefined)).toEqual([]);
      expect(events.at(-1)).toMatchObject({ event: 'status', status: 'paid', is_paid: true, paid_by: [paid.hash] });
    } finally {
      sb.nodeSockets.refuse(false);
    }
  });
});

describe('receive --watch', () => {
  it('receives what waits at once, then each payment as it is confirmed; Ctrl-C ends it with 130', async () => {
    const { merchant, customer, merchantAddress } = await shop();
    // A request paid before the watch starts waits (its exact amount, with the request's offset): it is received first.
    const request = await requestPayment(userSession(merchant), { amount: { xno: '0.7' } });
    await payUri(userSession(customer), request.uri, {});
    const paidAmount = request.amount;
    const watch = start(['receive', '--watch', '--interval', '3600', '--json'], merchant.env);
    await until(() => sb.nodeSockets.subscribers() === 1 && watch.out().includes(`"amount":"${paidAmount}"`), 'the receiver to subscribe');
    await quiet();
    for (const amount of ['0.1', '0.2']) {
      await send(userSession(customer), { to: merchantAddress, amount: { xno: amount } });
      await until(() => watch.out().includes(`"amount":"${amount}"`), `the receive of ${amount}`);
    }
    watch.child.kill('SIGINT');
    expect(await watch.exited).toBe(130);
    const lines = watch.out().trim().split('\n').map((line) => JSON.parse(line) as { received?: { account: string; subtype: string; amount: string }[]; error?: { code: string } });
    expect(lines.flatMap((l) => l.received ?? []).map((r) => [r.account, r.subtype, r.amount])).toEqual([
      [merchantAddress, 'open', paidAmount],
      [merchantAddress, 'receive', '0.1'],
      [merchantAddress, 'receive', '0.2'],
    ]);
    expect(lines.at(-1)).toMatchObject({ error: { code: 'CANCELLED' } });
    expect(await balance(userSession(merchant))).toMatchObject({ pending_raw: '0', balance_raw: (xnoToRaw(paidAmount) + xnoToRaw('0.3')).toString() });
  });
});
