import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicKeyToAddress } from '../../../src/nano/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { nanoExactServerScheme } from '../../../src/x402/schemes.js';
import { nodeUser, realNodeUnavailable, startRealNode, type RealNode } from '../../helpers/ledger/real-node.js';
import { startCommand, type RunningCommand } from '../../helpers/processes/serve.js';
import { randomBytes } from 'node:crypto';

/**
 * x402 against the reference nano_node: `nanopay fetch` paying `nanopay paywall`, and an @x402/express server
 * settling through `nanopay facilitator`; payment lanes paying in parallel; the spending policy refusing a send.
 * Every payment is checked as the node holds it: its amount, payer and payee, confirmed, and each paid once.
 */
const skip = realNodeUnavailable();
const XNO = 10n ** 30n;
const PRICE_RAW = XNO / 1000n;

let node: RealNode;
let merchant: Awaited<ReturnType<typeof nodeUser>>;
let upstream: Server;
let upstreamUrl: string;
let paywall: RunningCommand<{ url: string; pay_to: string; price_raw: string }>;
let facilitator: RunningCommand<{ url: string; network: string }>;
const servers: Server[] = [];

type Paid = { status: number; body: string; payment: { hash: string; payer: string; amount_raw?: string; settlement: { success: boolean; transaction: string } } };

const blockInfo = async (hash: string): Promise<Record<string, any>> => node.rpc('block_info', { hash, json_block: 'true' });
const accountInfo = async (address: string): Promise<Record<string, any>> => node.rpc('account_info', { account: address });

/** A customer of the node holding `raw`, received. */
async function customer(raw: bigint): Promise<Awaited<ReturnType<typeof nodeUser>>> {
  const user = await nodeUser(node);
  await node.fund(user.address, raw);
  expect((await user.user.json(['receive']))._code).toBe(0);
  return user;
}

async function listen(server: Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The node's view of a payment to the merchant: a confirmed send of exactly `raw` from `payer`. */
async function expectPaid(hash: string, payer: string, raw: bigint): Promise<void> {
  await node.waitConfirmed(hash);
  expect(await blockInfo(hash)).toMatchObject({ subtype: 'send', amount: raw.toString(), contents: { account: payer, link_as_account: merchant.address } });
}

describe.skipIf(skip !== undefined)('x402 on the real node', () => {
  beforeAll(async () => {
    node = await startRealNode({ upgraded: true });
    merchant = await nodeUser(node);
    upstream = createServer((req, res) => void res.writeHead(200, { 'content-type': 'text/plain' }).end(`report for ${req.method} ${req.url}`));
    upstreamUrl = await listen(upstream);
    [paywall, facilitator] = await Promise.all([
      startCommand<{ url: string; pay_to: string; price_raw: string }>(['paywall', '--upstream', upstreamUrl, '--price', '0.001', '--to', merchant.address, '--json'], merchant.user.env),
      startCommand<{ url: string; network: string }>(['facilitator', '--json'], merchant.user.env),
    ]);
  });

  afterAll(async () => {
    await paywall?.stop();
    await facilitator?.stop();
    for (const server of servers) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
    await node?.stop();
    await shutdownWorkers();
  });

  it.concurrent('nanopay fetch pays the paywall exactly its price, once, and gets the upstream body', async () => {
    const payer = await customer(XNO);
    expect(paywall.printed).toMatchObject({ pay_to: merchant.address, price_raw: PRICE_RAW.toString() });
    expect((await fetch(`${paywall.printed.url}/report`)).status).toBe(402);
    const paid = await payer.user.json<Paid>(['fetch', `${paywall.printed.url}/report?x=1`, '--max', '0.01', '--yes']);
    expect(paid).toMatchObject({ _code: 0, status: 200, body: 'report for GET /report?x=1', payment: { payer: payer.address, settlement: { success: true } } });
    expect(paid.payment.settlement.transaction).toBe(paid.payment.hash);
    await expectPaid(paid.payment.hash, payer.address, PRICE_RAW);
    expect(await accountInfo(payer.address)).toMatchObject({ balance: (XNO - PRICE_RAW).toString(), block_count: '2', frontier: paid.payment.hash });
  });

  it.concurrent('an @x402/express server settling through nanopay facilitator is paid by nanopay fetch', async () => {
    const payer = await customer(XNO);
    expect(facilitator.printed.network).toBe('nano:dev');
    const server = new x402ResourceServer(new HTTPFacilitatorClient({ url: facilitator.printed.url })).register('nano:dev', nanoExactServerScheme as never);
    const app = express();
    app.use(paymentMiddleware({ 'GET /weather': { accepts: { scheme: 'exact', price: '0.003', network: 'nano:dev', payTo: merchant.address }, description: 'Weather' } }, server));
    app.get('/weather', (_req, res) => void res.json({ weather: 'sunny' }));
    const shop = await listen(createServer(app));
    expect((await fetch(`${shop}/weather`)).status).toBe(402);
    const paid = await payer.user.json<Paid>(['fetch', `${shop}/weather`, '--max', '0.01', '--yes']);
    expect(paid).toMatchObject({ _code: 0, status: 200, payment: { settlement: { success: true, transaction: paid.payment.hash } } });
    expect(JSON.parse(paid.body)).toEqual({ weather: 'sunny' });
    await expectPaid(paid.payment.hash, payer.address, 3n * PRICE_RAW);
    expect(await accountInfo(payer.address)).toMatchObject({ balance: (XNO - 3n * PRICE_RAW).toString(), block_count: '2' });
  });

  it.concurrent('lanes set funds each lane and receives it: each holds its fund, as nanopay says and the node holds', async () => {
    const payer = await customer(XNO);
    const set = await payer.user.json<{ funded: string; lanes: { address: string; balance_raw: string }[] }>(['lanes', 'set', '2', '--fund', '0.1']);
    expect(set).toMatchObject({ _code: 0, funded: '0.2' });
    expect(set.lanes.map((l) => l.balance_raw)).toEqual(Array(2).fill((XNO / 10n).toString()));
    for (const lane of set.lanes) expect(await accountInfo(lane.address)).toMatchObject({ balance: (XNO / 10n).toString(), block_count: '1' });
  });

  it.concurrent('payment lanes: parallel fetches from one wallet are each paid once, from the lanes', async () => {
    const payer = await customer(XNO);
    const set = await payer.user.json<{ funded: string; lanes: { address: string }[] }>(['lanes', 'set', '4', '--fund', '0.1']);
    expect(set).toMatchObject({ _code: 0, funded: '0.4' });
    const laneAddresses = set.lanes.map((l) => l.address);
    // The funding left the wallet's account: four sends of 0.1 XNO.
    expect(await accountInfo(payer.address)).toMatchObject({ balance: (XNO - (4n * XNO) / 10n).toString(), block_count: '5' });

    const runs = await Promise.all(Array.from({ length: 4 }, (_, i) => payer.user.json<Paid>(['fetch', `${paywall.printed.url}/lane?i=${i}`, '--max', '0.01', '--yes'])));
    expect(runs.map((r) => [r._code, r.status, r.body])).toEqual(Array.from({ length: 4 }, (_, i) => [0, 200, `report for GET /lane?i=${i}`]));
    const hashes = runs.map((r) => r.payment.hash);
    expect(new Set(hashes).size).toBe(4);
    for (const run of runs) {
      expect(laneAddresses).toContain(run.payment.payer);
      await expectPaid(run.payment.hash, run.payment.payer, PRICE_RAW);
    }
    // Paid once each: the lanes' sends to the merchant on the node are exactly these.
    const receivable = (await node.rpc('receivable', { account: merchant.address, source: 'true', count: '-1' })) as { blocks: Record<string, { source: string }> };
    const fromLanes = Object.entries(receivable.blocks).filter(([, b]) => laneAddresses.includes(b.source)).map(([hash]) => hash);
    expect(fromLanes.sort()).toEqual([...hashes].sort());
    const laneBalances = await Promise.all(laneAddresses.map(async (address) => BigInt(String((await node.rpc('account_balance', { account: address })).balance))));
    expect(laneBalances.reduce((a, b) => a + b, 0n)).toBe((4n * XNO) / 10n - 4n * PRICE_RAW);
  });

  it.concurrent('lanes are refilled on the way and emptied whole: money leaves the wallet only as the payments, and lanes set 0 receives what they held', async () => {
    const payer = await customer(XNO);
    const fund = 2n * PRICE_RAW;
    const set = await payer.user.json<{ lanes: { address: string }[] }>(['lanes', 'set', '2', '--fund', '0.002']);
    expect(set._code).toBe(0);
    const laneAddresses = set.lanes.map((l) => l.address);
    // Six payments through two lanes funded with two each: the lanes are refilled from the wallet's account on the way.
    const runs = await Promise.all(Array.from({ length: 6 }, (_, i) => payer.user.json<Paid>(['fetch', `${paywall.printed.url}/refill?i=${i}`, '--max', '0.01', '--yes'])));
    expect(runs.map((r) => [r._code, r.status, r.body])).toEqual(Array.from({ length: 6 }, (_, i) => [0, 200, `report for GET /refill?i=${i}`]));
    expect(new Set(runs.map((r) => r.payment.hash)).size).toBe(6);
    for (const run of runs) {
      expect(laneAddresses).toContain(run.payment.payer);
      await expectPaid(run.payment.hash, run.payment.payer, PRICE_RAW);
    }
    // Each refill was received before the process that sent it ended: nothing waits for a lane, and the wallet's
    // accounts hold all but the payments. A lane is topped up to its fund, never past it, however many processes
    // found it low at once.
    for (const lane of laneAddresses) expect((await node.rpc('receivable', { account: lane, count: '-1', include_only_confirmed: 'false' })).blocks).toBe('');
    const held = async (address: string): Promise<bigint> => BigInt((await accountInfo(address)).balance as string);
    const lanes = await Promise.all(laneAddresses.map(held));
    const inLanes = lanes.reduce((a, b) => a + b, 0n);
    expect((await held(payer.address)) + inLanes).toBe(XNO - 6n * PRICE_RAW);
    expect(lanes.every((balance) => balance <= fund)).toBe(true);

    const emptied = await payer.user.json<{ count: number; returned_raw: string }>(['lanes', 'set', '0']);
    expect(emptied).toMatchObject({ _code: 0, count: 0, returned_raw: inLanes.toString() });
    for (const lane of laneAddresses) expect(await held(lane)).toBe(0n);
    // The wallet's account received it all back: nothing is left on its way.
    expect(await payer.user.json(['balance'])).toMatchObject({ _code: 0, balance_raw: (XNO - 6n * PRICE_RAW).toString(), pending_raw: '0' });
    expect(await accountInfo(payer.address)).toMatchObject({ balance: (XNO - 6n * PRICE_RAW).toString() });
  });

  it.concurrent('the spending policy holds a send over ask-above until a person approves it; approved, it is sent once', async () => {
    const payer = await customer(XNO);
    const other = publicKeyToAddress(randomBytes(32));
    expect((await payer.user.json(['policy', 'set', 'ask-above', '0.05']))._code).toBe(0);
    const before = await accountInfo(payer.address);
    const held = await payer.user.json<{ error: { code: string; approval: { id: string } } }>(['send', other, '0.06', '--yes']);
    expect(held).toMatchObject({ _code: 14, error: { code: 'APPROVAL_REQUIRED', approval: { id: expect.any(String) } } });
    expect(await accountInfo(payer.address)).toMatchObject({ balance: XNO.toString(), block_count: '1', frontier: before.frontier });

    const id = held.error.approval.id;
    expect(await payer.user.json(['approvals', 'approve', id, '--yes'])).toMatchObject({ _code: 0, state: 'approved' });
    const sent = await payer.user.json<{ hash: string }>(['send', other, '0.06', '--yes', '--approval', id]);
    expect(sent._code).toBe(0);
    await node.waitConfirmed(sent.hash);
    expect(await blockInfo(sent.hash)).toMatchObject({ subtype: 'send', amount: ((6n * XNO) / 100n).toString(), contents: { account: payer.address, previous: before.frontier, link_as_account: other } });
    // Used once: the same approval sends nothing again.
    expect(await payer.user.json(['send', other, '0.06', '--yes', '--approval', id])).toMatchObject({ _code: 10, error: { code: 'APPROVAL_INVALID' } });
    expect(await accountInfo(payer.address)).toMatchObject({ balance: (XNO - (6n * XNO) / 100n).toString(), block_count: '2', frontier: sent.hash });
  });

  it.concurrent('the spending policy refuses a send over its per-send limit, and nothing reaches the node; one within it is sent', async () => {
    const payer = await customer(XNO);
    const other = publicKeyToAddress(randomBytes(32));
    expect((await payer.user.json(['policy', 'set', 'per-send', '0.1']))._code).toBe(0);
    const before = await accountInfo(payer.address);
    const refused = await payer.user.json<{ error: { code: string; rule: string } }>(['send', other, '0.2', '--yes']);
    expect(refused).toMatchObject({ _code: 7, error: { code: 'POLICY_DENIED', rule: 'per-send' } });
    expect(await accountInfo(payer.address)).toMatchObject({ balance: XNO.toString(), block_count: '1', frontier: before.frontier });
    expect((await node.rpc('account_balance', { account: other })).receivable).toBe('0');

    const allowed = await payer.user.json<{ hash: string }>(['send', other, '0.1', '--yes']);
    expect(allowed._code).toBe(0);
    await node.waitConfirmed(allowed.hash);
    expect(await accountInfo(payer.address)).toMatchObject({ balance: (XNO - XNO / 10n).toString(), block_count: '2', frontier: allowed.hash });
    expect((await node.rpc('account_balance', { account: other })).receivable).toBe((XNO / 10n).toString());
  });
});
