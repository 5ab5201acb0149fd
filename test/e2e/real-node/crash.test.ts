import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicKeyToAddress } from '../../../src/nano/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { nodeUser, realNodeUnavailable, startRealNode, watchStatus, type RealNode } from '../../helpers/ledger/real-node.js';
import type { PaymentRequest } from '../../helpers/processes/cli.js';
import { startFaultyProxy, type FaultyProxy } from '../../helpers/network/faulty-proxy.js';
import { until } from '../../helpers/network/webhook-receiver.js';

/**
 * The reference nano_node going away under nanopay: killed (SIGKILL) while a send's block is at it, and stopped
 * while commands run. The rerun under the same --id after the restart publishes the journaled block, so the
 * account moves once; a command against a node that is down fails with its code (exit 5) and loses nothing.
 * A status --watch lives through the node's restart. The tests run in order: each takes the node down and brings it back.
 */
const skip = realNodeUnavailable();
const XNO = 10n ** 30n;

let node: RealNode;
const proxies: FaultyProxy[] = [];

const accountInfo = async (address: string): Promise<Record<string, any>> => node.rpc('account_info', { account: address });
const someone = (): string => publicKeyToAddress(randomBytes(32));

async function funded(raw: bigint): Promise<Awaited<ReturnType<typeof nodeUser>>> {
  const user = await nodeUser(node);
  await node.fund(user.address, raw);
  expect((await user.user.json(['receive']))._code).toBe(0);
  return user;
}

describe.skipIf(skip !== undefined)('the real node killed and restarted', () => {
  beforeAll(async () => {
    node = await startRealNode({ upgraded: true });
  });

  afterAll(async () => {
    for (const proxy of proxies) await proxy.close();
    await node?.stop();
    await shutdownWorkers();
  });

  it('killed while a send --id is publishing its journaled block: after the restart the rerun sends it once', async () => {
    const owner = await funded(2n * XNO);
    const to = someone();
    // The send's block reaches the node's door and waits there; the node is killed meanwhile.
    let held: Record<string, unknown> | undefined;
    const door = await startFaultyProxy(node.rpcUrl, (_method, _path, body) => {
      if (body.action !== 'process' || held !== undefined) return 'pass';
      held = body.block as Record<string, unknown>;
      return 'hold';
    });
    proxies.push(door);
    const first = owner.user.json<{ error: { code: string } }>(['send', to, '0.5', '--id', 'crash-1', '--yes'], { env: { NANOPAY_NODE_URL: door.url } });
    await until(() => held !== undefined, 'the send block at the node');
    const heldHash = String((await node.rpc('block_hash', { json_block: 'true', block: held })).hash);
    await node.kill();
    await door.close();
    expect(await first).toMatchObject({ _code: 5, error: { code: 'REQUEST_ERROR' } });

    await node.start();
    // The node never had the block: the account is as it was.
    expect(await accountInfo(owner.address)).toMatchObject({ balance: (2n * XNO).toString(), block_count: '1' });
    const rerun = await owner.user.json<{ hash: string; amount_raw: string; balance_after_raw: string }>(['send', to, '0.5', '--id', 'crash-1', '--yes']);
    expect(rerun).toMatchObject({ _code: 0, hash: heldHash, amount_raw: (XNO / 2n).toString(), balance_after_raw: ((3n * XNO) / 2n).toString() });
    await node.waitConfirmed(heldHash);
    expect(await accountInfo(owner.address)).toMatchObject({ balance: ((3n * XNO) / 2n).toString(), block_count: '2', frontier: heldHash });

    const again = await owner.user.json(['send', to, '0.5', '--id', 'crash-1', '--yes']);
    expect(again).toMatchObject({ _code: 0, hash: heldHash, repeated: true });
    expect(await accountInfo(owner.address)).toMatchObject({ balance: ((3n * XNO) / 2n).toString(), block_count: '2' });
    expect((await node.rpc('account_balance', { account: to })).receivable).toBe((XNO / 2n).toString());
  });

  it('killed after it took the block, before answering: the rerun finds it in the ledger and the account moves once', async () => {
    const owner = await funded(XNO);
    const to = someone();
    // The block reaches the node; its answer is lost as the node dies.
    let published: Record<string, unknown> | undefined;
    const door = await startFaultyProxy(node.rpcUrl, (_method, _path, body) => {
      if (body.action !== 'process' || published !== undefined) return 'pass';
      published = body.block as Record<string, unknown>;
      return 'forward-then-drop';
    });
    proxies.push(door);
    const first = await owner.user.json(['send', to, '0.25', '--id', 'crash-2', '--yes'], { env: { NANOPAY_NODE_URL: door.url } });
    expect(first).toMatchObject({ _code: 5, error: { code: 'REQUEST_ERROR' } });
    const hash = String((await node.rpc('block_hash', { json_block: 'true', block: published })).hash);
    await node.kill();
    await node.start();
    const rerun = await owner.user.json<{ hash: string }>(['send', to, '0.25', '--id', 'crash-2', '--yes']);
    expect(rerun).toMatchObject({ _code: 0, hash });
    await node.waitConfirmed(hash);
    expect(await accountInfo(owner.address)).toMatchObject({ balance: ((3n * XNO) / 4n).toString(), block_count: '2', frontier: hash });
    expect((await node.rpc('account_balance', { account: to })).receivable).toBe((XNO / 4n).toString());
  });

  it('stopped: commands fail with their code (exit 5); after the restart nothing is lost and receive and send work', async () => {
    const owner = await funded(XNO);
    const to = someone();
    await node.stop();
    const down = await Promise.all([owner.user.json(['balance']), owner.user.json(['send', to, '0.1', '--id', 'down-1', '--yes'])]);
    for (const failed of down) expect(failed).toMatchObject({ _code: 5, error: { code: 'REQUEST_ERROR' } });

    await node.start();
    expect(await accountInfo(owner.address)).toMatchObject({ balance: XNO.toString(), block_count: '1' });
    await node.fund(owner.address, XNO / 2n);
    const received = await owner.user.json<{ total_raw: string }>(['receive']);
    expect(received).toMatchObject({ _code: 0, total_raw: (XNO / 2n).toString() });
    const sent = await owner.user.json<{ hash: string }>(['send', to, '0.1', '--id', 'down-1', '--yes']);
    expect(sent).toMatchObject({ _code: 0, repeated: false });
    await node.waitConfirmed(sent.hash);
    expect(await accountInfo(owner.address)).toMatchObject({ balance: ((3n * XNO) / 2n - XNO / 10n).toString(), block_count: '3', frontier: sent.hash });
  });

  it('killed under status --watch: the watch lives through the restart and sees the payment over the WebSocket again', async () => {
    const [merchant, payer] = await Promise.all([nodeUser(node), funded(XNO)]);
    const request = await merchant.user.json<PaymentRequest>(['request', '0.04', '--no-qr']);
    const watching = await watchStatus(merchant, request.transaction_id);
    await node.kill();
    await node.start();
    const paid = await payer.user.json<{ hash: string; amount_raw: string }>(['pay', request.uri, '--yes']);
    expect(paid).toMatchObject({ _code: 0, amount_raw: request.amount_raw });
    expect(await watching.exited).toBe(0);
    expect(watching.events().at(-1)).toMatchObject({ event: 'status', status: 'paid', is_paid: true, paid_by: [paid.hash] });
    expect(watching.events().filter((e) => e.is_paid === true)).toHaveLength(1);
    await node.waitConfirmed(paid.hash);
    expect((await node.rpc('block_info', { hash: paid.hash, json_block: 'true' })) as Record<string, any>).toMatchObject({ amount: request.amount_raw, contents: { account: payer.address, link_as_account: merchant.address } });
  });
});
