import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shutdownWorkers } from '../../../src/work/index.js';
import { DEV_GENESIS, nodeUser, realNodeUnavailable, startRealNode, type RealNode } from '../../helpers/ledger/real-node.js';

/**
 * A fresh dev ledger of the reference nano_node, as any new dev or beta node starts: the genesis account's
 * first block is a legacy `open` block, and no epoch upgrade has happened (accounts are epoch 1, whose
 * blocks need the epoch-1 work threshold for every subtype).
 */
const skip = realNodeUnavailable();
const XNO = 10n ** 30n;

let node: RealNode;

describe.skipIf(skip !== undefined)('a fresh ledger of the real node', () => {
  beforeAll(async () => {
    node = await startRealNode();
  });

  afterAll(async () => {
    await node?.stop();
    await shutdownWorkers();
  });

  it('receives a payment from the genesis account (after a legacy open block), opens at epoch-1 work, receives and sends', async () => {
    const { user, address } = await nodeUser(node);
    await node.fund(address, 2n * XNO);
    const opened = await user.json<{ received: { subtype: string; amount_raw: string }[] }>(['receive']);
    expect(opened._code).toBe(0);
    expect(opened.received.map((r) => [r.subtype, r.amount_raw])).toEqual([['open', (2n * XNO).toString()]]);

    await node.fund(address, XNO);
    const received = await user.json<{ received: { subtype: string }[] }>(['receive']);
    expect(received.received.map((r) => r.subtype)).toEqual(['receive']);

    const sent = await user.json<{ hash: string }>(['send', DEV_GENESIS.address, '0.5', '--yes']);
    expect(sent._code).toBe(0);
    await node.waitConfirmed(sent.hash);
    const info = await node.rpc('account_info', { account: address });
    expect(info.balance).toBe((25n * XNO / 10n).toString());
    expect(info.block_count).toBe('3');
  });
});
