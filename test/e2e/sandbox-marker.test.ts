import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import { startCheckout } from '../helpers/browser.js';
import { newUser, userWithWallet, type CliUser } from '../helpers/cli.js';
import { startFaultyProxy, type FaultyProxy } from '../helpers/faulty-proxy.js';
import { sandbox } from '../helpers/sandbox.js';

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

  it('the README says what --remote means, and no longer that keys never leave the machine whatever the wallet', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const intro = readme.slice(0, readme.indexOf('## Set-up'));
    expect(intro).not.toMatch(/keys never leave your machine/i);
    expect(intro).toMatch(/`wallet create --remote` is not: the service made\s+that seed/);
    expect(readme).toContain('## What `--remote` means');
    expect(readme).toContain('## From the sandbox to real money');
    expect(readme).toContain('Nanopay-Sandbox: 1');
  });
});
