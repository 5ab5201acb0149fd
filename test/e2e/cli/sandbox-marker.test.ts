import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { startCheckout } from '../../helpers/network/browser.js';
import { BIN, newUser, userWithWallet, type CliUser } from '../../helpers/processes/cli.js';
import { docText } from '../../helpers/processes/docs.js';
import { startFaultyProxy, type FaultyProxy } from '../../helpers/network/faulty-proxy.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { startServe } from '../../helpers/processes/serve.js';

// Test money must never pass for real money: the sandbox says what it is on every answer, and every
// command that used its answers says so. A service that does not say it (here the sandbox behind a
// proxy that passes answers on without its headers, as a real service answers) changes nothing.

const MARK = "[sandbox: these amounts are test money on nanopay's sandbox, not real XNO]";
const other = 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj';

let sb: RunningSandbox;
let real: FaultyProxy;
let onSandbox: CliUser;
let onReal: CliUser;

beforeAll(async () => {
  sb = await sandbox();
  real = await startFaultyProxy(sb.url, () => 'pass');
  [{ user: onSandbox }, { user: onReal }] = await Promise.all([userWithWallet(sb.url, '2'), userWithWallet(real.url, '2')]);
});

afterAll(async () => {
  await real?.close();
  await sb?.close();
});

describe('sandbox or real money', () => {
  it('the sandbox marks every answer with Nanopay-Sandbox: 1 (service routes, errors, node RPC)', async () => {
    const answers = await Promise.all([
      fetch(`${sb.url}/no/such/route`),
      fetch(`${sb.url}/wallet/balance/${other}`),
      fetch(sb.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ action: 'account_balance', account: other }) }),
    ]);
    for (const answer of answers) expect(answer.headers.get('nanopay-sandbox')).toBe('1');
    const passedOn = await fetch(`${real.url}/no/such/route`);
    expect(passedOn.headers.get('nanopay-sandbox')).toBeNull();
  });

  const money: string[][] = [
    ['balance'],
    ['credits'],
    ['send', other, '0.1', '--yes'],
    ['request', '0.5', '--no-qr'],
    ['donate', '0.01', '--yes'],
    ['pending'],
    ['receive'],
    ['credits', 'topup', '10', '--yes'],
  ];

  it.each(money)('on the sandbox, %s marks its human output on stderr and its JSON with "sandbox": true', async (...args) => {
    const human = await onSandbox.run(args);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stderr).toContain(MARK);
    expect(human.stdout).not.toContain('sandbox');
    const json = await onSandbox.json(args);
    expect(json._code).toBe(0);
    expect(json).toMatchObject({ sandbox: true });
  });

  it.each(money)('on a service that does not say it is the sandbox, %s carries no mark', async (...args) => {
    const human = await onReal.run(args);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stderr).not.toContain('sandbox');
    const json = await onReal.json(args);
    expect(json._code).toBe(0);
    expect(json).not.toHaveProperty('sandbox');
  });

  it('status --watch --json: every NDJSON event of a sandbox request says "sandbox": true', async () => {
    const request = await onSandbox.json<{ transaction_id: string }>(['request', '0.3', '--no-qr']);
    const watched = await onSandbox.run(['status', request.transaction_id, '--watch', '--timeout', '2', '--interval', '1', '--json']);
    const events = watched.stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(events.length).toBeGreaterThan(0);
    for (const event of events) expect(event).toMatchObject({ sandbox: true });
  });

  it("the checkout page of a sandbox request has the test-mode band; a real service's has none", async () => {
    const [test, live] = await Promise.all([startCheckout(onSandbox, ['--amount', '1']), startCheckout(onReal, ['--amount', '1'])]);
    try {
      const [testPage, livePage] = await Promise.all([(await fetch(test.url)).text(), (await fetch(live.url)).text()]);
      expect(testPage).toContain('<p id="test-mode" class="test-mode" role="note">TEST MODE');
      expect(livePage).not.toContain('TEST MODE');
      expect(livePage).toContain('Pay with Nano');
    } finally {
      await Promise.all([test.stop(), live.stop()]);
    }
  });
});

/** The official MCP client on `nanopay mcp` of `user`, for one test. */
async function withMcp<T>(user: CliUser, use: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ name: 'nanopay-test', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'], env: user.env as Record<string, string>, stderr: 'ignore' }));
  try {
    return await use(client);
  } finally {
    await client.close();
  }
}

describe('sandbox or real money, to programs (issue 31, point 13)', () => {
  /** Tool calls that reach the service, a success and an error each. */
  const calls = [
    { name: 'wallet_balance', arguments: {} },
    { name: 'credits_get', arguments: {} },
    { name: 'payment_request', arguments: { amount: '0.2' } },
    { name: 'wallet_send', arguments: { recipient_address: other, amount: '1000' } },
  ];

  it('MCP: on the sandbox each result says "sandbox": true (text and structured) with a note in words; on a real service none does', async () => {
    for (const [user, test] of [
      [onSandbox, true],
      [onReal, false],
    ] as const) {
      await withMcp(user, async (client) => {
        for (const call of calls) {
          const result = await client.callTool(call);
          const content = result.content as { type: string; text: string }[];
          const envelope = JSON.parse(content[0]?.text ?? 'null') as Record<string, unknown>;
          expect(result.structuredContent).toEqual(envelope);
          expect(envelope.success, `${call.name}: ${content[0]?.text}`).toBe(call.name !== 'wallet_send');
          if (test) {
            expect(envelope, call.name).toMatchObject({ sandbox: true });
            expect(content[1]).toEqual({ type: 'text', text: MARK });
          } else {
            expect(envelope, call.name).not.toHaveProperty('sandbox');
            expect(content).toHaveLength(1);
          }
        }
      });
    }
  });

  it('HTTP toolset: on the sandbox each answer says "sandbox": true; on a real service none does', async () => {
    for (const [user, test] of [
      [onSandbox, true],
      [onReal, false],
    ] as const) {
      const serve = await startServe(user);
      try {
        const answers = [
          await fetch(`${serve.url}/wallet/balance`),
          await fetch(`${serve.url}/credits`),
          await fetch(`${serve.url}/wallet/send`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ recipient_address: other, amount: '1000' }) }),
        ];
        for (const answer of answers) {
          const body = (await answer.json()) as Record<string, unknown>;
          if (test) expect(body).toMatchObject({ sandbox: true });
          else expect(body).not.toHaveProperty('sandbox');
        }
      } finally {
        await serve.stop();
      }
    }
  });
});

describe('what --remote means', () => {
  it('wallet create --remote says the service made (and has seen) the seed; the default wallet create is self-custodial', async () => {
    const user = await newUser(sb.url);
    const remote = await user.run(['wallet', 'create', '--remote', '--name', 'service-made']);
    expect(remote.code, remote.stderr).toBe(0);
    expect(remote.stdout).toContain('The service made this seed, so it has seen it: this wallet is not self-custodial.');
    const local = await user.run(['wallet', 'create', '--name', 'main']);
    expect(local.code, local.stderr).toBe(0);
    expect(local.stdout).not.toContain('The service made');
    const listed = await user.json<{ wallets: { name: string; remote: boolean }[] } | { name: string; remote: boolean }[]>(['wallet', 'list']);
    expect(JSON.stringify(listed)).toMatch(/"name":"service-made"[^}]*"remote":true/);
    const help = await user.run(['wallet', 'create', '--help']);
    const helpText = help.stdout.replace(/\s+/g, ' ');
    expect(helpText).toContain('self-custodial: its seed is made here and never leaves this machine');
    expect(helpText).toMatch(/--remote .*the service has seen that seed/);
  });

  it('the docs say what --remote means, and no longer that keys never leave the machine whatever the wallet', () => {
    const readme = docText('README.md');
    const intro = readme.slice(0, readme.indexOf('## Install'));
    expect(intro).not.toMatch(/keys never leave your machine/i);
    expect(intro).toMatch(/`wallet create --remote` is not: the service made\s+that seed/);
    expect(intro).toContain('](docs/wallet.md#what---remote-means)');
    const wallet = docText('docs/wallet.md');
    expect(wallet).toContain('### What `--remote` means');
    expect(wallet).toContain('Nanopay-Sandbox: 1');
    expect(docText('docs/shop.md')).toContain('## Going live');
    expect(readme).toContain('](docs/shop.md#going-live)');
  });
});
