import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawToXno } from '../../../src/nano/index.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { batchAnswers, filterAnswers, NODE_BATCH_ANSWERS, NODE_FILTER_ANSWERS, type NodeUnderTest } from '../../helpers/ledger/node-shapes.js';
import { ledger, sandbox } from '../../helpers/ledger/sandbox.js';

/**
 * The sandbox's node side answers the batch actions (accounts_receivable, accounts_balances,
 * accounts_frontiers) and keeps a WebSocket filter with `update` as the reference nano_node does: the
 * same calls give what the real node gave (test/e2e/real-node/shop-watch.test.ts checks it still does).
 */
let sb: RunningSandbox;
let node: NodeUnderTest;

beforeAll(async () => {
  sb = await sandbox();
  const funder = (await ledger(sb.url)).blocks[0]?.account as string;
  node = { rpcUrl: sb.url, wsUrl: sb.wsUrl, funder, fund: async (address, raw) => sb.service.fund(address, rawToXno(raw)).hash as string };
});

afterAll(async () => {
  await sb?.close();
});

describe("the sandbox's node side, as the reference node", () => {
  it('answers accounts_receivable, accounts_balances and accounts_frontiers in its shapes', async () => {
    expect(await batchAnswers(node)).toEqual(NODE_BATCH_ANSWERS);
  });

  it('keeps the confirmation filter with update (accounts_add, accounts_del), acknowledging what a node acknowledges', async () => {
    expect(await filterAnswers(node)).toEqual(NODE_FILTER_ANSWERS);
  });

  it('takes a batch of 2,000 accounts (a body over the service routes\' 64 KiB)', async () => {
    const accounts = Array.from({ length: 2000 }, () => node.funder);
    const response = await fetch(sb.url, { method: 'POST', body: JSON.stringify({ action: 'accounts_frontiers', accounts }) });
    expect(Object.keys(((await response.json()) as { frontiers: Record<string, string> }).frontiers)).toEqual([node.funder]);
  });
});
