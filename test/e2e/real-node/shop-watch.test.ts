import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ShopRequest } from '../../../src/store/shop.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { batchAnswers, filterAnswers, NODE_BATCH_ANSWERS, NODE_FILTER_ANSWERS } from '../../helpers/ledger/node-shapes.js';
import { DEV_GENESIS, nodeUser, realNodeUnavailable, startRealNode, type RealNode } from '../../helpers/ledger/real-node.js';
import { openFreshRequests } from '../../helpers/ledger/shop-requests.js';
import { startFaultyProxy, type FaultyProxy } from '../../helpers/network/faulty-proxy.js';
import { until } from '../../helpers/network/webhook-receiver.js';
import { startWsProxy, type WsProxy } from '../../helpers/network/ws-proxy.js';
import { startShopServe, type ShopServe } from '../../helpers/processes/shop-serve.js';

/**
 * The shop watching its requests on the reference nano_node: the batch actions and the WebSocket filter
 * answer as the sandbox emulates them, and `checkout serve --fresh-addresses` with hundreds of open
 * requests, its RPC calls counted by a proxy and its WebSocket behind one the test can cut, reads none of
 * them at rest, sees a payment from its confirmation, drops what closes from the filter, and finds a
 * payment made while the WebSocket is down.
 */
const skip = realNodeUnavailable();
const OPEN = 300;
const BOUND = OPEN / 500 + 10;

type Call = { action?: string; account?: string; accounts?: string[] };
let node: RealNode;
let rpc: FaultyProxy;
let ws: WsProxy;
let shop: ShopServe;
const calls: Call[] = [];

/** The calls that name one account: status reads of a request (and the requests being made). */
const reads = (made: Call[]): Call[] => made.filter((c) => c.account !== undefined);
/** The filter changes the server sent that remove `address`. */
const removed = (address: string): boolean => ws.sent.some((m) => ((m.options as { accounts_del?: string[] } | undefined)?.accounts_del ?? []).includes(address));
const status = async (id: string): Promise<string> => (await shop.api<ShopRequest>(`/api/v1/requests/${id}`)).status;

describe.skipIf(skip !== undefined)('the shop watching its open requests on the real node', () => {
  beforeAll(async () => {
    node = await startRealNode({ upgraded: true });
    rpc = await startFaultyProxy(node.rpcUrl, (_method, _path, body) => (calls.push(body), 'pass'));
    ws = await startWsProxy(node.wsUrl);
    const { user, session } = await nodeUser(node, { NANOPAY_NODE_URL: rpc.url, NANOPAY_NODE_WS_URL: ws.url });
    await openFreshRequests(await session.dataStore(), OPEN);
    shop = await startShopServe(['--fresh-addresses', '--poll-interval', '1'], user.env);
  });

  afterAll(async () => {
    await shop?.stop();
    await ws?.close();
    await rpc?.close();
    await node?.stop();
    await shutdownWorkers();
  });

  it('answers the batch actions and keeps the confirmation filter as recorded for the sandbox', async () => {
    const real = { rpcUrl: node.rpcUrl, wsUrl: node.wsUrl, funder: DEV_GENESIS.address, fund: (address: string, raw: bigint) => node.fund(address, raw) };
    expect(await batchAnswers(real)).toEqual(NODE_BATCH_ANSWERS);
    expect(await filterAnswers(real)).toEqual(NODE_FILTER_ANSWERS);
  });

  it('sends the filter once, then a paid request out of it, paid from its confirmation', async () => {
    await until(() => ws.sent.some((m) => m.action === 'subscribe'), 'the subscription');
    const request = await shop.api<ShopRequest>('/api/v1/requests', { amount: '0.001' });
    await until(() => ws.sent.some((m) => ((m.options as { accounts_add?: string[] }).accounts_add ?? []).includes(request.receive_address)), 'its address added');
    // One subscribe with every open address, never the whole list again.
    expect(ws.sent.filter((m) => m.action === 'subscribe')).toHaveLength(1);
    expect((ws.sent.find((m) => m.action === 'subscribe')?.options as { accounts: string[] }).accounts).toHaveLength(OPEN);
    await node.fund(request.receive_address, BigInt(request.amount_raw));
    await until(async () => (await status(request.id)) === 'paid', 'the request paid');
    await until(() => removed(request.receive_address), 'the paid request out of the filter');
  });

  it('expires a request without reading it, and drops it from the filter', async () => {
    const request = await shop.api<ShopRequest>('/api/v1/requests', { amount: '0.001', expires_in: 1 });
    const from = calls.length;
    await until(async () => (await status(request.id)) === 'expired', 'the request expired');
    await until(() => removed(request.receive_address), 'the expired request out of the filter');
    expect(reads(calls.slice(from)).filter((c) => c.account === request.receive_address)).toEqual([]);
  });

  it(`with the WebSocket down, reconciles every poll in at most ${BOUND} calls a round, reading nothing at rest; a payment made meanwhile is found`, async () => {
    ws.refuse(true);
    ws.drop();
    await until(() => shop.server.stderr().includes('closed'), 'the server to see the WebSocket lost');
    const rounds = (made: Call[]): number => made.filter((c) => c.action === 'accounts_frontiers').length;
    let from = calls.length;
    await until(() => rounds(calls.slice(from)) >= 3, 'three rounds');
    const atRest = calls.slice(from);
    expect(reads(atRest)).toEqual([]);
    expect(atRest.length / rounds(atRest)).toBeLessThanOrEqual(2);

    const request = await shop.api<ShopRequest>('/api/v1/requests', { amount: '0.002' });
    from = calls.length;
    await node.fund(request.receive_address, BigInt(request.amount_raw));
    await until(async () => (await status(request.id)) === 'paid', 'the request paid by a round');
    const paying = calls.slice(from);
    // Each round: its batch calls and the reads of what moved, within the bound.
    const perRound = paying.reduce<number[]>((counts, c) => (c.action === 'accounts_frontiers' ? [...counts, 1] : [...counts.slice(0, -1), (counts.at(-1) ?? 0) + 1]), []);
    expect(Math.max(...perRound)).toBeLessThanOrEqual(BOUND);
    expect(new Set(reads(paying).map((c) => c.account))).toEqual(new Set([request.receive_address]));
    ws.refuse(false);
  });
});
