import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawToXno } from '../../../src/nano/index.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import type { ShopRequest } from '../../../src/store/shop.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { nodeMerchantAndCustomer } from '../../helpers/ledger/node-users.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { until } from '../../helpers/network/webhook-receiver.js';
import { startShopServe, type ShopServe } from '../../helpers/processes/shop-serve.js';

/**
 * checkout serve --fresh-addresses on the sandbox's node with its WebSocket, its rounds ten minutes apart:
 * what turns a request paid is the node's confirmation (a filter that follows the open requests, a paid
 * one leaving it), or, for a payment made while the WebSocket was down, the full round at the reconnect.
 */
let sb: RunningSandbox;
let shop: ShopServe;

beforeAll(async () => {
  sb = await sandbox();
  const { merchant } = await nodeMerchantAndCustomer(sb, { NANOPAY_NODE_WS_URL: sb.wsUrl });
  shop = await startShopServe(['--fresh-addresses', '--poll-interval', '600'], merchant.env);
});

afterAll(async () => {
  await shop?.stop();
  await sb?.close();
  await shutdownWorkers();
});

const made = (amount: string): Promise<ShopRequest> => shop.api<ShopRequest>('/api/v1/requests', { amount });
const status = async (id: string): Promise<string> => (await shop.api<ShopRequest>(`/api/v1/requests/${id}`)).status;
const pay = (request: ShopRequest): void => void sb.service.fund(request.receive_address, rawToXno(BigInt(request.amount_raw)));

describe('checkout serve watching its requests on the WebSocket', () => {
  it('follows the open requests, turns one paid on its confirmation, and stops following it', async () => {
    const requests = [await made('0.01'), await made('0.02'), await made('0.03')];
    const addresses = requests.map((r) => r.receive_address);
    await until(() => addresses.every((a) => sb.nodeSockets.followed().includes(a)), 'the filter to name every open request');
    pay(requests[1]!);
    await until(async () => (await status(requests[1]!.id)) === 'paid', 'the request paid');
    await until(() => !sb.nodeSockets.followed().includes(addresses[1]!), 'the paid request out of the filter');
    expect(sb.nodeSockets.followed().filter((a) => addresses.includes(a)).sort()).toEqual([addresses[0], addresses[2]].sort());
    expect(await status(requests[0]!.id)).toBe('waiting');
  });

  it('finds a payment made while the WebSocket was down at the reconnect', async () => {
    const request = await made('0.04');
    await until(() => sb.nodeSockets.followed().includes(request.receive_address), 'the request followed');
    sb.nodeSockets.refuse(true);
    sb.nodeSockets.drop();
    await until(() => shop.server.stderr().includes('closed'), 'the server to see the WebSocket lost');
    // No confirmation can reach it now: a full round (at the loss, or at the reconnect) must find it.
    pay(request);
    sb.nodeSockets.refuse(false);
    await until(async () => (await status(request.id)) === 'paid', 'the request paid');
    // Followed again, without it.
    await until(() => sb.nodeSockets.followed().length > 0 && !sb.nodeSockets.followed().includes(request.receive_address), 'the filter sent again, without it');
  });
});
