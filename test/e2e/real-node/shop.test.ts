import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shutdownWorkers } from '../../../src/work/index.js';
import { nodeUser, realNodeUnavailable, startRealNode, type RealNode } from '../../helpers/ledger/real-node.js';
import { startWebhookReceiver, until, type WebhookReceiver } from '../../helpers/network/webhook-receiver.js';
import { startCommand, type RunningCommand } from '../../helpers/processes/serve.js';

/**
 * The shop against the reference nano_node: `checkout serve` with fresh addresses, signed webhooks and refunds
 * carried out by the server; a request made through its API, its page, paid, refunded through the API; then
 * `nanopay sweep` moves the fresh account's takings, and `checkout serve --sweep-to` does it by itself. Each
 * movement is checked in the node's own ledger.
 */
const skip = realNodeUnavailable();
const XNO = 10n ** 30n;

let node: RealNode;
let merchant: Awaited<ReturnType<typeof nodeUser>>;
let payer: Awaited<ReturnType<typeof nodeUser>>;
let cold: Awaited<ReturnType<typeof nodeUser>>;
let receiver: WebhookReceiver;
let server: RunningCommand<{ url: string; token_file: string; webhook_secret_file: string }>;
let secret = '';

type Api = { status: number; body: { data: Record<string, any> } };

async function api(path: string, init: RequestInit = {}, on = server.printed.url): Promise<Api> {
  const token = readFileSync(server.printed.token_file, 'utf8').trim();
  const response = await fetch(`${on}${path}`, { ...init, headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` } });
  return { status: response.status, body: (await response.json()) as Api['body'] };
}

const blockInfo = async (hash: string): Promise<Record<string, any>> => node.rpc('block_info', { hash, json_block: 'true' });
const accountInfo = async (address: string): Promise<Record<string, any>> => node.rpc('account_info', { account: address });

describe.skipIf(skip !== undefined)('the shop on the real node', () => {
  beforeAll(async () => {
    node = await startRealNode({ upgraded: true });
    [merchant, payer, cold] = await Promise.all([nodeUser(node), nodeUser(node), nodeUser(node)]);
    // The payments go to fresh accounts, and a refund is paid from there; the merchant's main account is not touched.
    await node.fund(merchant.address, XNO);
    await node.fund(payer.address, 3n * XNO);
    for (const user of [merchant, payer]) expect((await user.user.json(['receive']))._code).toBe(0);
    receiver = await startWebhookReceiver(() => secret);
    server = await startCommand(
      ['checkout', 'serve', '--json', '--fresh-addresses', '--refunds', '--webhook', receiver.url, '--poll-interval', '1', '--webhook-backoff-ms', '50'],
      merchant.user.env,
    );
    secret = readFileSync(server.printed.webhook_secret_file, 'utf8').trim().split('\n')[0] as string;
  });

  afterAll(async () => {
    await server?.stop();
    await receiver?.close();
    await node?.stop();
    await shutdownWorkers();
  });

  it('a request made through the API is paid to its fresh account, signed webhooks arrive, a refund through the API goes back from that account, and a sweep finds it empty', async () => {
    const made = await api('/api/v1/requests', { method: 'POST', body: JSON.stringify({ amount: '0.3' }) });
    expect(made.status).toBe(200);
    const request = made.body.data;
    const id = request.id as string;
    expect(request).toMatchObject({ status: 'waiting', amount_raw: (3n * XNO / 10n).toString() });
    expect(request.receive_address).not.toBe(merchant.address);
    const page = await fetch(`${server.printed.url}/checkout/${id}`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('data-state="waiting"');

    const paid = await payer.user.json<{ hash: string }>(['pay', request.uri as string, '--yes']);
    expect(paid._code).toBe(0);
    expect(await blockInfo(paid.hash)).toMatchObject({ subtype: 'send', amount: request.amount_raw, contents: { account: payer.address, link_as_account: request.receive_address } });
    await until(async () => (await api(`/api/v1/requests/${id}`)).body.data.status === 'paid', 'the request paid');
    expect((await api(`/api/v1/requests/${id}`)).body.data).toMatchObject({ status: 'paid', paid_by: [paid.hash] });
    expect(await (await fetch(`${server.printed.url}/checkout/${id}`)).text()).toContain('data-state="paid"');
    await until(() => receiver.events.some((e) => e.data.object.id === id && e.type === 'request.paid'), 'the request.paid webhook');

    const ordered = await api(`/api/v1/requests/${id}/refunds`, { method: 'POST', body: '{}' });
    expect(ordered.status).toBe(202);
    await until(async () => (await api(`/api/v1/requests/${id}`)).body.data.status === 'refunded', 'the refund carried out by the server');
    const refunds = (await api(`/api/v1/requests/${id}/refunds`)).body.data.data as { status: string; block: string; amount_raw: string }[];
    expect(refunds.map((r) => [r.status, r.amount_raw])).toEqual([['sent', request.amount_raw]]);
    const refund = refunds[0]?.block as string;
    await node.waitConfirmed(refund);
    expect(await blockInfo(refund)).toMatchObject({ subtype: 'send', amount: request.amount_raw, contents: { account: request.receive_address, link_as_account: payer.address } });
    // The fresh account received the payment (its open block), then sent it back.
    expect(await accountInfo(request.receive_address as string)).toMatchObject({ balance: '0', block_count: '2', frontier: refund });
    expect(await accountInfo(merchant.address)).toMatchObject({ balance: XNO.toString(), block_count: '1' });
    await until(() => receiver.events.some((e) => e.data.object.id === id && e.type === 'request.refunded'), 'the request.refunded webhook');
    expect(receiver.events.filter((e) => e.data.object.id === id).map((e) => [e.type, e.data.object.status])).toEqual([
      ['request.paid', 'paid'],
      ['request.refunded', 'refunded'],
    ]);
    expect(receiver.refused).toEqual([]);

    // Refunded whole from its own account: a sweep finds nothing there.
    const swept = await merchant.user.json<{ swept: number; total_raw: string; accounts: { address: string; status: string }[] }>(['sweep', '--to', cold.address, '--yes']);
    expect(swept).toMatchObject({ _code: 0, swept: 0, total_raw: '0' });
    expect(swept.accounts.find((a) => a.address === request.receive_address)?.status).toBe('empty');
    // The payer's chain: open and the payment; the refund waits to be received.
    expect(await node.rpc('account_info', { account: payer.address, receivable: 'true' })).toMatchObject({ balance: (3n * XNO - 3n * XNO / 10n).toString(), block_count: '2', receivable: request.amount_raw });
  });

  it('checkout serve --sweep-to sweeps the takings of its fresh accounts by itself, once each, whole', async () => {
    const vault = await nodeUser(node);
    const sweeper = await startCommand<{ url: string }>(['checkout', 'serve', '--json', '--fresh-addresses', '--sweep-to', vault.address, '--sweep-every', '1s', '--poll-interval', '1'], merchant.user.env);
    try {
      const made = await api('/api/v1/requests', { method: 'POST', body: JSON.stringify({ amount: '0.2' }) }, sweeper.printed.url);
      const request = made.body.data;
      expect(request).toMatchObject({ status: 'waiting', amount_raw: (2n * XNO / 10n).toString() });
      const paid = await payer.user.json<{ hash: string }>(['pay', request.uri as string, '--yes']);
      expect(paid._code).toBe(0);
      const waiting = async (): Promise<Record<string, { amount: string; source: string }>> => {
        const { blocks } = (await node.rpc('receivable', { account: vault.address, source: 'true' })) as { blocks: '' | Record<string, { amount: string; source: string }> };
        return blocks === '' ? {} : blocks;
      };
      await until(async () => Object.keys(await waiting()).length > 0, 'the server\'s sweep');
      const [moved] = Object.keys(await waiting());
      expect(await waiting()).toEqual({ [moved as string]: { amount: request.amount_raw, source: request.receive_address } });
      // Its open (the payment received) and one send of all of it.
      expect(await accountInfo(request.receive_address as string)).toMatchObject({ balance: '0', block_count: '2', frontier: moved });
      // Swept after the payment was matched: the request stays paid by it.
      await until(async () => (await api(`/api/v1/requests/${request.id as string}`, {}, sweeper.printed.url)).body.data.status === 'paid', 'the request paid');
      expect((await api(`/api/v1/requests/${request.id as string}`, {}, sweeper.printed.url)).body.data).toMatchObject({ status: 'paid', paid_by: [paid.hash] });
    } finally {
      await sweeper.stop();
    }
  });
});
