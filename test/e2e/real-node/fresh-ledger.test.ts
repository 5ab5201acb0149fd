import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shutdownWorkers } from '../../../src/work/index.js';
import { startFaultyProxy, type FaultyProxy } from '../../helpers/network/faulty-proxy.js';
import { DEV_GENESIS, nodeUser, realNodeUnavailable, startRealNode, type RealNode } from '../../helpers/ledger/real-node.js';

/**
 * A fresh dev ledger of the reference nano_node, as any new dev or beta node starts: the genesis account's
 * first block is a legacy `open` block, its account is epoch 0 (it can still make legacy blocks), and no epoch
 * upgrade has happened (accounts are epoch 1 at most, whose blocks need the epoch-1 work threshold for every
 * subtype). nanopay proves what it receives from legacy chains by their own rules.
 */
const skip = realNodeUnavailable();
const XNO = 10n ** 30n;
const received = (r: { received: { subtype: string; amount_raw: string }[] }) => r.received.map((b) => [b.subtype, b.amount_raw]);

let node: RealNode;
const proxies: FaultyProxy[] = [];

describe.skipIf(skip !== undefined)('a fresh ledger of the real node', () => {
  beforeAll(async () => {
    node = await startRealNode();
  });

  afterAll(async () => {
    for (const proxy of proxies) await proxy.close();
    await node?.stop();
    await shutdownWorkers();
  });

  // First: legacy blocks can follow only legacy blocks, and the node's own sends (fund) are state blocks.
  it('receives legacy sends whose amounts rest on legacy open, change and receive blocks, and one it cannot prove is reported while the others are received', async () => {
    const { user, address } = await nodeUser(node);
    // A legacy send after whatever the genesis chain holds now; a change; a send after it.
    await node.genesisLegacy({ type: 'send', destination: address, amount: 3n * XNO });
    // To itself: the genesis holds all the voting weight, and a lone node confirms only with it.
    await node.genesisLegacy({ type: 'change', representative: DEV_GENESIS.address });
    await node.genesisLegacy({ type: 'send', destination: address, amount: XNO / 4n });
    // In the node's order: the first received opens the account.
    const both = received(await user.json(['receive']));
    expect(both.map(([subtype]) => subtype)).toEqual(['open', 'receive']);
    expect(both.map(([, amount]) => amount).sort()).toEqual([(XNO / 4n).toString(), (3n * XNO).toString()].sort());

    // The genesis account receives a state send with a legacy receive block, then sends after it. The send is
    // below the node wallet's receive_minimum (10^24 raw), or the node would receive it first with a state block.
    const back = await user.json<{ hash: string }>(['send', DEV_GENESIS.address, '0.0000005', '--yes']);
    await node.waitConfirmed(back.hash);
    await node.genesisLegacy({ type: 'receive', source: back.hash });
    const afterReceive = await node.genesisLegacy({ type: 'send', destination: address, amount: XNO / 8n });
    const plain = await node.fund(address, XNO / 16n);

    // Through a node that lies about one of them (its balance raised by one raw: it no longer hashes), the other,
    // whose amount rests on the legacy receive's source, is received.
    const lying = await startFaultyProxy(node.rpcUrl, () => ({
      node: (answer, body) => (body.action === 'block_info' && body.hash === plain ? { ...answer, contents: { ...answer.contents, balance: (BigInt(answer.contents.balance) + 1n).toString() } } : answer),
    }));
    proxies.push(lying);
    const partly = await user.json<{ received: { source: string; amount_raw: string }[]; not_received: { hash: string; code: string }[] }>(['receive'], { env: { NANOPAY_NODE_URL: lying.url } });
    expect(partly._code).toBe(0);
    expect(partly.received.map((r) => [r.source, r.amount_raw])).toEqual([[afterReceive, (XNO / 8n).toString()]]);
    expect(partly.not_received.map((r) => [r.hash, r.code])).toEqual([[plain, 'SERVICE_INCONSISTENT']]);

    // From the honest node it is received.
    const rest = await user.json<{ received: { source: string; amount_raw: string }[]; not_received?: unknown }>(['receive']);
    expect(rest.received.map((r) => [r.source, r.amount_raw])).toEqual([[plain, (XNO / 16n).toString()]]);
    expect(rest.not_received).toBeUndefined();
    const info = await node.rpc('account_info', { account: address });
    expect(info.balance).toBe((3n * XNO + XNO / 4n - 5n * 10n ** 23n + XNO / 8n + XNO / 16n).toString());
  });

  it('receives a payment from the genesis account (after a legacy open block), opens at epoch-1 work, receives and sends', async () => {
    const { user, address } = await nodeUser(node);
    await node.fund(address, 2n * XNO);
    const opened = await user.json<{ received: { subtype: string; amount_raw: string }[] }>(['receive']);
    expect(opened._code).toBe(0);
    expect(received(opened)).toEqual([['open', (2n * XNO).toString()]]);

    await node.fund(address, XNO);
    expect(received(await user.json(['receive']))).toEqual([['receive', XNO.toString()]]);

    const sent = await user.json<{ hash: string }>(['send', DEV_GENESIS.address, '0.5', '--yes']);
    expect(sent._code).toBe(0);
    await node.waitConfirmed(sent.hash);
    const info = await node.rpc('account_info', { account: address });
    expect([info.balance, info.block_count]).toEqual([((25n * XNO) / 10n).toString(), '3']);
  });
});
