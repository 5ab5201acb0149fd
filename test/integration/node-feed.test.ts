import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfirmationFeed, type Confirmation } from '../../src/api/node-ws.js';
import { publicKeyToAddress, rawToXno } from '../../src/nano/index.js';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import { sandbox } from '../helpers/ledger/sandbox.js';
import { until } from '../helpers/network/webhook-receiver.js';

/**
 * The node's confirmation feed with a shop's filter (the sandbox's WebSocket, which keeps filters as the
 * reference node does): the filter goes once per connection, in messages of 5,000 accounts, and the feed
 * says it is connected only once the node has all of it; then only changes go.
 */
let sb: RunningSandbox;

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  await sb?.close();
});

describe('ConfirmationFeed', () => {
  it('sends 12,000 accounts in three messages, is connected once the node has them all, then sends only the changes', async () => {
    const accounts = Array.from({ length: 12_000 }, () => publicKeyToAddress(randomBytes(32)));
    const told: Confirmation[] = [];
    let connected = 0;
    let followedAtConnect = 0;
    const feed = new ConfirmationFeed(sb.wsUrl, accounts, {
      onConfirmation: (c) => told.push(c),
      onConnected: () => {
        connected++;
        followedAtConnect = sb.nodeSockets.followed().length;
      },
    });
    try {
      await until(() => connected === 1, 'the feed connected');
      expect(followedAtConnect).toBe(12_000);
      const added = publicKeyToAddress(randomBytes(32));
      feed.update([added, accounts[0]!], [accounts[1]!, accounts[2]!]);
      await until(() => sb.nodeSockets.followed().includes(added), 'the account added');
      expect(sb.nodeSockets.followed()).toHaveLength(11_999);
      expect(sb.nodeSockets.followed()).not.toContain(accounts[1]);
      sb.service.fund(added, rawToXno(1n));
      sb.service.fund(accounts[1]!, rawToXno(1n));
      sb.service.fund(accounts[3]!, rawToXno(1n));
      await until(() => told.length === 2, 'the two followed payments');
      expect(told.map((c) => c.linkAsAccount)).toEqual([added, accounts[3]]);

      // A new connection gets the whole filter as it is now.
      sb.nodeSockets.drop();
      await until(() => connected === 2, 'the feed connected again');
      expect(followedAtConnect).toBe(11_999);
    } finally {
      feed.close();
    }
  });
});
