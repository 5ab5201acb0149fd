import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicKeyToAddress, xnoToRaw } from '../../../src/nano/index.js';
import { setRepresentative } from '../../../src/ops/account/representative.js';
import { send } from '../../../src/ops/spending/send.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { fundedUser, type BackendUser } from '../../helpers/ledger/backend-users.js';
import { ledger, sandbox } from '../../helpers/ledger/sandbox.js';

/** The sandbox's account_history answers in a node's shape (nano-node's json_handler): raw or not, head, offset, reverse. */
let sb: RunningSandbox;
let owner: BackendUser;
let genesis: string;
const payee = publicKeyToAddress(randomBytes(32));
const rep = publicKeyToAddress(randomBytes(32));

const rpc = async (body: Record<string, unknown>): Promise<Record<string, any>> =>
  (await (await fetch(sb.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json()) as Record<string, any>;

beforeAll(async () => {
  sb = await sandbox();
  owner = await fundedUser(sb, 'node', '3');
  await send(owner.session, { to: payee, amount: { xno: '1' } });
  await setRepresentative(owner.session, { representative: rep });
  genesis = (await ledger(sb.url)).blocks[0]?.account as string;
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

describe('account_history in the sandbox', () => {
  it('raw: every block with its signed fields and the node\'s summary, newest first', async () => {
    const answer = await rpc({ action: 'account_history', account: owner.address, count: '10', raw: true });
    expect(answer.account).toBe(owner.address);
    expect(answer.previous).toBeUndefined();
    expect(answer.history.map((h: Record<string, string>) => h.subtype)).toEqual(['change', 'send', 'receive']);
    const [change, sent, opened] = answer.history as Record<string, unknown>[];
    expect(change).toMatchObject({ type: 'state', representative: rep, link: '0'.repeat(64), balance: xnoToRaw('2').toString(), height: '3', confirmed: true });
    expect(change).not.toHaveProperty('amount');
    expect(sent).toMatchObject({ type: 'state', account: payee, amount: xnoToRaw('1').toString(), height: '2' });
    expect(opened).toMatchObject({ account: genesis, amount: xnoToRaw('3').toString(), previous: '0'.repeat(64), height: '1' });
    for (const h of answer.history) expect(Object.keys(h)).toEqual(expect.arrayContaining(['hash', 'local_timestamp', 'signature', 'work']));
  });

  it('not raw: type is send or receive, change blocks left out, no signed fields', async () => {
    const answer = await rpc({ action: 'account_history', account: owner.address, count: '10' });
    expect(answer.history.map((h: Record<string, string>) => h.type)).toEqual(['send', 'receive']);
    expect(answer.history[0]).not.toHaveProperty('signature');
  });

  it('count, head, offset and reverse page as a node does', async () => {
    const all = (await rpc({ action: 'account_history', account: owner.address, count: '10', raw: true })).history.map((h: Record<string, string>) => h.hash);
    const first = await rpc({ action: 'account_history', account: owner.address, count: '1', raw: true });
    expect(first.history.map((h: Record<string, string>) => h.hash)).toEqual([all[0]]);
    expect(first.previous).toBe(all[1]);
    const second = await rpc({ action: 'account_history', account: owner.address, count: '1', raw: true, head: first.previous });
    expect(second.history[0].hash).toBe(all[1]);
    const skipped = await rpc({ action: 'account_history', account: owner.address, count: '5', raw: true, head: all[0], offset: '2' });
    expect(skipped.history.map((h: Record<string, string>) => h.hash)).toEqual([all[2]]);
    const reversed = await rpc({ action: 'account_history', account: owner.address, count: '2', raw: true, reverse: true });
    expect(reversed.history.map((h: Record<string, string>) => h.hash)).toEqual([all[2], all[1]]);
    expect(reversed.next).toBe(all[0]);
  });

  it('refuses what a node refuses', async () => {
    expect(await rpc({ action: 'account_history', account: 'nano_bad', count: '1' })).toEqual({ error: 'Bad account number' });
    expect(await rpc({ action: 'account_history', account: owner.address })).toEqual({ error: 'Invalid count limit' });
    expect(await rpc({ action: 'account_history', head: 'AB'.repeat(32), count: '1' })).toEqual({ error: 'Block not found' });
    expect(await rpc({ action: 'account_history', account: payee, count: '1' })).toEqual({ account: payee, history: [] });
  });
});
