import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addressToPublicKey } from '../../../src/nano/index.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { runCommand, type CliUser } from '../../helpers/processes/cli.js';
import { paywallShop } from '../../helpers/ledger/x402.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import type { RunningCommand } from '../../helpers/processes/serve.js';

// Issue 41, point 3: fetch and the SDK are bounded end to end; a rerun reports a settled payment; nothing stays stuck.
let sb: RunningSandbox;
let merchant: CliUser;
let customer: CliUser;
let merchantAddress: string;
let upstream: Server;
let paywall: RunningCommand<{ url: string }>;

beforeAll(async () => {
  sb = await sandbox();
  upstream = createServer((req, res) => res.end(JSON.stringify({ data: req.url })));
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  ({ merchant, customer, merchantAddress, paywall } = await paywallShop(sb, `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, '0.004'));
  // One lane: a payment that pinned it would stop every other.
  expect((await customer.run(['lanes', 'set', '1', '--fund', '0.5'])).code).toBe(0);
});
afterAll(async () => {
  await paywall.stop();
  upstream.close();
  await sb.close();
  for (const u of [merchant, customer]) await rm(u.configDir, { recursive: true, force: true });
});

/**
 * A seller in front of the paywall that passes unpaid requests and takes every
 * paid one without ever answering it: `settles` forwards it to the paywall
 * (which settles it), else it never reaches the paywall.
 */
async function silentSeller(settles: boolean): Promise<{ url: string; taken: () => number; close: () => Promise<void> }> {
  const kept: ServerResponse[] = [];
  const server = createServer((req, res) => {
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => name !== 'host')) as Record<string, string>;
    const forward = () => fetch(`${paywall.printed.url}${req.url ?? '/'}`, { headers });
    if (req.headers['payment-signature'] !== undefined) {
      kept.push(res);
      if (settles) void forward().then((answer) => answer.arrayBuffer());
      return;
    }
    void forward().then(async (answer) => {
      res.writeHead(answer.status, Object.fromEntries(answer.headers.entries()));
      res.end(Buffer.from(await answer.arrayBuffer()));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    taken: () => kept.length,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

function paymentsToMerchant(): string[] {
  const key = addressToPublicKey(merchantAddress);
  return [...sb.service.ledger.blocks.values()].filter((b) => b.subtype === 'send' && b.block.link.toUpperCase() === key).map((b) => b.hash);
}

function journal(): string[] {
  const dir = join(customer.configDir, 'journal');
  return existsSync(dir) ? readdirSync(dir).filter((f) => /^nano_\w+\.json$/.test(f)) : [];
}

async function audit(): Promise<Record<string, string>[]> {
  const out = (await customer.run(['audit', '--json'])).stdout.trim();
  return out === '' ? [] : out.split('\n').map((line) => JSON.parse(line) as Record<string, string>).filter((r) => r.kind === 'x402');
}

describe('x402 bounded end to end', () => {
  it('a seller that takes the paid request and never answers costs one --timeout; the lane is free for the next payment, and the cheque is cancelled', async () => {
    const seller = await silentSeller(false);
    try {
      const hung = await customer.json(['fetch', `${seller.url}/data?hung`, '--max', '0.01', '--yes', '--timeout', '2s'], { env: {} });
      expect(hung).toMatchObject({ _code: 5, error: { code: 'X402_UNSETTLED', message: expect.stringMatching(/did not answer within 2 s/) } });
      expect(seller.taken()).toBe(1);
      const cheque = (await audit()).at(-1) as Record<string, string>;
      expect(cheque).toMatchObject({ decision: 'allowed', status: 'in_flight' });
      // The one lane is not pinned: an honest payment takes it at once, and resolves the cheque it held first.
      const honest = await customer.json<{ status: number }>(['fetch', `${paywall.printed.url}/data?honest`, '--max', '0.01', '--yes']);
      expect([honest._code, honest.status]).toEqual([0, 200]);
      const trail = await audit();
      expect(trail.find((r) => r.hash === cheque.hash)?.status).toBe('cancelled');
      expect(paymentsToMerchant()).not.toContain(cheque.hash);
    } finally {
      await seller.close();
    }
  });

  it('a rerun with the same --id after the seller settled (the client gave up) gets the first answer under its payment id, never a bare 402, nothing paid again', async () => {
    const seller = await silentSeller(true);
    const before = paymentsToMerchant().length;
    try {
      const first = await customer.json(['fetch', `${seller.url}/data?settled`, '--max', '0.01', '--yes', '--timeout', '2s', '--id', 'settled-1']);
      expect(first).toMatchObject({ _code: 5, error: { code: 'X402_UNSETTLED' } });
    } finally {
      await seller.close();
    }
    expect(paymentsToMerchant()).toHaveLength(before + 1);
    // The paywall kept its answer under the payment id the block was presented with (x402's payment-identifier): the
    // rerun presents the same block and gets that answer. (A seller that keeps no answers answers 402: X402_PAID_NOT_SERVED, x402.test.ts.)
    for (const attempt of [1, 2]) {
      const rerun = await customer.json(['fetch', `${paywall.printed.url}/data?settled`, '--max', '0.01', '--yes', '--id', 'settled-1']);
      expect(rerun, `rerun ${attempt}`).toMatchObject({ _code: 0, status: 200, payment: { amount: '0.004', pay_to: merchantAddress, repeated: true, settlement_matches: true } });
    }
    expect(paymentsToMerchant()).toHaveLength(before + 1);
  });

  it('an SDK script that exits right after parallel payments through @x402/fetch, one to a seller that never answers, leaves no cheque on a lane when it awaits lanesIdle()', async () => {
    const seller = await silentSeller(false);
    const before = paymentsToMerchant().length;
    const script = join(customer.configDir, 'pay-and-exit.mjs');
    const dist = new URL('../../../dist/index.js', import.meta.url).href;
    const fetchPackage = new URL('../../../node_modules/@x402/fetch/dist/esm/index.mjs', import.meta.url).href;
    await writeFile(
      script,
      `import { NanoPay, nanoExactClientScheme } from '${dist}';
import { wrapFetchWithPayment, x402Client, x402HTTPClient } from '${fetchPackage}';
const nanopay = new NanoPay({ password: process.env.NANOPAY_PASSWORD });
const scheme = nanoExactClientScheme(nanopay, { maxXno: '0.01' });
const client = x402Client.fromConfig({ schemes: [{ network: 'nano:dev', client: scheme }], spendControls: { allowedAssets: [{ network: 'nano:dev', asset: 'XNO', maxAmountPerPayment: '${10n ** 28n}' }] } });
const paidFetch = wrapFetchWithPayment(fetch, new x402HTTPClient(client).onPaymentRequired(scheme.onPaymentRequired));
// Never answered: its cheque holds the one lane until its lease ends (within --timeout: NANOPAY_TIMEOUT), then is cancelled.
void paidFetch('${seller.url}/data?sdk-hung').catch(() => undefined);
while (!(await nanopay.lanes()).lanes.some((lane) => lane.outstanding !== null)) await new Promise((resolve) => setTimeout(resolve, 20));
const answers = await Promise.all([1, 2, 3].map((i) => paidFetch('${paywall.printed.url}/data?sdk=' + i).then((r) => r.status)));
await nanopay.lanesIdle();
console.log(JSON.stringify(answers));
process.exit(0);
`,
    );
    try {
      const run = await runCommand(process.execPath, [script], { env: { ...customer.env, NANOPAY_TIMEOUT: '3s' }, timeoutMs: 60_000 });
      expect([run.code, run.stdout.trim(), run.stderr]).toEqual([0, '[200,200,200]', '']);
    } finally {
      await seller.close();
    }
    expect(seller.taken()).toBe(1);
    expect(paymentsToMerchant()).toHaveLength(before + 3);
    expect(journal()).toEqual([]);
    const trail = (await audit()).slice(-4);
    expect(trail.map((r) => r.status).sort()).toEqual(['cancelled', 'paid', 'paid', 'paid']);
  });

  it('lanes set that is refused (too little to fund them) changes nothing', async () => {
    const before = await customer.json<{ count: number; fund: string; lanes: unknown[] }>(['lanes']);
    const refused = await customer.json(['lanes', 'set', '3', '--fund', '1000']);
    expect(refused).toMatchObject({ _code: 4, error: { code: 'INSUFFICIENT_FUNDS', message: expect.stringMatching(/nothing was sent and the lanes are as they were/) } });
    const after = await customer.json<{ count: number; fund: string; lanes: unknown[] }>(['lanes']);
    expect(after).toEqual(before);
    expect(readFileSync(join(customer.configDir, 'config.json'), 'utf8')).toContain('"count": 1');
  });
});
