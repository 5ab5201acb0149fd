import { rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client } from '@x402/fetch';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeClient } from '../../../src/api/node-client.js';
import { hashBlock, xnoToRaw, type StateBlock } from '../../../src/nano/index.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { NanoPay } from '../../../src/sdk/nanopay.js';
import { nanoRequirement } from '../../../src/x402/nano-exact.js';
import { signCheque } from '../../../src/x402/client.js';
import { nanoExactClientScheme, nanoExactServerScheme } from '../../../src/x402/schemes.js';
import { userSession } from '../../helpers/ledger/backend-users.js';
import { PASSWORD, type CliUser } from '../../helpers/processes/cli.js';
import { nodeMerchantAndCustomer } from '../../helpers/ledger/node-users.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { startCommand, type RunningCommand } from '../../helpers/processes/serve.js';
import { stateBlockOf } from '../../helpers/ledger/chain.js';

let sb: RunningSandbox;
let merchant: CliUser;
let customer: CliUser;
let merchantAddress: string;
let facilitator: RunningCommand<{ url: string }>;
let node: NodeClient;

beforeAll(async () => {
  sb = await sandbox();
  ({ merchant, customer, merchantAddress } = await nodeMerchantAndCustomer(sb, {}));
  facilitator = await startCommand(['facilitator', '--json'], merchant.env);
  node = new NodeClient({ url: sb.url });
});
afterAll(async () => {
  await facilitator.stop();
  await sb.close();
  for (const u of [merchant, customer]) await rm(u.configDir, { recursive: true, force: true });
});

async function listen(app: express.Express): Promise<{ url: string; server: Server }> {
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe('HTTPFacilitatorClient (@x402/core) against nanopay facilitator', () => {
  it('getSupported passes the package schema; verify then settle; a replay fails', async () => {
    const client = new HTTPFacilitatorClient({ url: facilitator.printed.url });
    const supported = await client.getSupported();
    expect(supported.kinds).toContainEqual(expect.objectContaining({ x402Version: 2, scheme: 'exact', network: 'nano:dev' }));
    expect(supported).toMatchObject({ extensions: [], signers: {} });

    const threshold = String(supported.kinds[0]?.extra?.workThreshold);
    const requirements = nanoRequirement(merchantAddress, xnoToRaw('0.002'), 'nano:dev', threshold);
    const block = await signCheque(userSession(customer), requirements, { maxXno: '0.01' });
    const payload = { x402Version: 2, resource: { url: 'http://example/r' }, accepted: requirements, payload: { block } };
    const verified = await client.verify(payload as never, requirements as never);
    expect(verified).toMatchObject({ isValid: true, payer: (block as StateBlock).account });
    const settled = await client.settle(payload as never, requirements as never);
    const hash = hashBlock(block);
    expect(settled).toMatchObject({ success: true, transaction: hash, network: 'nano:dev' });
    expect((await node.blockInfo(hash)).confirmed).toBe(true);
    const replay = await client.settle(payload as never, requirements as never);
    expect(replay.success).toBe(false);

    // Two settles of one new block at once, over HTTP: exactly one success.
    const block2 = await signCheque(userSession(customer), requirements, { maxXno: '0.01' });
    const payload2 = { ...payload, payload: { block: block2 } };
    const both = await Promise.all([client.settle(payload2 as never, requirements as never), client.settle(payload2 as never, requirements as never)]);
    expect(both.filter((r) => r.success).map((r) => r.transaction)).toEqual([hashBlock(block2)]);
  });
});

describe('an @x402/express resource server using nanopay facilitator', () => {
  it('is paid by nanopay fetch', async () => {
    const server = new x402ResourceServer(new HTTPFacilitatorClient({ url: facilitator.printed.url })).register('nano:dev', nanoExactServerScheme as never);
    const app = express();
    app.use(paymentMiddleware({ 'GET /weather': { accepts: { scheme: 'exact', price: '0.003', network: 'nano:dev', payTo: merchantAddress }, description: 'Weather' } }, server));
    app.get('/weather', (_req, res) => void res.json({ weather: 'sunny' }));
    const shop = await listen(app);
    try {
      const unpaid = await fetch(`${shop.url}/weather`);
      expect(unpaid.status).toBe(402);
      const paid = await customer.json<{ status: number; body: string; payment: Record<string, any> }>(['fetch', `${shop.url}/weather`, '--max', '0.01', '--yes']);
      expect(paid.status).toBe(200);
      expect(JSON.parse(paid.body)).toEqual({ weather: 'sunny' });
      expect(paid.payment).toMatchObject({ pay_to: merchantAddress, amount: '0.003', settlement: { success: true, transaction: paid.payment.hash } });
      const info = await node.blockInfo(paid.payment.hash);
      expect([info.confirmed, info.amountRaw]).toEqual([true, xnoToRaw('0.003')]);
    } finally {
      shop.server.closeAllConnections();
      shop.server.close();
    }
  });
});

describe('wrapFetchWithPayment (@x402/fetch) with nanopay scheme paying nanopay paywall', () => {
  it('decodes our 402 and 200 headers and pays once', async () => {
    const upstream = express();
    upstream.get('/data', (_req, res) => void res.json({ data: 42 }));
    const up = await listen(upstream);
    const paywall = await startCommand<{ url: string }>(['paywall', '--upstream', up.url, '--price', '0.004', '--to', merchantAddress, '--json'], merchant.env);
    try {
      const nanopay = new NanoPay({ password: PASSWORD, env: customer.env });
      const client = x402Client.fromConfig({
        schemes: [{ network: 'nano:dev', client: nanoExactClientScheme(nanopay, { maxXno: '0.01' }) as never }],
        spendControls: { allowedAssets: [{ network: 'nano:dev', asset: 'XNO', maxAmountPerPayment: xnoToRaw('0.01').toString() }] },
      });
      const payingFetch = wrapFetchWithPayment(fetch, client);
      const response = await payingFetch(`${paywall.printed.url}/data`);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ data: 42 });
      const settlement = decodePaymentResponseHeader(response.headers.get('payment-response') as string);
      expect(settlement).toMatchObject({ success: true, network: 'nano:dev' });
      const info = await node.blockInfo(settlement.transaction);
      expect([info.confirmed, info.amountRaw]).toEqual([true, xnoToRaw('0.004')]);
      // The cheque is resolved by the account's next operation: found cashed, recorded paid once.
      await nanopay.receive();
      expect(await nanopay.session.journal.read(stateBlockOf(info).account)).toBeUndefined();
    } finally {
      await paywall.stop();
      up.server.closeAllConnections();
      up.server.close();
    }
  });
});
