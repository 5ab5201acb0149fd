import { spawnSync } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashBlock, type StateBlock } from '../../../src/nano/index.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { X402Refusal, verifyNanoPayment } from '../../../src/x402/nano-exact.js';
import { NanoSettler } from '../../../src/x402/facilitator.js';
import { FileSettlementRecord } from '../../../src/x402/settlements.js';
import type { PaymentPayload } from '../../../src/x402/protocol.js';
import { startFaultyProxy } from '../../helpers/network/faulty-proxy.js';
import { NodeClient } from '../../../src/api/node-client.js';
import { SandboxClient, sandboxWithClient } from '../../helpers/ledger/chain.js';
import { payerAndPayee, paymentFor, requirementOn, sandboxSettler } from '../../helpers/ledger/x402.js';

let sb: RunningSandbox;
let client: SandboxClient;
let settler: NanoSettler;
let node: NodeClient;
let dir: string;

beforeAll(async () => {
  ({ sb, client } = await sandboxWithClient());
  ({ settler, dir, node } = await sandboxSettler(sb.url));
});
afterAll(async () => {
  await sb.close();
  await rm(dir, { recursive: true, force: true });
});

async function refusal(payment: PaymentPayload, requirements = payment.accepted, ledger = node): Promise<string> {
  try {
    await verifyNanoPayment(ledger, payment, requirements, 'nano:dev');
  } catch (error) {
    if (error instanceof X402Refusal) return error.reason;
    throw error;
  }
  return 'valid';
}

describe('verifying a Nano exact payment (negative vectors)', () => {
  it('accepts a well-made payment and refuses each broken one', async () => {
    const { payer, payee } = await payerAndPayee(client);
    const req = await requirementOn(client, payee.address, 1000n);
    const good = await paymentFor(client, payer, req);
    expect(await refusal(good)).toBe('valid');

    const withBalance = (delta: bigint) => (b: StateBlock): StateBlock => ({ ...b, balance: (BigInt(b.balance) + delta).toString() });
    expect(await refusal(await paymentFor(client, payer, req, withBalance(1n)))).toBe('invalid_amount');
    expect(await refusal(await paymentFor(client, payer, req, withBalance(-1n)))).toBe('invalid_amount');
    const other = (await payerAndPayee(client)).payee;
    expect(await refusal(await paymentFor(client, payer, { ...req, payTo: other.address }), req)).toBe('invalid_payment_requirements');
    expect(await refusal(await paymentFor(client, payer, req, (b) => ({ ...b, link: (b.link.startsWith('0') ? '1' : '0') + b.link.slice(1) })))).toBe('invalid_recipient');

    const block = good.payload.block as Record<string, string>;
    const lying = { ...good, payload: { block: { ...block, link_as_account: other.address } } };
    expect(await refusal(lying)).toBe('invalid_payload');
    expect(await refusal({ ...good, payload: { block: { ...block, subtype: 'send' } } })).toBe('invalid_payload');
    expect(await refusal({ ...good, payload: { block: { ...block, hash: 'AA' } } })).toBe('invalid_payload');
    expect(await refusal({ ...good, payload: { block: { ...block, signature: block.signature!.replace(/^./, (c) => (c === '0' ? '1' : '0')) } } })).toBe('invalid_signature');
    expect(await refusal({ ...good, payload: { block: { ...block, work: '0000000000000000' } } })).toBe('insufficient_work');
    const low = SandboxClient.badWork(good.payload.block as unknown as StateBlock, (await client.advertisedThresholds()).send);
    expect(await refusal({ ...good, payload: { block: { ...block, work: low } } })).toBe('insufficient_work');
    expect(await refusal({ ...good, x402Version: 1 as 2 })).toBe('invalid_x402_version');
    expect(await refusal({ ...good, accepted: { ...req, amount: '999' } }, req)).toBe('invalid_payment_requirements');

    // Stale previous: the payer moved on after signing.
    await client.send(payer, other.address, 1n);
    expect(await refusal(good)).toBe('frontier_mismatch');
  });

  it('refuses a block on a frontier the node does not say is confirmed', async () => {
    const { payer, payee } = await payerAndPayee(client);
    const req = await requirementOn(client, payee.address, 5n);
    const payment = await paymentFor(client, payer, req);
    const proxy = await startFaultyProxy(sb.url, () => ({ node: (answer, body) => (body.action === 'block_info' ? { ...answer, confirmed: 'false' } : answer) }));
    try {
      expect(await refusal(payment, req, new NodeClient({ url: proxy.url }))).toBe('frontier_unconfirmed');
    } finally {
      await proxy.close();
    }
  });
});

describe('settling', () => {
  it('publishes, waits for confirmation, and settles one block once; a replay is refused', async () => {
    const { payer, payee } = await payerAndPayee(client);
    const req = await requirementOn(client, payee.address, 12345n);
    const payment = await paymentFor(client, payer, req);
    expect(await settler.verify(payment, req)).toEqual({ isValid: true, payer: payer.address });
    const settled = await settler.settle(payment, req);
    expect(settled).toMatchObject({ success: true, network: 'nano:dev', payer: payer.address, amount: '12345' });
    const info = await node.blockInfo(settled.transaction);
    expect(info.confirmed).toBe(true);
    expect(info.amountRaw).toBe(12345n);
    const replay = await settler.settle(payment, req);
    expect(replay).toMatchObject({ success: false, transaction: '' });
    expect(replay.errorReason).toMatch(/transaction_already_settled|frontier_mismatch/);
  });

  it('two concurrent settles of one block: exactly one success', async () => {
    const { payer, payee } = await payerAndPayee(client);
    const req = await requirementOn(client, payee.address, 7n);
    const payment = await paymentFor(client, payer, req);
    // A second settler on the same record, as another facilitator process would be.
    const twin = new NanoSettler(node, new FileSettlementRecord(dir), { pollMs: 10 });
    const answers = await Promise.all([settler.settle(payment, req), settler.settle(payment, req), twin.settle(payment, req), twin.settle(payment, req)]);
    expect(answers.filter((a) => a.success)).toHaveLength(1);
  });

  it('a publish without a clear answer is settlement_pending; the retry finishes it, once', async () => {
    const { payer, payee } = await payerAndPayee(client);
    const req = await requirementOn(client, payee.address, 11n);
    const payment = await paymentFor(client, payer, req);
    // The node takes the block but its answer is lost (a timeout in between).
    const proxy = await startFaultyProxy(sb.url, () => ({ node: (answer, body) => (body.action === 'process' ? { error: 'Timeout waiting for the network' } : answer) }));
    try {
      const lossy = new NanoSettler(new NodeClient({ url: proxy.url }), new FileSettlementRecord(dir), { pollMs: 10 });
      const first = await lossy.settle(payment, req);
      expect(first).toMatchObject({ success: false, errorReason: 'settlement_pending' });
      expect((await node.blockInfo(first.transaction)).confirmed).toBe(true);
      // The retry (@x402/core retries a settlement_pending once, unchanged), twice at once, by two processes' settlers: one success.
      const twin = new NanoSettler(node, new FileSettlementRecord(dir), { pollMs: 10 });
      const retries = await Promise.all([settler.settle(payment, req), twin.settle(payment, req), settler.settle(payment, req), twin.settle(payment, req)]);
      expect(retries.filter((r) => r.success).map((r) => r.transaction)).toEqual([first.transaction]);
      expect((await settler.settle(payment, req)).success).toBe(false);
    } finally {
      await proxy.close();
    }
  });

  it('a claim left by a settler that died is taken over for its block, never for a rival; a live one is in flight', async () => {
    const { payer, payee } = await payerAndPayee(client);
    const req = await requirementOn(client, payee.address, 13n);
    const payment = await paymentFor(client, payer, req);
    const block = payment.payload.block as unknown as StateBlock;
    const claimFile = join(dir, `${block.previous}.json`);
    const claim = (pid: number) => JSON.stringify({ hash: hashBlock(block), state: 'pending', at: new Date().toISOString(), pid, host: hostname() });
    await writeFile(claimFile, claim(process.pid), { mode: 0o600 });
    expect((await settler.settle(payment, req)).errorReason).toBe('transaction_in_flight');
    const dead = spawnSync(process.execPath, ['-e', '']).pid as number;
    await writeFile(claimFile, claim(dead), { mode: 0o600 });
    const req2 = { ...req, amount: '14' };
    expect((await settler.settle(await paymentFor(client, payer, req2), req2)).errorReason).toBe('transaction_in_flight');
    const settled = await settler.settle(payment, req);
    expect(settled).toMatchObject({ success: true, transaction: hashBlock(block) });
  });

  it('two rival blocks on one previous: at most one settles', async () => {
    const { payer, payee } = await payerAndPayee(client);
    const req = await requirementOn(client, payee.address, 9n);
    const first = await paymentFor(client, payer, req);
    const req2 = { ...req, amount: '10' };
    const second = await paymentFor(client, payer, req2);
    const answers = await Promise.all([settler.settle(first, req), settler.settle(second, req2)]);
    expect(answers.filter((a) => a.success)).toHaveLength(1);
  });
});
