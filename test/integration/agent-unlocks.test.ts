import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import { KeyStore } from '../../src/wallet/keystore.js';
import { startInProcessAgent, type InProcessAgent, type InProcessAgentOptions } from '../helpers/network/agent.js';
import { addOtherUser, otherUserUnavailable, type OtherUser } from '../helpers/processes/other-user.js';
import { httpCall, type RawReply } from '../helpers/network/raw-http.js';
import { sandbox } from '../helpers/ledger/sandbox.js';

// The strict agent unlocks its key store (scrypt, 128 MiB and half a second at the real cost) on every request
// that needs a secret: only for callers it answers, and never more than two at once. The unlocks are counted where
// scrypt runs, KeyStore.open, watched (it still runs) from the moment the agent is up.

let sb: RunningSandbox;
const running: InProcessAgent[] = [];

/** KeyStore.open watched: how many calls, and the most under way at once. */
function watchUnlocks(): { calls: () => number; peak: () => number } {
  const open = KeyStore.open.bind(KeyStore);
  let calls = 0;
  let active = 0;
  let peak = 0;
  vi.spyOn(KeyStore, 'open').mockImplementation(async (path, password) => {
    calls++;
    peak = Math.max(peak, ++active);
    try {
      return await open(path, password);
    } finally {
      active--;
    }
  });
  return { calls: () => calls, peak: () => peak };
}

async function strictAgent(options: InProcessAgentOptions = {}): Promise<InProcessAgent> {
  const agent = await startInProcessAgent(sb.url, options);
  running.push(agent);
  return agent;
}

const balance = (url: string, headers: Record<string, string> = {}): Promise<RawReply> => httpCall(url, 'GET', '/wallet/balance', { headers });

beforeAll(async () => {
  sb = await sandbox();
});

afterEach(async () => {
  vi.restoreAllMocks();
  for (const agent of running.splice(0)) await agent.close();
});

afterAll(async () => {
  await sb?.close();
});

describe('the strict agent\'s unlocks', () => {
  it('none for callers without the token: they are refused before anything unlocks', async () => {
    const token = 'the-agent-token-of-this-test';
    const agent = await strictAgent({ token });
    const unlocks = watchUnlocks();
    const replies = await Promise.all(Array.from({ length: 40 }, (_, i) => balance(agent.url, i % 2 === 0 ? {} : { authorization: 'Bearer a-wrong-token-of-some-length' })));
    expect(new Set(replies.map((r) => `${r.status} ${r.body.error?.error}`))).toEqual(new Set(['401 UNAUTHORIZED']));
    expect(unlocks.calls()).toBe(0);
    expect((await balance(agent.url, { authorization: `Bearer ${token}` })).status).toBe(200);
    expect(unlocks.calls()).toBe(1);
  });

  it('at most two at once: of many requests at the same moment, the others wait in a short line or are refused at once with AGENT_BUSY (503)', async () => {
    const agent = await strictAgent();
    const unlocks = watchUnlocks();
    const replies = await Promise.all(Array.from({ length: 30 }, () => balance(agent.url)));
    for (const reply of replies) {
      if (reply.status === 200) continue;
      expect([reply.status, reply.body.error?.error, reply.headers['retry-after']]).toEqual([503, 'AGENT_BUSY', '1']);
    }
    expect(unlocks.peak()).toBeLessThanOrEqual(2);
    // Each answered request unlocked once; a refused one never started scrypt.
    expect(unlocks.calls()).toBe(replies.filter((r) => r.status === 200).length);
    expect(((await httpCall(agent.url, 'GET', '/status')).body.data as Record<string, unknown>).unlocked_sessions).toBe(0);
  });
});

describe.skipIf(otherUserUnavailable !== undefined)('the strict agent and another user of this machine', () => {
  let other: OtherUser;
  beforeAll(async () => {
    other = await addOtherUser();
  });
  afterAll(async () => {
    await other?.remove();
  });

  it('refuses their 40 requests without one unlock, and answers its own user', async () => {
    const agent = await strictAgent({ onlyUser: { uid: process.geteuid?.() ?? -1, socketTables: '/proc/net' } });
    const unlocks = watchUnlocks();
    const replies = await other.fetch(agent.url, Array.from({ length: 40 }, () => ({ path: '/wallet/balance' })));
    expect(new Set(replies.map((r) => `${r.status} ${r.body.error?.error}`))).toEqual(new Set(['403 FORBIDDEN']));
    expect(unlocks.calls()).toBe(0);
    expect((await balance(agent.url)).status).toBe(200);
    expect(unlocks.calls()).toBe(1);
  });
});
