import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  MAX_RAW,
  ZERO_HASH,
  buildChangeBlock,
  buildReceiveBlock,
  buildSendBlock,
  hashBlock,
  signBlock,
  workRoot,
  type Account,
  type StateBlock,
} from '../../../src/nano/index.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { DEV_THRESHOLDS, shutdownWorkers, validateWork } from '../../../src/work/index.js';
import { SandboxClient, newAccount, sandboxWithClient } from '../../helpers/ledger/chain.js';

const XNO = 10n ** 30n;
let sb: RunningSandbox;
let client: SandboxClient;

beforeAll(async () => {
  ({ sb, client } = await sandboxWithClient());
});

afterAll(async () => {
  await sb.close();
  await shutdownWorkers();
});

/** A new account with one pending send of `xno` from the faucet. */
async function withPending(xno = 1n): Promise<{ account: Account; source: string }> {
  const account = newAccount();
  return { account, source: await client.fund(account.address, xno.toString()) };
}

/** A new account opened with `xno`. */
async function opened(xno = 1n): Promise<Account> {
  const { account } = await withPending(xno);
  await client.receiveAll(account);
  return account;
}

async function openBlock(account: Account, source: string, amount: bigint): Promise<StateBlock> {
  return client.complete(buildReceiveBlock(await client.head(account), { sourceHash: source, amount }), account, 'receive');
}

async function expectRejected(block: unknown, code: string, subtype?: string): Promise<void> {
  const reply = await client.publish(block, subtype);
  expect(reply.error?.error).toBe(code);
  expect(reply.success).toBe(false);
  expect(reply.data).toBeNull();
  expect(reply.error?.message.length).toBeGreaterThan(10);
  expect(reply.status).toBeGreaterThanOrEqual(400);
  expect(reply.status).toBeLessThan(500);
}

describe('a chain between two accounts, signed by the core', () => {
  it('open -> receive -> send -> open -> send -> receive, balances exact to the raw', async () => {
    const alice = newAccount();
    const bob = newAccount();
    await client.fund(alice.address, '2');
    await client.fund(alice.address, '1.000000000000000000000000000001');
    const [openHash, receiveHash] = await client.receiveAll(alice);
    expect((await client.call('GET', `/block/info/${openHash}`)).data.subtype).toBe('open');
    expect((await client.call('GET', `/block/info/${receiveHash}`)).data.subtype).toBe('receive');

    const toBob = await client.send(alice, bob.address, XNO + 7n);
    expect(await client.receiveAll(bob)).toHaveLength(1);
    await client.send(bob, alice.address, 7n);
    const pendingAlice = await client.call('GET', `/wallet/balance/${alice.address}`);
    expect(pendingAlice.data).toMatchObject({ balance_raw: (2n * XNO - 7n + 1n).toString(), pending_raw: '7', pending: '7' });
    expect(await client.receiveAll(alice)).toHaveLength(1);

    const a = await client.call('GET', `/wallet/balance/${alice.address}`);
    const b = await client.call('GET', `/wallet/balance/${bob.address}`);
    expect(a.data).toEqual({ account: alice.address, balance: (2n * XNO + 1n).toString(), balance_raw: (2n * XNO + 1n).toString(), pending: '0', pending_raw: '0' });
    expect(b.data).toMatchObject({ balance_raw: XNO.toString(), pending_raw: '0' });

    const info = await client.call('POST', '/account/info', { address: alice.address });
    expect(info.data).toMatchObject({ block_count: '4', balance: (2n * XNO + 1n).toString(), difficulty_send: DEV_THRESHOLDS.send, difficulty_receive: DEV_THRESHOLDS.receive });
    const sent = await client.call('GET', `/block/info/${toBob}`);
    expect(sent.data).toMatchObject({ block_account: alice.address, amount: (XNO + 7n).toString(), subtype: 'send', confirmed: 'true', height: '3' });
    expect(sent.data.successor).toMatch(/^[0-9A-F]{64}$/);
    expect(sent.data.successor).not.toBe(ZERO_HASH);
    expect(sent.data.contents).toMatchObject({ type: 'state', account: alice.address, link_as_account: bob.address });
    expect(sent.data.contents.signature).toMatch(/^[0-9A-F]{128}$/);
    expect((await client.call('POST', '/block/info', { hash: toBob.toLowerCase() })).data).toEqual(sent.data);
  });

  it('a change block keeps the balance and moves the representative', async () => {
    const dave = await opened();
    const change = await client.complete(buildChangeBlock(await client.head(dave), { representative: dave.address }), dave, 'send');
    const reply = await client.publish(JSON.stringify(change), 'change');
    expect(reply.success).toBe(true);
    expect((await client.call('GET', `/account/info/${dave.address}`)).data).toMatchObject({ representative: dave.address, balance: XNO.toString(), block_count: '2' });
  });
});

describe('publish rejections', () => {
  it('a bad signature', async () => {
    const { account, source } = await withPending();
    const block = await openBlock(account, source, XNO);
    await expectRejected({ ...block, signature: signBlock(block, newAccount().privateKey) }, 'BLOCK_BAD_SIGNATURE');
  });

  it('insufficient work: below every threshold, and a send with only receive-grade work', async () => {
    const { account, source } = await withPending();
    const unsigned = buildReceiveBlock(await client.head(account), { sourceHash: source, amount: XNO });
    const signed = { ...unsigned, signature: signBlock(unsigned, account.privateKey) };
    await expectRejected({ ...signed, work: SandboxClient.badWork(unsigned, DEV_THRESHOLDS.receive) }, 'BLOCK_INSUFFICIENT_WORK');

    await client.receiveAll(account);
    const send = buildSendBlock(await client.head(account), { to: newAccount().address, amount: 1n });
    let nonce = 0;
    const receiveGrade = (work: string): boolean => validateWork(workRoot(send), work, DEV_THRESHOLDS.receive) && !validateWork(workRoot(send), work, DEV_THRESHOLDS.send);
    while (!receiveGrade(nonce.toString(16).padStart(16, '0'))) nonce++;
    await expectRejected({ ...send, signature: signBlock(send, account.privateKey), work: nonce.toString(16).padStart(16, '0') }, 'BLOCK_INSUFFICIENT_WORK');
  });

  it('a change block: only send-grade work, and only when called a change', async () => {
    const frank = await opened();
    const change = buildChangeBlock(await client.head(frank), { representative: newAccount().address });
    let nonce = 0;
    const receiveGrade = (work: string): boolean => validateWork(workRoot(change), work, DEV_THRESHOLDS.receive) && !validateWork(workRoot(change), work, DEV_THRESHOLDS.send);
    while (!receiveGrade(nonce.toString(16).padStart(16, '0'))) nonce++;
    await expectRejected({ ...change, signature: signBlock(change, frank.privateKey), work: nonce.toString(16).padStart(16, '0') }, 'BLOCK_INSUFFICIENT_WORK');
    const complete = await client.complete(change, frank, 'send');
    await expectRejected(JSON.stringify(complete), 'INVALID_BLOCK', 'send');
    expect((await client.publish(JSON.stringify(complete), 'change')).success).toBe(true);
  });

  it('a second block on the same previous is a fork', async () => {
    const erin = await opened();
    const state = await client.head(erin);
    const first = await client.complete(buildSendBlock(state, { to: newAccount().address, amount: 1n }), erin, 'send');
    const second = await client.complete(buildSendBlock(state, { to: newAccount().address, amount: 2n }), erin, 'send');
    expect((await client.publish(first)).success).toBe(true);
    await expectRejected(second, 'BLOCK_FORK');
  });

  it('a second open block for an opened account is a fork', async () => {
    const { account, source } = await withPending();
    const other = await client.fund(account.address, '1');
    expect((await client.publish(await openBlock(account, source, XNO))).success).toBe(true);
    const reopen = await client.complete(
      buildReceiveBlock({ address: account.address, frontier: null, balance: 0n, representative: account.address }, { sourceHash: other, amount: XNO }),
      account,
      'receive',
    );
    await expectRejected(reopen, 'BLOCK_FORK');
  });

  it('an unknown previous is a gap', async () => {
    const frank = await opened();
    const gap = await client.complete(buildSendBlock({ ...(await client.head(frank)), frontier: 'AB'.repeat(32) }, { to: newAccount().address, amount: 1n }), frank, 'send');
    await expectRejected(gap, 'BLOCK_GAP_PREVIOUS');
  });

  it('a previous that belongs to another account', async () => {
    const grace = await opened();
    const other = await opened();
    const state = await client.head(grace);
    const block = await client.complete(buildSendBlock({ ...state, frontier: (await client.head(other)).frontier }, { to: newAccount().address, amount: 1n }), grace, 'send');
    await expectRejected(block, 'BLOCK_ACCOUNT_MISMATCH');
  });

  it('a receive whose balance does not rise by exactly the amount sent', async () => {
    const { account, source } = await withPending();
    await expectRejected(await openBlock(account, source, XNO + 1n), 'BLOCK_BALANCE_MISMATCH');
    await expectRejected(await openBlock(account, source, XNO - 1n), 'BLOCK_BALANCE_MISMATCH');
  });

  it('a change block whose link is not zero', async () => {
    const heidi = await opened();
    const change = buildChangeBlock(await client.head(heidi), { representative: heidi.address });
    await expectRejected(await client.complete({ ...change, link: 'CD'.repeat(32) }, heidi, 'send'), 'BLOCK_BALANCE_MISMATCH');
  });

  it('a receive of a hash that is unknown, not a send, or sent to someone else', async () => {
    const { account, source } = await withPending();
    const ivan = await opened();
    const ivanOpen = (await client.head(ivan)).frontier as string;
    const toIvan = await client.fund(ivan.address, '1');
    for (const hash of ['12'.repeat(32), ivanOpen, toIvan]) {
      await expectRejected(await openBlock(account, hash, XNO), 'BLOCK_UNRECEIVABLE');
    }
    expect((await client.publish(await openBlock(account, source, XNO))).success).toBe(true);
  });

  it('a second receive of the same send', async () => {
    const { account, source } = await withPending();
    await client.fund(account.address, '1');
    expect((await client.publish(await openBlock(account, source, XNO))).success).toBe(true);
    const again = await client.complete(buildReceiveBlock(await client.head(account), { sourceHash: source, amount: XNO }), account, 'receive');
    await expectRejected(again, 'BLOCK_ALREADY_RECEIVED');
  });

  it('malformed blocks', async () => {
    const { account, source } = await withPending();
    const good = await openBlock(account, source, XNO);
    const variants: unknown[] = [
      { type: 'state', account: account.address },
      { ...good, type: 'open' },
      { ...good, previous: 'XYZ' },
      { ...good, account: `${account.address.slice(0, -1)}${account.address.endsWith('1') ? '3' : '1'}` },
      { ...good, balance: (MAX_RAW + 1n).toString() },
      { ...good, balance: '-1' },
      { ...good, balance: 5 },
      { ...good, signature: 'AB' },
      { ...good, work: undefined },
      [good],
    ];
    for (const block of variants) await expectRejected(block, 'INVALID_BLOCK');
    expect((await client.publish(good)).success).toBe(true);
  });

  it('a subtype claim that does not match the block', async () => {
    const { account, source } = await withPending();
    const open = await openBlock(account, source, XNO);
    await expectRejected(open, 'INVALID_BLOCK', 'send');
    // The toolset labels an open block "receive": accepted.
    expect((await client.publish(open, 'receive')).success).toBe(true);
  });

  it('the same block twice', async () => {
    const { account, source } = await withPending();
    const open = await openBlock(account, source, XNO);
    const first = await client.publish(open, 'open');
    expect(first.data).toEqual({ hash: hashBlock(open) });
    await expectRejected(open, 'BLOCK_EXISTS');
  });
});
