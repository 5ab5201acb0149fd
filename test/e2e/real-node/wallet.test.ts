import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicKeyToAddress } from '../../../src/nano/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { nodeUser, realNodeUnavailable, startRealNode, watchStatus, type RealNode } from '../../helpers/ledger/real-node.js';
import { until } from '../../helpers/network/webhook-receiver.js';
import type { PaymentRequest } from '../../helpers/processes/cli.js';

/**
 * The wallet's node paths against the reference nano_node: receive, send, pay, requests (shared and fresh
 * address, watched over the node's WebSocket), under-, over- and late payment, history and the representative.
 * nanopay's answer is checked beside the node's own view of the ledger. Tests with their own users run concurrently.
 */
const skip = realNodeUnavailable();
const XNO = 10n ** 30n;

let node: RealNode;

type Json = Record<string, unknown>;
type User = Awaited<ReturnType<typeof nodeUser>>;

const accountInfo = async (address: string): Promise<{ balance: string; block_count: string; frontier: string }> =>
  (await node.rpc('account_info', { account: address })) as { balance: string; block_count: string; frontier: string };

const blockInfo = async (hash: string): Promise<{ subtype: string; amount: string; contents: { link_as_account: string; account: string } }> =>
  (await node.rpc('block_info', { hash, json_block: 'true' })) as { subtype: string; amount: string; contents: { link_as_account: string; account: string } };

/** A user funded from genesis with `raw` and received (several blocks become several receives). */
async function funded(...amounts: bigint[]): Promise<User> {
  const user = await nodeUser(node);
  for (const raw of amounts) await node.fund(user.address, raw);
  const received = await user.user.json<{ total_raw: string }>(['receive']);
  expect(received.total_raw).toBe(amounts.reduce((a, b) => a + b, 0n).toString());
  return user;
}

describe.skipIf(skip !== undefined)('the wallet on the real node', () => {
  beforeAll(async () => {
    node = await startRealNode({ upgraded: true });
  });

  afterAll(async () => {
    await node?.stop();
    await shutdownWorkers();
  });

  it.concurrent('receives several blocks, sends, pays a nano: URI, changes its representative; history is the node\'s chain', async () => {
    const owner = await nodeUser(node);
    const payee = await nodeUser(node);
    const funds = [XNO, 2n * XNO, XNO / 2n];
    for (const raw of funds) await node.fund(owner.address, raw);
    const received = await owner.user.json<{ received: { subtype: string; amount_raw: string; hash: string }[]; total_raw: string }>(['receive']);
    expect(received._code).toBe(0);
    expect(received.received.map((r) => r.subtype)).toEqual(['open', 'receive', 'receive']);
    expect(received.received.map((r) => r.amount_raw).sort()).toEqual(funds.map(String).sort());
    expect(received.total_raw).toBe((7n * XNO / 2n).toString());
    expect(await accountInfo(owner.address)).toMatchObject({ balance: (7n * XNO / 2n).toString(), block_count: '3' });

    const sent = await owner.user.json<{ hash: string; amount_raw: string; balance_after_raw: string }>(['send', payee.address, '0.25', '--yes']);
    expect(sent).toMatchObject({ _code: 0, amount_raw: (XNO / 4n).toString(), balance_after_raw: (13n * XNO / 4n).toString() });
    await node.waitConfirmed(sent.hash);
    expect(await blockInfo(sent.hash)).toMatchObject({ subtype: 'send', amount: (XNO / 4n).toString(), contents: { account: owner.address, link_as_account: payee.address } });
    expect(await accountInfo(owner.address)).toMatchObject({ balance: (13n * XNO / 4n).toString(), block_count: '4', frontier: sent.hash });

    // An amount no decimal XNO rounds to: the URI's raw is paid exactly.
    const raw = 1_234_567_890_123n;
    const paid = await owner.user.json<{ hash: string; amount_raw: string }>(['pay', `nano:${payee.address}?amount=${raw}`, '--yes']);
    expect(paid).toMatchObject({ _code: 0, amount_raw: raw.toString() });
    await node.waitConfirmed(paid.hash);
    expect(await blockInfo(paid.hash)).toMatchObject({ subtype: 'send', amount: raw.toString(), contents: { link_as_account: payee.address } });
    const afterPay = 13n * XNO / 4n - raw;
    expect(await accountInfo(owner.address)).toMatchObject({ balance: afterPay.toString(), block_count: '5' });

    const nodeRep = String((await node.rpc('account_representative', { account: owner.address })).representative);
    expect(await owner.user.json(['representative'])).toMatchObject({ _code: 0, account: owner.address, representative: nodeRep, opened: true });
    const rep = publicKeyToAddress(randomBytes(32));
    const changed = await owner.user.json<{ hash: string }>(['representative', 'set', rep, '--yes']);
    expect(changed).toMatchObject({ _code: 0, changed: true, representative: rep, previous_representative: nodeRep });
    await node.waitConfirmed(changed.hash);
    expect((await node.rpc('account_representative', { account: owner.address })).representative).toBe(rep);
    expect(await blockInfo(changed.hash)).toMatchObject({ subtype: 'change', amount: '0' });
    expect(await accountInfo(owner.address)).toMatchObject({ balance: afterPay.toString(), block_count: '6', frontier: changed.hash });
    expect(await owner.user.json(['representative'])).toMatchObject({ representative: rep });

    const history = await owner.user.json<{ source: string; history: { type: string; hash: string; amount_raw: string; verified: boolean }[] }>(['history']);
    expect(history).toMatchObject({ _code: 0, source: 'node' });
    const nodeHistory = (await node.rpc('account_history', { account: owner.address, count: '-1', raw: 'true' })) as { history: { hash: string }[] };
    expect(history.history.map((i) => i.hash)).toEqual(nodeHistory.history.map((b) => b.hash));
    expect(history.history.map((i) => [i.type, i.amount_raw])).toEqual([
      ['change', '0'],
      ['send', raw.toString()],
      ['send', (XNO / 4n).toString()],
      ...[...received.received].reverse().map((r) => [r.subtype, r.amount_raw]),
    ]);
    expect(history.history.every((i) => i.verified)).toBe(true);
  });

  it.concurrent('a request to the shared address and one to a fresh address, each watched over the WebSocket, are paid', async () => {
    const merchant = await nodeUser(node);
    const payer = await funded(5n * XNO);
    const shared = await merchant.user.json<PaymentRequest>(['request', '0.7', '--no-qr']);
    const fresh = await merchant.user.json<PaymentRequest>(['request', '0.3', '--fresh-address', '--no-qr']);
    expect(shared.receive_address).toBe(merchant.address);
    expect(fresh.receive_address).not.toBe(merchant.address);
    const watches = await Promise.all([watchStatus(merchant, shared.transaction_id), watchStatus(merchant, fresh.transaction_id)]);

    const payments: Json[] = [];
    for (const request of [shared, fresh]) {
      const paid = await payer.user.json<{ hash: string }>(['pay', request.uri, '--yes']);
      expect(paid._code).toBe(0);
      expect(await blockInfo(paid.hash)).toMatchObject({ amount: request.amount_raw, contents: { link_as_account: request.receive_address } });
      payments.push(paid);
    }
    for (const [i, request] of [shared, fresh].entries()) {
      const hash = payments[i]?.hash as string;
      expect(await watches[i]?.exited).toBe(0);
      expect(watches[i]?.events().at(-1)).toMatchObject({ event: 'status', status: 'paid', is_paid: true, paid_by: [hash] });
      expect(await merchant.user.json(['status', request.transaction_id])).toMatchObject({ _code: 0, status: 'paid', is_paid: true, paid_by: [hash] });
    }
    const spent = BigInt(shared.amount_raw) + BigInt(fresh.amount_raw);
    expect(await accountInfo(payer.address)).toMatchObject({ balance: (5n * XNO - spent).toString(), block_count: '3' });
  });

  it.concurrent('a fresh-address request underpaid then paid with the exact rest; one overpaid; one paid after its expiry is paid late', async () => {
    const merchant = await nodeUser(node);
    const payer = await funded(5n * XNO);
    const under = await merchant.user.json<PaymentRequest>(['request', '1', '--fresh-address', '--no-qr']);
    const over = await merchant.user.json<PaymentRequest>(['request', '1', '--fresh-address', '--no-qr']);
    const late = await merchant.user.json<PaymentRequest & { expires_at: string }>(['request', '0.2', '--expires-in', '2s', '--no-qr']);

    // nanopay counts a payment once the node has confirmed it; `send` returns when the node has taken the block.
    const short = await payer.user.json<{ hash: string }>(['send', under.receive_address, '0.9', '--yes']);
    await node.waitConfirmed(short.hash);
    const underStatus = await merchant.user.json<{ mismatch: { rest_raw: string } }>(['status', under.transaction_id]);
    expect(underStatus).toMatchObject({
      _code: 0,
      status: 'underpaid',
      is_paid: false,
      mismatch: { kind: 'underpaid', amount_raw: (9n * XNO / 10n).toString(), blocks: [short.hash], rest_raw: (XNO / 10n).toString() },
    });
    const rest = await payer.user.json<{ hash: string }>(['send', under.receive_address, underStatus.mismatch.rest_raw, '--raw', '--yes']);
    expect(rest._code).toBe(0);
    await node.waitConfirmed(rest.hash);
    const paid = await merchant.user.json<{ paid_by: string[] }>(['status', under.transaction_id]);
    expect(paid).toMatchObject({ status: 'paid', is_paid: true });
    expect([...paid.paid_by].sort()).toEqual([short.hash, rest.hash].sort());

    const much = await payer.user.json<{ hash: string }>(['send', over.receive_address, '1.5', '--yes']);
    await node.waitConfirmed(much.hash);
    expect(await merchant.user.json(['status', over.transaction_id])).toMatchObject({
      status: 'overpaid',
      is_paid: false,
      mismatch: { kind: 'overpaid', amount_raw: (3n * XNO / 2n).toString(), blocks: [much.hash] },
    });

    // The node dates a block in whole seconds: paid a second after the expiry, its block is after it.
    await until(() => Date.now() > Date.parse(late.expires_at) + 1100, 'the expiry to pass', 10_000);
    const latePay = await payer.user.json<{ hash: string }>(['pay', late.uri, '--yes']);
    expect(latePay._code).toBe(0);
    await node.waitConfirmed(latePay.hash);
    expect(await merchant.user.json(['status', late.transaction_id])).toMatchObject({
      _code: 0,
      status: 'paid_late',
      is_paid: false,
      expired: true,
      paid_late: { amount_raw: late.amount_raw, blocks: [latePay.hash] },
    });
    for (const [hash, amount] of [[short.hash, 9n * XNO / 10n], [rest.hash, XNO / 10n], [much.hash, 3n * XNO / 2n], [latePay.hash, BigInt(late.amount_raw)]] as const) {
      expect((await blockInfo(hash)).amount).toBe(amount.toString());
    }
    const spent = 9n * XNO / 10n + XNO / 10n + 3n * XNO / 2n + BigInt(late.amount_raw);
    expect(await accountInfo(payer.address)).toMatchObject({ balance: (5n * XNO - spent).toString(), block_count: '5' });
  });
});
