import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeClient } from '../../../src/api/node-client.js';
import type { HttpServer } from '../../../src/http/server.js';
import { hashBlock, type StateBlock } from '../../../src/nano/index.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { NanoSettler } from '../../../src/x402/facilitator.js';
import { startFacilitatorServer } from '../../../src/x402/facilitator-server.js';
import type { PaymentPayload } from '../../../src/x402/protocol.js';
import { FileSettlementRecord } from '../../../src/x402/settlements.js';
import { SandboxClient, sandboxWithClient } from '../../helpers/ledger/chain.js';
import { startFaultyProxy, type FaultyProxy } from '../../helpers/network/faulty-proxy.js';
import { tempDir } from '../../helpers/processes/temp.js';
import { payerAndPayee, paymentFor, requirementOn } from '../../helpers/ledger/x402.js';

let sb: RunningSandbox;
let client: SandboxClient;
let node: NodeClient;
let dir: string;
/** A node that does not say the blocks in `unconfirmed` are confirmed, and refuses blocks of the payers in `forking` as forks. */
let liar: FaultyProxy;
const unconfirmed = new Set<string>();
const forking = new Set<string>();
/** Facilitators on one settlement record: one on the sandbox's node, one on the lying node. */
let honest: HttpServer;
let unconfirming: HttpServer;

beforeAll(async () => {
  ({ sb, client } = await sandboxWithClient());
  node = new NodeClient({ url: sb.url });
  dir = await tempDir('nanopay-settlements-');
  liar = await startFaultyProxy(sb.url, () => ({
    node: (answer, body) => {
      if (body.action === 'process' && forking.has((body.block as { account: string }).account)) return { error: 'Fork' };
      return body.action === 'block_info' && unconfirmed.has(String(body.hash).toUpperCase()) ? { ...answer, confirmed: 'false' } : answer;
    },
  }));
  const start = (ledger: NodeClient) => startFacilitatorServer({ host: '127.0.0.1', port: 0, settler: new NanoSettler(ledger, new FileSettlementRecord(dir), { pollMs: 10, firstPollMs: 10, confirmTimeoutMs: 200 }) });
  honest = await start(node);
  unconfirming = await start(new NodeClient({ url: liar.url }));
});
afterAll(async () => {
  await honest.close();
  await unconfirming.close();
  await liar.close();
  await sb.close();
});

async function post(server: HttpServer, path: 'verify' | 'settle', payment: PaymentPayload): Promise<Record<string, unknown>> {
  const response = await fetch(`${server.url}/${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ x402Version: 2, paymentPayload: payment, paymentRequirements: payment.accepted }) });
  return (await response.json()) as Record<string, unknown>;
}

async function status(server: HttpServer, hash: string): Promise<{ status: number; body: Record<string, any> }> {
  const response = await fetch(`${server.url}/settlements/${hash}`);
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

const hashOf = (payment: PaymentPayload): string => {
  const { link_as_account: _, ...block } = payment.payload.block as StateBlock & { link_as_account?: string };
  return hashBlock(block);
};

describe('GET /settlements/:hash: the outcome of a settlement whose answer the caller lost (issue 32, part 5)', () => {
  it('settled: the block this facilitator settled', async () => {
    const { payer, payee } = await payerAndPayee(client);
    const payment = await paymentFor(client, payer, await requirementOn(client, payee.address, 21n));
    expect(await post(honest, 'settle', payment)).toMatchObject({ success: true, transaction: hashOf(payment) });
    const { status: code, body } = await status(honest, hashOf(payment).toLowerCase());
    expect(code).toBe(200);
    expect(body).toEqual({ transaction: hashOf(payment), status: 'settled', network: 'nano:dev', at: expect.any(String) });
  });

  it('unknown: a block never claimed here (only verified, or never seen); asking publishes nothing', async () => {
    const { payer, payee } = await payerAndPayee(client);
    const payment = await paymentFor(client, payer, await requirementOn(client, payee.address, 22n));
    expect(await post(honest, 'verify', payment)).toMatchObject({ isValid: true });
    for (let i = 0; i < 3; i++) expect((await status(honest, hashOf(payment))).body).toMatchObject({ status: 'unknown', transaction: hashOf(payment) });
    await expect(node.blockInfo(hashOf(payment))).rejects.toMatchObject({ code: 'BLOCK_NOT_FOUND' });
    expect((await status(honest, randomBytes(32).toString('hex'))).body.status).toBe('unknown');
  });

  it('pending: published, not yet seen confirmed; settled once the ledger confirms it', async () => {
    const { payer, payee } = await payerAndPayee(client);
    const payment = await paymentFor(client, payer, await requirementOn(client, payee.address, 23n));
    unconfirmed.add(hashOf(payment));
    expect(await post(unconfirming, 'settle', payment)).toMatchObject({ success: false, errorReason: 'settlement_pending', transaction: hashOf(payment) });
    expect((await status(unconfirming, hashOf(payment))).body).toMatchObject({ status: 'pending', at: expect.any(String) });
    // The same record read against a node that sees the block confirmed.
    expect((await status(honest, hashOf(payment))).body).toMatchObject({ status: 'settled' });
  });

  it('refused: the ledger refused the block for good', async () => {
    const { payer, payee } = await payerAndPayee(client);
    const payment = await paymentFor(client, payer, await requirementOn(client, payee.address, 24n));
    forking.add(payer.address);
    try {
      expect(await post(unconfirming, 'settle', payment)).toMatchObject({ success: false, errorReason: 'invalid_transaction_state' });
    } finally {
      forking.delete(payer.address);
    }
    expect((await status(honest, hashOf(payment))).body).toMatchObject({ status: 'refused', reason: expect.stringMatching(/refused/) });
  });

  it('a hash that is not 64 hex digits is refused with 400', async () => {
    const answer = await status(honest, 'not-a-hash');
    expect(answer.status).toBe(400);
    expect(JSON.stringify(answer.body)).toMatch(/INVALID_HEX/);
  });
});
