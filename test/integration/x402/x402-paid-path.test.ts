import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeClient } from '../../../src/api/node-client.js';
import { Metrics } from '../../../src/http/metrics.js';
import type { HttpServer } from '../../../src/http/server.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { NanoSettler, type SettlingLedger } from '../../../src/x402/facilitator.js';
import { Paywall } from '../../../src/x402/paywall.js';
import { startPaywallServer } from '../../../src/x402/paywall-server.js';
import { decodeHeader, encodeHeader, parsePaymentRequired } from '../../../src/x402/protocol.js';
import { FileSettlementRecord } from '../../../src/x402/settlements.js';
import { SandboxClient, sandboxWithClient } from '../../helpers/ledger/chain.js';
import { tempDir } from '../../helpers/processes/temp.js';
import { payerAndPayee, paymentFor, requirementOn } from '../../helpers/ledger/x402.js';

// Issue 36: what a paid request asks of the ledger, and how long each step takes. Every check stays: the payer's head
// is read and its frontier block checked, and a payment counts only from a block the ledger says is confirmed.

let sb: RunningSandbox;
let client: SandboxClient;
let upstream: Server;
let upstreamUrl: string;
const servers: HttpServer[] = [];

beforeAll(async () => {
  ({ sb, client } = await sandboxWithClient());
  upstream = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('served'));
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const s of servers) await s.close();
  upstream.closeAllConnections();
  await new Promise((resolve) => upstream.close(resolve));
  await sb.close();
});

/** The node's reads, in the order asked (and answered). */
function recorded(node: NodeClient, calls: string[], onAccountInfo: () => void = () => undefined): SettlingLedger {
  return {
    kind: node.kind,
    network: () => node.network(),
    activeDifficulty: () => node.activeDifficulty(),
    accountInfo: async (address) => {
      calls.push(`accountInfo ${address}`);
      onAccountInfo();
      return node.accountInfo(address);
    },
    blockInfo: async (hash) => {
      calls.push(`blockInfo ${hash}`);
      return node.blockInfo(hash);
    },
    publish: async (block, subtype, hash) => {
      calls.push(`publish ${hash}`);
      return node.publish(block, subtype, hash);
    },
  };
}

describe('a paid request on the ledger (issue 36)', () => {
  it("reads the payer's account info and the block's previous at once, and not the payment's own block", async () => {
    const { payer, payee } = await payerAndPayee(client);
    const requirements = await requirementOn(client, payee.address, 10n ** 24n);
    const payment = await paymentFor(client, payer, requirements);
    const block = payment.payload.block as { previous: string };
    const calls: string[] = [];
    let askedFirst: string[] = [];
    const ledger = recorded(new NodeClient({ url: sb.url }), calls, () => (askedFirst = [...calls]));
    const settler = new NanoSettler(ledger, new FileSettlementRecord(await tempDir('nanopay-x402-path-')), { pollMs: 10 });
    const verified = await settler.check(payment, requirements);
    // The previous was asked for before account info answered (at once, not one after the other).
    expect(askedFirst).toEqual([`blockInfo ${block.previous}`, `accountInfo ${payer.address}`]);
    expect(calls).toEqual([`blockInfo ${block.previous}`, `accountInfo ${payer.address}`]);
    // Settling: publish, then the confirmation read of the block itself.
    calls.length = 0;
    expect(settler.reserve(verified)).toBe(true);
    const settled = await settler.settleReserved(verified);
    expect(settled.success).toBe(true);
    expect(calls).toEqual([`publish ${verified.cheque.hash}`, `blockInfo ${verified.cheque.hash}`]);
  });

  it('still refuses the same block once it is in the ledger (transaction_already_settled), and a block on a stale previous', async () => {
    const { payer, payee } = await payerAndPayee(client);
    const requirements = await requirementOn(client, payee.address, 10n ** 24n);
    const payment = await paymentFor(client, payer, requirements);
    const stale = await paymentFor(client, payer, requirements, (b) => ({ ...b, balance: (BigInt(b.balance) - 1n).toString() }));
    const node = new NodeClient({ url: sb.url });
    const settler = new NanoSettler(node, new FileSettlementRecord(await tempDir('nanopay-x402-path-')), { pollMs: 10 });
    expect((await settler.settle(payment, requirements)).success).toBe(true);
    // A second settler (another record) asked about the very block: the ledger holds it.
    const other = new NanoSettler(node, new FileSettlementRecord(await tempDir('nanopay-x402-path-')), { pollMs: 10 });
    expect(await other.verify(payment, requirements)).toMatchObject({ isValid: false, invalidReason: 'transaction_already_settled' });
    // Another block on the same (now old) previous: its previous is no longer the frontier.
    expect(await other.verify(stale, requirements)).toMatchObject({ isValid: false, invalidReason: 'frontier_mismatch' });
  });

  it("times each step of a paid request in the paywall's nanopay_x402_phase_seconds", async () => {
    const metrics = new Metrics();
    const node = new NodeClient({ url: sb.url });
    const settler = new NanoSettler(node, new FileSettlementRecord(await tempDir('nanopay-x402-path-')), { pollMs: 10 });
    const { payer, payee } = await payerAndPayee(client);
    const paywall = new Paywall({ payTo: payee.address, settler, workThreshold: (await client.advertisedThresholds()).send });
    const readiness = { state: async () => ({ ready: true, checks: {} }) } as never;
    const server = await startPaywallServer({ host: '127.0.0.1', port: 0, upstream: upstreamUrl, paywall, routes: [], defaultRaw: 10n ** 24n, probes: { metrics, readiness } });
    servers.push(server);
    const required = parsePaymentRequired(decodeHeader((await fetch(`${server.url}/x`)).headers.get('payment-required') as string, 'PAYMENT-REQUIRED'));
    const requirements = required.accepts[0] as NonNullable<(typeof required.accepts)[0]>;
    const payment = await paymentFor(client, payer, requirements);
    const paid = await fetch(`${server.url}/x`, { headers: { 'payment-signature': encodeHeader({ ...payment, resource: required.resource }) } });
    expect([paid.status, await paid.text()]).toEqual([200, 'served']);
    const text = await metrics.render();
    for (const phase of ['signature', 'head', 'checks', 'record', 'upstream', 'claim', 'publish', 'confirm', 'settled']) {
      expect(text, phase).toMatch(new RegExp(`^nanopay_x402_phase_seconds_count\\{phase="${phase}"\\} 1$`, 'm'));
    }
  });
});
