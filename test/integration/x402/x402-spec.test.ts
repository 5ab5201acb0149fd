import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeClient } from '../../../src/api/node-client.js';
import { hashBlock, type StateBlock } from '../../../src/nano/index.js';
import { Session } from '../../../src/ops/session.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { NanoSettler, type SettlingLedger } from '../../../src/x402/facilitator.js';
import { x402Middleware } from '../../../src/x402/middleware.js';
import { Paywall } from '../../../src/x402/paywall.js';
import { profileSettler } from '../../../src/x402/profile-settler.js';
import { decodeHeader, encodeHeader, parsePaymentRequired, type PaymentPayload } from '../../../src/x402/protocol.js';
import { FileSettlementRecord } from '../../../src/x402/settlements.js';
import { SandboxClient, newAccount, sandboxWithClient } from '../../helpers/ledger/chain.js';
import { PASSWORD, newUser } from '../../helpers/processes/cli.js';
import { startFaultyProxy } from '../../helpers/network/faulty-proxy.js';
import { tempDir } from '../../helpers/processes/temp.js';
import { payerAndPayee, paymentFor, requirementOn } from '../../helpers/ledger/x402.js';

let sb: RunningSandbox;
let client: SandboxClient;
let node: NodeClient;
const servers: Server[] = [];

beforeAll(async () => {
  ({ sb, client } = await sandboxWithClient());
  node = new NodeClient({ url: sb.url });
});
afterAll(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
  await sb.close();
});

/** The sandbox's node, with `blockInfo` and `accountInfo` passing through `tweak`s. */
function ledgerWith(tweak: Partial<Pick<SettlingLedger, 'blockInfo' | 'accountInfo'>>): SettlingLedger {
  return {
    kind: node.kind,
    accountInfo: tweak.accountInfo ?? ((a) => node.accountInfo(a)),
    blockInfo: tweak.blockInfo ?? ((h) => node.blockInfo(h)),
    activeDifficulty: () => node.activeDifficulty(),
    network: () => node.network(),
    publish: (b, s, h) => node.publish(b, s, h),
  };
}

async function shopOn(settler: NanoSettler, payTo: string): Promise<string> {
  const charge = x402Middleware(new Paywall({ payTo, settler, workThreshold: (await client.advertisedThresholds()).send }), '0.001');
  const shop = createServer((req, res) => void charge(req, res, () => res.end('paid content')));
  await new Promise<void>((resolve) => shop.listen(0, '127.0.0.1', resolve));
  servers.push(shop);
  return `http://127.0.0.1:${(shop.address() as AddressInfo).port}`;
}

async function challengeOf(url: string): Promise<PaymentPayload['accepted'] & { resource: { url: string } }> {
  const required = parsePaymentRequired(decodeHeader((await fetch(url)).headers.get('payment-required') as string, 'PAYMENT-REQUIRED'));
  return { ...(required.accepts[0] as PaymentPayload['accepted']), resource: required.resource };
}

describe('link_as_account (issue 35, point 4)', () => {
  it('a payload whose link_as_account disagrees with its link is refused; one without it is paid when link is payTo', async () => {
    const payTo = newAccount().address;
    const url = await shopOn(new NanoSettler(node, new FileSettlementRecord(await tempDir()), {}), payTo);
    const { resource, ...accepted } = await challengeOf(url);
    const { payer } = await payerAndPayee(client);
    const payment = await paymentFor(client, payer, accepted);
    const block = payment.payload.block as Record<string, string>;
    const lying = await fetch(url, { headers: { 'payment-signature': encodeHeader({ ...payment, payload: { block: { ...block, link_as_account: newAccount().address } } }) } });
    expect([lying.status, decodeHeader(lying.headers.get('payment-required') as string, 'PAYMENT-REQUIRED').error]).toEqual([402, 'invalid_payload']);
    const { link_as_account: _, ...bare } = block;
    const paid = await fetch(url, { headers: { 'payment-signature': encodeHeader({ ...payment, resource, payload: { block: bare } }) } });
    expect([paid.status, await paid.text()]).toEqual([200, 'paid content']);
    expect(decodeHeader(paid.headers.get('payment-response') as string, 'PAYMENT-RESPONSE')).toMatchObject({ success: true, transaction: hashBlock(bare as unknown as StateBlock), network: 'nano:dev' });
  });
});

describe('settlement timing (issue 35, point 5)', () => {
  /** A clock the settler's waits move: no wall-clock time is read or slept. */
  function clock(): { now: () => number; wait: (ms: number) => Promise<void>; waits: number[] } {
    let t = 0;
    const waits: number[] = [];
    return { now: () => t, wait: async (ms) => void (waits.push(ms), (t += ms)), waits };
  }

  it('reads at once, then after 0.5 s, then every second', async () => {
    const { payer, payee } = await payerAndPayee(client);
    const req = await requirementOn(client, payee.address, 21n);
    const payment = await paymentFor(client, payer, req);
    let reads = 0;
    const slow = ledgerWith({ blockInfo: async (h) => ({ ...(await node.blockInfo(h)), ...(h === hashBlock(payment.payload.block as never) && ++reads <= 3 ? { confirmed: false } : {}) }) });
    const c = clock();
    const settled = await new NanoSettler(slow, new FileSettlementRecord(await tempDir()), { now: c.now, wait: c.wait }).settle(payment, req);
    expect(settled).toMatchObject({ success: true, network: 'nano:dev' });
    expect([reads, c.waits]).toEqual([4, [500, 1000, 1000]]);
  });

  it('a block not confirmed within maxTimeoutSeconds is answered settlement_pending with its hash: the payer re-presents, never re-signs', async () => {
    const { payer, payee } = await payerAndPayee(client);
    const req = { ...(await requirementOn(client, payee.address, 22n)), maxTimeoutSeconds: 3 };
    const payment = await paymentFor(client, payer, req);
    const hash = hashBlock(payment.payload.block as never);
    const never = ledgerWith({ blockInfo: async (h) => ({ ...(await node.blockInfo(h)), ...(h === hash ? { confirmed: false } : {}) }) });
    const c = clock();
    const settled = await new NanoSettler(never, new FileSettlementRecord(await tempDir()), { now: c.now, wait: c.wait }).settle(payment, req);
    expect(settled).toEqual({ success: false, errorReason: 'settlement_pending', errorMessage: expect.stringMatching(/not confirmed within 3000 ms/), payer: payer.address, transaction: hash, network: 'nano:dev' });
    expect(c.waits).toEqual([500, 1000, 1000, 500]);
  });

  it("the node's WebSocket confirmation ends a wait at once (here the waits would never end by themselves)", async () => {
    const { payer, payee } = await payerAndPayee(client);
    const req = await requirementOn(client, payee.address, 23n);
    const payment = await paymentFor(client, payer, req);
    const hash = hashBlock(payment.payload.block as never);
    let reads = 0;
    // The node says "not confirmed" on the first read of the block, as a real one would a moment after process.
    const proxy = await startFaultyProxy(sb.url, () => ({ node: (answer, body) => (body.action === 'block_info' && body.hash === hash && answer.error === undefined && ++reads === 1 ? { ...answer, confirmed: 'false' } : answer) }));
    try {
      const user = await newUser(sb.url, { NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: proxy.url, NANOPAY_NODE_WS_URL: sb.wsUrl });
      const settler = await profileSettler(new Session({ password: async () => PASSWORD, env: user.env }), { wait: () => new Promise(() => undefined), firstPollMs: 3_600_000, pollMs: 3_600_000 });
      expect(await settler.settle(payment, req)).toMatchObject({ success: true, transaction: hash });
      expect(reads).toBe(2);
    } finally {
      await proxy.close();
    }
  });
});

describe('fork protection at the resource server (issue 35, point 6)', () => {
  it('while a payment on a previous is being verified, another on the same previous is refused at once', async () => {
    // The ledger's account reads wait until the test opens them: the first payment stays in verification.
    let open = (): void => undefined;
    const closed = new Promise<void>((resolve) => (open = resolve));
    let reads = 0;
    let readAgain = (): void => undefined;
    const readTwice = new Promise<'read twice'>((resolve) => (readAgain = () => resolve('read twice')));
    const gated = ledgerWith({
      accountInfo: async (a) => {
        if (++reads === 2) readAgain();
        await closed;
        return node.accountInfo(a);
      },
    });
    const url = await shopOn(new NanoSettler(gated, new FileSettlementRecord(await tempDir()), {}), newAccount().address);
    const { resource, ...accepted } = await challengeOf(url);
    const { payer } = await payerAndPayee(client);
    const first = await paymentFor(client, payer, accepted);
    // A rival on the same previous for the same requirement (another representative: refused only once the ledger is read).
    const rival = await paymentFor(client, payer, accepted, (b) => ({ ...b, representative: newAccount().address }));
    const firstAnswer = fetch(url, { headers: { 'payment-signature': encodeHeader({ ...first, resource }) } });
    while (reads === 0) await new Promise((resolve) => setImmediate(resolve));
    const outcome = await Promise.race([fetch(url, { headers: { 'payment-signature': encodeHeader({ ...rival, resource }) } }), readTwice]);
    expect(outcome, 'the rival was verified against the ledger alongside the first').not.toBe('read twice');
    const answer = outcome as Response;
    expect([answer.status, decodeHeader(answer.headers.get('payment-required') as string, 'PAYMENT-REQUIRED').error]).toEqual([402, 'transaction_in_flight']);
    open();
    const paid = await firstAnswer;
    expect([paid.status, await paid.text()]).toEqual([200, 'paid content']);
  });
});
