import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RAW_PER_XNO, deriveAccount, generateSeed } from '../../../src/nano/index.js';
import { randomBytes } from 'node:crypto';
import { WebSocketServer } from 'ws';
import { paymentStatus, requestPayment, watchPayment } from '../../../src/ops/requests/payments.js';
import { receive } from '../../../src/ops/account/receive.js';
import { send } from '../../../src/ops/spending/send.js';
import { Session } from '../../../src/ops/session.js';
import { createWallet } from '../../../src/ops/profile/wallet.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { failure } from '../../helpers/processes/failure.js';
import { startFaultyProxy, type Fault, type FaultyProxy } from '../../helpers/network/faulty-proxy.js';
import { fund, sandbox } from '../../helpers/ledger/sandbox.js';
import { tempDir } from '../../helpers/processes/temp.js';
import { stateBlockOf } from '../../helpers/ledger/chain.js';

/**
 * A merchant on the node backend behind a node that lies: whatever it lists as
 * receivable and whatever it says a block is worth, a request is paid only by a
 * block nanopay fetched, hashed, verified and saw confirmed, and receive signs
 * only the amount the blocks themselves prove.
 */
let sb: RunningSandbox;
let proxy: FaultyProxy;
type Answer = Record<string, any>;
/** What the node behind the proxy says instead of its true answer to an RPC call (`body`). */
let lie: (answer: Answer, body: Answer) => Answer = (answer) => answer;
const honest = (answer: Answer): Answer => answer;
let merchant: Session;
let merchantAddress: string;
let customer: Session;
const XNO = RAW_PER_XNO;
const FAKE = 'AB'.repeat(32);

async function nodeSession(url: string): Promise<Session> {
  const configDir = await tempDir('nanopay-node-lies-');
  return new Session({ password: async () => 'node lies password', configDir, env: { NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: url } });
}

/** Rewrites the node's answers to one action, passing everything else on. */
function onAction(action: string, change: (answer: Answer, body: Answer) => Answer): void {
  lie = (answer, body) => (body.action === action ? change(answer, body) : answer);
}

const recordOf = async (id: string) => (await merchant.dataStore()).requests.get(id);

beforeAll(async () => {
  sb = await sandbox();
  proxy = await startFaultyProxy(sb.url, (): Fault => ({ node: (answer, body) => lie(answer, body) }));
  merchant = await nodeSession(proxy.url);
  merchantAddress = (await createWallet(merchant)).address;
  customer = await nodeSession(sb.url);
  const customerAddress = (await createWallet(customer)).address;
  await fund(sb.url, customerAddress, '5');
  await receive(customer);
});

afterEach(() => {
  lie = honest;
});

afterAll(async () => {
  await proxy?.close();
  await sb?.close();
  await shutdownWorkers();
});

describe('a request is paid only by a block nanopay proved', () => {
  it('a fabricated hash listed with the exact amount does not pay it, then or later; the real payment does', async () => {
    const request = await requestPayment(merchant, { amount: { xno: '0.2' } });
    onAction('receivable', (answer) => ({ blocks: { ...(answer.blocks || {}), [FAKE]: { amount: request.amount_raw, source: merchantAddress } } }));
    const error = await failure(paymentStatus(merchant, request.transaction_id));
    expect(error).toMatchObject({ code: 'SERVICE_INCONSISTENT', exitCode: 5 });
    expect(error.message).toMatch(/The node answered inconsistently: the send (AB)+ is not a known block/);
    expect((await recordOf(request.transaction_id))?.paidBy).toBeUndefined();
    lie = honest;
    expect((await paymentStatus(merchant, request.transaction_id)).is_paid).toBe(false);
    const paid = await send(customer, { to: merchantAddress, amount: { raw: BigInt(request.amount_raw) } });
    expect(await paymentStatus(merchant, request.transaction_id)).toMatchObject({ is_paid: true, message: expect.stringContaining(paid.hash as string) });
  });

  it('a real block of another amount that the node says is the exact amount does not pay it', async () => {
    const request = await requestPayment(merchant, { amount: { xno: '0.3' } });
    const small = await send(customer, { to: merchantAddress, amount: { xno: '0.001' } });
    onAction('receivable', (answer) => ({ blocks: { ...answer.blocks, [small.hash as string]: { amount: request.amount_raw, source: 'x' } } }));
    const status = await paymentStatus(merchant, request.transaction_id);
    expect(status.is_paid).toBe(false);
    expect((await recordOf(request.transaction_id))?.paidBy).toBeUndefined();
  });

  it('a block the node says is not confirmed does not pay it until it is', async () => {
    const request = await requestPayment(merchant, { amount: { xno: '0.4' } });
    const paid = await send(customer, { to: merchantAddress, amount: { raw: BigInt(request.amount_raw) } });
    onAction('block_info', (answer, body) => (body.hash === paid.hash ? { ...answer, confirmed: 'false' } : answer));
    expect((await paymentStatus(merchant, request.transaction_id)).is_paid).toBe(false);
    lie = honest;
    expect((await paymentStatus(merchant, request.transaction_id)).is_paid).toBe(true);
  });

  it('altered contents (of the send, or of the block before it) and a send to another address are refused', async () => {
    const request = await requestPayment(merchant, { amount: { xno: '0.5' } });
    const paid = await send(customer, { to: merchantAddress, amount: { raw: BigInt(request.amount_raw) } });
    const sendBlock = (await (await nodeSession(sb.url)).nodeClient()).blockInfo(paid.hash as string);
    const previous = stateBlockOf(await sendBlock).previous.toUpperCase();
    const other = deriveAccount({ seed: generateSeed(), index: 0 }).address;
    const otherPays = await send(customer, { to: other, amount: { raw: 7n } });
    const lies: [string, (a: Answer, b: Answer) => Answer][] = [
      ['block_info', (a, b) => (b.hash === paid.hash ? { ...a, contents: { ...a.contents, balance: '1' } } : a)],
      ['block_info', (a, b) => (b.hash === previous ? { ...a, contents: { ...a.contents, balance: (BigInt(a.contents.balance) + XNO).toString() } } : a)],
      ['receivable', (a) => ({ blocks: { ...a.blocks, [otherPays.hash as string]: { amount: '7', source: 'x' } } })],
    ];
    for (const [action, change] of lies) {
      onAction(action, change);
      expect((await failure(paymentStatus(merchant, request.transaction_id))).code).toBe('SERVICE_INCONSISTENT');
      expect((await recordOf(request.transaction_id))?.paidBy).toBeUndefined();
    }
  });

  it('a fresh address the node says holds the amount is not paid: its head block is checked', async () => {
    const request = await requestPayment(merchant, { amount: { xno: '0.6' }, freshAddress: true });
    onAction('account_info', (answer, body) =>
      body.account === request.receive_address ? { frontier: FAKE, balance: request.amount_raw, representative: merchantAddress, block_count: '1' } : answer,
    );
    expect((await failure(paymentStatus(merchant, request.transaction_id))).code).toBe('SERVICE_INCONSISTENT');
    expect((await recordOf(request.transaction_id))?.paidBy).toBeUndefined();
  });
});

describe('receive signs only what the blocks prove', () => {
  it('a node claiming 50 XNO for a 0.001 XNO send: the open block receives 0.001 XNO, as the ledger accepts', async () => {
    const payee = await nodeSession(proxy.url);
    const payeeAddress = (await createWallet(payee)).address;
    const small = await send(customer, { to: payeeAddress, amount: { xno: '0.001' } });
    const fifty = (50n * XNO).toString();
    lie = (answer, body) => {
      if (body.action === 'receivable') return { blocks: { [small.hash as string]: { amount: fifty, source: 'x' } } };
      return body.action === 'block_info' && body.hash === small.hash ? { ...answer, amount: fifty } : answer;
    };
    const received = await receive(payee);
    expect(received.received).toHaveLength(1);
    expect(received.total_raw).toBe((XNO / 1000n).toString());
    expect(sb.service.ledger.account(payeeAddress)?.balance).toBe(XNO / 1000n);
  });

  it('an unconfirmed send is left for later, and received once confirmed', async () => {
    const payee = await nodeSession(proxy.url);
    const payeeAddress = (await createWallet(payee)).address;
    const sent = await send(customer, { to: payeeAddress, amount: { xno: '0.002' } });
    onAction('block_info', (answer, body) => (body.hash === sent.hash ? { ...answer, confirmed: 'false' } : answer));
    expect((await receive(payee)).received).toEqual([]);
    lie = honest;
    expect((await receive(payee)).total_raw).toBe(((2n * XNO) / 1000n).toString());
  });
});

describe('WebSocket confirmations are a hint, never a fact', () => {
  it('a flood of forged confirmations makes status --watch read a few times a second, and none of them pays', async () => {
    const request = await requestPayment(merchant, { amount: { xno: '0.7' } });
    // A WebSocket that acknowledges the subscription and then floods confirmations of sends to the address.
    const ws = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    let sent = 0;
    ws.on('connection', (socket) => {
      // The watcher goes away mid-flood: its connection may be reset under a send.
      socket.on('error', () => undefined);
      socket.on('message', () => {
        socket.send(JSON.stringify({ ack: 'subscribe' }));
        const flood = setInterval(() => {
          for (let i = 0; i < 20; i++, sent++) {
            const block = { account: merchantAddress, subtype: 'send', link_as_account: request.receive_address, amount: request.amount_raw };
            socket.send(JSON.stringify({ topic: 'confirmation', message: { account: merchantAddress, amount: request.amount_raw, hash: randomBytes(32).toString('hex').toUpperCase(), block } }));
          }
        }, 2);
        socket.on('close', () => clearInterval(flood));
      });
    });
    await new Promise((resolve) => ws.once('listening', resolve));
    const { port } = ws.address() as { port: number };
    const watching = new Session({ password: async () => 'node lies password', configDir: merchant.dir, env: { NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: proxy.url, NANOPAY_NODE_WS_URL: `ws://127.0.0.1:${port}` } });
    const stop = new AbortController();
    const seenBefore = proxy.seen.length;
    const watched = watchPayment(watching, request.transaction_id, { intervalMs: 1000, signal: stop.signal }).catch((e: unknown) => e);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    stop.abort();
    expect(await watched).toMatchObject({ code: 'CANCELLED' });
    const reads = proxy.seen.length - seenBefore;
    await new Promise<void>((resolve) => ws.close(() => resolve()));
    expect(sent).toBeGreaterThan(1000);
    // The first look, then at most a burst of two reads and one per MIN_WAKE_GAP_MS (250 ms) over 2 s, each a receivable
    // list (the request's address has no blocks).
    expect(reads).toBeLessThanOrEqual(10);
    expect((await recordOf(request.transaction_id))?.paidBy).toBeUndefined();
  });
});
