import { rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { wrapFetchWithPayment, x402Client, x402HTTPClient } from '@x402/fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { NanoPay } from '../../../src/sdk/nanopay.js';
import { nanoExactClientScheme } from '../../../src/x402/schemes.js';
import { PASSWORD, type CliUser } from '../../helpers/processes/cli.js';
import { paywallShop } from '../../helpers/ledger/x402.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import type { RunningCommand } from '../../helpers/processes/serve.js';
import { addressToPublicKey, xnoToRaw } from '../../../src/nano/index.js';

// Issue 41, point 2: host rules hold on the SDK's @x402/fetch path as on `nanopay fetch`.
let sb: RunningSandbox;
let merchant: CliUser;
let customer: CliUser;
let merchantAddress: string;
let upstream: Server;
let paywall: RunningCommand<{ url: string }>;
let host: string;

beforeAll(async () => {
  sb = await sandbox();
  upstream = createServer((_req, res) => res.end('{"data":42}'));
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  ({ merchant, customer, merchantAddress, paywall } = await paywallShop(sb, `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, '0.004'));
  host = new URL(paywall.printed.url).host;
});
afterAll(async () => {
  await paywall.stop();
  upstream.close();
  await sb.close();
  for (const u of [merchant, customer]) await rm(u.configDir, { recursive: true, force: true });
});

async function policy(...args: string[]): Promise<void> {
  const done = await customer.run(['policy', ...args]);
  expect([done.code, done.stderr]).toEqual([0, '']);
}

/** @x402/fetch as docs/x402.md wires it: with the scheme's onPaymentRequired on the HTTP client (`withUrl`), or the bare x402Client. */
function payingFetch(nanopay: NanoPay, withUrl: boolean): typeof fetch {
  const scheme = nanoExactClientScheme(nanopay, { maxXno: '0.01' });
  const client = x402Client.fromConfig({
    schemes: [{ network: 'nano:dev', client: scheme as never }],
    spendControls: { allowedAssets: [{ network: 'nano:dev', asset: 'XNO', maxAmountPerPayment: xnoToRaw('0.01').toString() }] },
  });
  return wrapFetchWithPayment(fetch, withUrl ? new x402HTTPClient(client).onPaymentRequired(scheme.onPaymentRequired) : client) as typeof fetch;
}

async function audit(): Promise<Record<string, string>[]> {
  const out = (await customer.run(['audit', '--json'])).stdout.trim();
  return out.split('\n').map((line) => JSON.parse(line) as Record<string, string>).filter((r) => r.kind === 'x402');
}

/** Sends to the merchant on the ledger. */
function merchantPayments(): number {
  const key = addressToPublicKey(merchantAddress);
  return [...sb.service.ledger.blocks.values()].filter((b) => b.subtype === 'send' && b.block.link.toUpperCase() === key).length;
}

describe('host rules on the @x402/fetch path', () => {
  it('deny --host: refused with the URL known, refused closed without it (never paid); the audit names the host', async () => {
    await policy('set', 'deny', '--host', host);
    try {
      const nanopay = new NanoPay({ password: PASSWORD, env: customer.env });
      const before = merchantPayments();
      await expect(payingFetch(nanopay, true)(`${paywall.printed.url}/data`)).rejects.toThrow(/deny list of hosts/);
      await expect(payingFetch(nanopay, false)(`${paywall.printed.url}/data`)).rejects.toThrow(/did not say which host/);
      // Another spelling of the host is the same host.
      const spelled = new URL(paywall.printed.url);
      await expect(payingFetch(nanopay, true)(`http://127.1:${spelled.port}/data`)).rejects.toThrow(/deny list of hosts/);
      expect(merchantPayments()).toBe(before);
      const refused = (await audit()).slice(-3);
      expect(refused.map((r) => [r.decision, r.host ?? null, r.rule])).toEqual([
        ['denied', host, 'deny --host'],
        ['denied', null, 'host unknown'],
        ['denied', host, 'deny --host'],
      ]);
    } finally {
      await policy('unset', 'deny', '--host', host);
    }
  });

  it("a host's day budget counts the payments @x402/fetch made to it, and refuses the one past it", async () => {
    await policy('set', 'day', '0.006', '--host', host);
    try {
      const nanopay = new NanoPay({ password: PASSWORD, env: customer.env });
      const paid = await payingFetch(nanopay, true)(`${paywall.printed.url}/data?n=1`);
      expect(paid.status).toBe(200);
      const before = merchantPayments();
      await expect(payingFetch(nanopay, true)(`${paywall.printed.url}/data?n=2`)).rejects.toThrow(/over the budget of 0\.006 XNO/);
      await expect(payingFetch(nanopay, false)(`${paywall.printed.url}/data?n=3`)).rejects.toThrow(/did not say which host/);
      expect(merchantPayments()).toBe(before);
      const trail = (await audit()).slice(-3);
      expect(trail.map((r) => [r.decision, r.host ?? null, r.rule ?? null])).toEqual([
        ['allowed', host, null],
        ['denied', host, `day --host ${host}`],
        ['denied', null, 'host unknown'],
      ]);
      await nanopay.lanesIdle();
    } finally {
      await policy('unset', 'day', '--host', host);
    }
  });

  it('without host rules the bare x402Client still pays', async () => {
    const nanopay = new NanoPay({ password: PASSWORD, env: customer.env });
    const paid = await payingFetch(nanopay, false)(`${paywall.printed.url}/data?n=4`);
    expect(paid.status).toBe(200);
    await nanopay.lanesIdle();
  });
});
