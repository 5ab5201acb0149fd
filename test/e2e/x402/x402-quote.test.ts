import { existsSync, readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { xnoToRaw } from '../../../src/nano/index.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { NanoPay } from '../../../src/sdk/nanopay.js';
import { BIN, PASSWORD, type CliUser } from '../../helpers/processes/cli.js';
import { nodeMerchantAndCustomer } from '../../helpers/ledger/node-users.js';
import { ledger, sandbox } from '../../helpers/ledger/sandbox.js';
import { startCommand, type RunningCommand } from '../../helpers/processes/serve.js';

let sb: RunningSandbox;
let upstream: Server;
let merchant: CliUser;
let customer: CliUser;
let merchantAddress: string;
let paywall: RunningCommand<{ url: string }>;

beforeAll(async () => {
  sb = await sandbox();
  upstream = createServer((req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end(`answer for ${req.url}`));
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  ({ merchant, customer, merchantAddress } = await nodeMerchantAndCustomer(sb, {}));
  paywall = await startCommand(['paywall', '--upstream', upstreamUrl, '--price', '0.002', '--route', 'GET /free/*=0', '--route', 'POST /search=0.005', '--to', merchantAddress, '--json'], merchant.env);
});
afterAll(async () => {
  await paywall.stop();
  upstream.closeAllConnections();
  await new Promise((resolve) => upstream.close(resolve));
  await sb.close();
});

/** What a dry run must leave as it was: no journal entry, no spending decision recorded (policy edits are recorded, and no spend), no approval, no block. */
async function untouched(): Promise<{ journal: string[]; audit: string; approvals: string; blocks: number }> {
  const dir = join(customer.configDir, 'journal');
  return {
    journal: existsSync(dir) ? readdirSync(dir) : [],
    audit: (await customer.run(['audit', '--json'])).stdout
      .split('\n')
      .filter((line) => line !== '' && (JSON.parse(line) as { kind: string }).kind !== 'policy')
      .join('\n'),
    approvals: (await customer.run(['approvals', 'list', '--json'])).stdout,
    blocks: (await ledger(sb.url)).blocks.length,
  };
}

describe('fetch --dry-run: what the server asks, and what the policy would do, paying nothing (issue 32, part 5)', () => {
  it('prints the amount, payee and network and "allow"; nothing is signed, journaled or recorded', async () => {
    const before = await untouched();
    const quote = await customer.json<Record<string, unknown>>(['fetch', `${paywall.printed.url}/report`, '--max', '0.01', '--dry-run']);
    expect(quote).toMatchObject({
      _code: 0,
      dry_run: true,
      url: `${paywall.printed.url}/report`,
      status: 402,
      payment_required: true,
      amount: '0.002',
      amount_raw: xnoToRaw('0.002').toString(),
      pay_to: merchantAddress,
      network: 'nano:dev',
      payer_network: 'nano:dev',
      decision: 'allow',
      accepts: [expect.objectContaining({ scheme: 'exact', asset: 'XNO', payTo: merchantAddress })],
    });
    const text = await customer.run(['fetch', `${paywall.printed.url}/report`, '--max', '0.01', '--dry-run']);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/asks for 0\.002 XNO \(2000000000000000000000000000 raw\) to nano_\w+ on nano:dev/);
    expect(text.stdout).toMatch(/allows it/);
    expect(await untouched()).toEqual(before);
  });

  it('names the rule that would refuse it, or hold it for approval, without making an approval', async () => {
    const before = await untouched();
    const host = new URL(paywall.printed.url).host;
    expect((await customer.run(['policy', 'set', 'deny', '--host', host])).code).toBe(0);
    const denied = await customer.json<Record<string, unknown>>(['fetch', `${paywall.printed.url}/report`, '--max', '0.01', '--dry-run']);
    expect(denied).toMatchObject({ _code: 0, decision: 'deny', rule: expect.stringMatching(/deny/), amount: '0.002' });
    expect((await customer.run(['policy', 'unset', 'deny', '--host', host])).code).toBe(0);

    expect((await customer.run(['policy', 'set', 'ask-above', '0.001'])).code).toBe(0);
    const asked = await customer.json<Record<string, unknown>>(['fetch', `${paywall.printed.url}/report`, '--max', '0.01', '--dry-run']);
    expect(asked).toMatchObject({ decision: 'ask', rule: 'ask-above', message: expect.stringMatching(/ask-above|above/) });
    const text = await customer.run(['fetch', `${paywall.printed.url}/report`, '--max', '0.01', '--dry-run']);
    expect(text.stdout).toMatch(/would wait for a person's approval \(rule: ask-above\)/);
    expect((await customer.run(['policy', 'unset', 'ask-above'])).code).toBe(0);

    // Over the maximum, or with none: it says so, still paying nothing.
    const over = await customer.json<Record<string, unknown>>(['fetch', `${paywall.printed.url}/report`, '--max', '0.001', '--dry-run']);
    expect(over).toMatchObject({ decision: 'deny', code: 'X402_UNPAYABLE', amount: '0.002', message: expect.stringMatching(/over the maximum/) });
    const none = await customer.json<Record<string, unknown>>(['fetch', `${paywall.printed.url}/report`, '--dry-run']);
    expect(none).toMatchObject({ decision: 'deny', code: 'X402_UNPAYABLE', message: expect.stringMatching(/no maximum/) });
    const after = await untouched();
    // Only the policy edits are new (they are no spend): no audit record, approval, journal entry or block.
    expect(after).toEqual(before);
  });

  it('a free resource asks for nothing; the SDK and the MCP tool give the same answer', async () => {
    const free = await customer.json<Record<string, unknown>>(['fetch', `${paywall.printed.url}/free/x`, '--max', '0.01', '--dry-run']);
    expect(free).toMatchObject({ dry_run: true, status: 200, payment_required: false });
    expect(free).not.toHaveProperty('body');

    const sdk = new NanoPay({ password: PASSWORD, env: customer.env });
    const quote = await sdk.quote(`${paywall.printed.url}/search`, { method: 'POST', body: '{}' }, { maxXno: '0.01' });
    expect(quote).toMatchObject({ payment_required: true, amount: '0.005', pay_to: merchantAddress, network: 'nano:dev', decision: 'allow' });

    const before = await untouched();
    const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'], env: { ...(customer.env as Record<string, string>), NANOPAY_FETCH_ALLOW_HOSTS: new URL(paywall.printed.url).host }, stderr: 'ignore' });
    const mcp = new Client({ name: 'quote-test', version: '1.0.0' });
    await mcp.connect(transport);
    try {
      const answer = await mcp.callTool({ name: 'http_fetch_paid', arguments: { url: `${paywall.printed.url}/report`, max_xno: '0.01', dry_run: true } });
      expect(answer.isError).not.toBe(true);
      expect((answer.structuredContent as { data: unknown }).data).toMatchObject({ dry_run: true, amount: '0.002', pay_to: merchantAddress, network: 'nano:dev', decision: 'allow' });
    } finally {
      await mcp.close();
    }
    expect(await untouched()).toEqual(before);
  });
});
