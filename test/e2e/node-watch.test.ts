import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { xnoToRaw } from '../../src/nano/index.js';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import { BIN, type CliUser } from '../helpers/cli.js';
import { nodeMerchantAndCustomer } from '../helpers/node-users.js';
import { sandbox } from '../helpers/sandbox.js';

/** Instant detection on the node backend: the WebSocket, its loss, and what is never lost with it. */
let sb: RunningSandbox;
const rpcCalls: string[] = [];
let merchant: CliUser;
let customer: CliUser;
let merchantAddress: string;
/** The exact amount of the request paid in the first test, still waiting to be received. */
let paidAmount: string;

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

function start(args: string[]): { child: ChildProcess; out: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [BIN, ...args], { env: merchant.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  return { child, out: () => out, exited: new Promise((resolve) => child.on('close', resolve)) };
}

beforeAll(async () => {
  sb = await sandbox({ log: (line) => void (line.startsWith('POST / ') && rpcCalls.push(line)) });
  ({ merchant, customer, merchantAddress } = await nodeMerchantAndCustomer(sb, { NANOPAY_NODE_WS_URL: sb.wsUrl }));
});

afterAll(async () => {
  await sb?.close();
});

describe('status --watch over the node WebSocket', () => {
  it('loses no payment made while the WebSocket is down: the poll after the reconnect reports it paid', async () => {
    const request = await merchant.json<{ transaction_id: string; uri: string; amount: string }>(['request', '0.7']);
    paidAmount = request.amount;
    // An hour between polls: only the WebSocket (or the poll after a reconnect) can see the payment.
    const watch = start(['status', request.transaction_id, '--watch', '--interval', '3600', '--timeout', '120', '--json']);
    await until(() => watch.out().includes('"is_paid":false') && sb.nodeSockets.subscribers() === 1, 'the watcher to subscribe');

    sb.nodeSockets.refuse(true);
    sb.nodeSockets.drop();
    await until(() => sb.nodeSockets.subscribers() === 0, 'the socket to go');
    await quiet();
    expect((await customer.json(['pay', request.uri, '--yes']))._code).toBe(0);
    await quiet();
    expect(watch.out()).not.toContain('"is_paid":true');

    sb.nodeSockets.refuse(false);
    expect(await watch.exited).toBe(0);
    const events = watch.out().trim().split('\n').map((line) => JSON.parse(line) as { event: string; is_paid?: boolean });
    expect(events.at(-1)).toMatchObject({ event: 'status', is_paid: true });
  });
});

describe('receive --watch', () => {
  it('receives what waits at once, then each payment as it is confirmed; Ctrl-C ends it with 130', async () => {
    // The request paid above still waits: it is received first.
    const watch = start(['receive', '--watch', '--interval', '3600', '--json']);
    await until(() => sb.nodeSockets.subscribers() === 1 && watch.out().includes(`"amount":"${paidAmount}"`), 'the receiver to subscribe');
    await quiet();
    for (const amount of ['0.1', '0.2']) {
      expect((await customer.json(['send', merchantAddress, amount, '--yes']))._code).toBe(0);
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
    const balance = await merchant.json<{ balance_raw: string; pending_raw: string }>(['balance']);
    expect(balance).toMatchObject({ pending_raw: '0', balance_raw: (xnoToRaw(paidAmount) + xnoToRaw('0.3')).toString() });
  });
});
