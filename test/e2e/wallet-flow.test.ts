import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import { newUser, userWithWallet, type CliUser } from '../helpers/cli.js';
import { fund, ledger, sandbox } from '../helpers/sandbox.js';

const XNO = 10n ** 30n;
let sb: RunningSandbox;
let alice: CliUser;
let bob: CliUser;
let aliceAddress: string;
let bobAddress: string;

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

beforeAll(async () => {
  sb = await sandbox();
  alice = await newUser(sb.url);
  // Bob's first run makes his key store here, at its real cost.
  bob = await newUser(sb.url, {}, { keystore: 'none' });
  const a = await alice.json<{ address: string; remote: boolean }>(['wallet', 'create', '--remote', '--name', 'main']);
  expect(a._code).toBe(0);
  expect(a.remote).toBe(true);
  aliceAddress = a.address;
  const b = await bob.json<{ address: string }>(['wallet', 'create']);
  expect(b._code).toBe(0);
  bobAddress = b.address;
  // Bob made his keys locally; he still needs an API key for the service.
  const key = ((await (await fetch(`${sb.url}/wallet/create`, { method: 'POST' })).json()) as { data: { api_key: string } }).data.api_key;
  const set = await bob.run(['config', 'set', 'api-key', '--stdin'], { input: `${key}\n` });
  expect(set.code).toBe(0);
});

afterAll(async () => {
  await sb?.close();
});

describe('wallet and money movement through bin/run.js', () => {
  // The main money flow (receive, send, concurrency, --dry-run, --id, limits) runs per backend in
  // test/integration/backends-ops.test.ts (the operations) and backends.test.ts (the commands);
  // here: a wallet whose keys were made on this machine.
  it('a wallet with keys made here and the service\'s API key receives and sends exactly', async () => {
    await fund(sb.url, aliceAddress, '10');
    expect((await alice.json(['receive']))._code).toBe(0);
    const sent = await alice.json<{ hash: string; balance_after_raw: string }>(['send', bobAddress, '2.5', '--yes']);
    expect(sent._code).toBe(0);
    expect(sent.hash).toMatch(/^[0-9A-F]{64}$/);
    expect(sent.balance_after_raw).toBe(((75n * XNO) / 10n).toString());
    const bobBalance = await bob.json<{ balance_raw: string; pending_raw: string }>(['balance', '--receive']);
    expect(bobBalance).toMatchObject({ balance_raw: ((25n * XNO) / 10n).toString(), pending_raw: '0' });
    const raw = await bob.json<{ amount_raw: string; hash: string }>(['send', aliceAddress, '1', '--raw', '--yes']);
    expect(raw.amount_raw).toBe('1');
    expect((await ledger(sb.url)).blocks.find((b) => b.hash === raw.hash)).toMatchObject({ account: bobAddress, amount: '1' });
  });

  it('refuses a send without a terminal and without --yes, to a bad address, of a bad amount, over the funds', async () => {
    const noYes = await alice.run(['send', bobAddress, '0.1', '--json']);
    expect(noYes.code).toBe(2);
    expect(JSON.parse(noYes.stdout)).toMatchObject({ error: { code: 'USAGE' } });

    const tooMuch = await alice.run(['send', bobAddress, '1000', '--yes', '--json']);
    expect(tooMuch.code).toBe(4);
    expect(JSON.parse(tooMuch.stdout)).toMatchObject({ error: { code: 'INSUFFICIENT_FUNDS' } });

    const badAddress = await alice.run(['send', 'nano_123', '1', '--yes', '--json']);
    expect(badAddress.code).toBe(3);
    expect(JSON.parse(badAddress.stdout)).toMatchObject({ error: { code: 'INVALID_ADDRESS' } });

    const badAmount = await alice.run(['send', bobAddress, '1.2.3', '--yes', '--json']);
    expect(JSON.parse(badAmount.stdout)).toMatchObject({ error: { code: 'INVALID_NUMBER_FORMAT' } });
  });

  it('the daily limit counts every send of the last 24 hours', async () => {
    const { user: carol } = await userWithWallet(sb.url, '1');
    expect((await carol.run(['config', 'set', 'limit-per-day', '0.5'])).code).toBe(0);
    expect((await carol.json(['send', bobAddress, '0.3', '--yes']))._code).toBe(0);
    const over = await carol.run(['send', bobAddress, '0.3', '--yes', '--json']);
    expect(over.code).toBe(7);
    expect(JSON.parse(over.stdout)).toMatchObject({ error: { code: 'LIMIT_EXCEEDED' } });
  });

  it('keeps no seed, private key or API key in plain text, with private modes', async () => {
    const exported = await alice.json<{ secret: string; accounts: { private_key: string }[] }>(['wallet', 'export', '--yes']);
    expect(exported.secret).toMatch(/^[0-9A-F]{64}$/i);
    const apiKey = (await alice.json<{ value: string }>(['config', 'get', 'api-key'])).value;
    expect(apiKey).toBe('(set, encrypted)');
    const secrets = [exported.secret, ...exported.accounts.map((a) => a.private_key)];
    for (const file of await filesUnder(alice.configDir)) {
      const bytes = (await readFile(file, 'latin1')).toLowerCase();
      for (const s of secrets) expect(bytes, file).not.toContain(s.toLowerCase());
      expect((await stat(file)).mode & 0o077, file).toBe(0);
    }
    expect((await stat(alice.configDir)).mode & 0o777).toBe(0o700);
  });

  it('a wrong password fails clearly and leaves the store byte-identical', async () => {
    const path = join(alice.configDir, 'keystore.json');
    const before = await readFile(path);
    const wrong = await alice.run(['send', bobAddress, '0.1', '--yes', '--json'], { env: { NANOPAY_PASSWORD: 'not it' } });
    expect(wrong.code).toBe(6);
    expect(JSON.parse(wrong.stdout)).toMatchObject({ error: { code: 'WRONG_PASSWORD' } });
    expect(await readFile(path)).toEqual(before);
  });

  it('without a terminal and without a password source it stops at once, naming the options', async () => {
    const result = await alice.run(['balance', '--json'], { env: { NANOPAY_PASSWORD: '' }, timeoutMs: 10_000 });
    expect(result.signal).toBeNull();
    expect(result.code).toBe(6);
    const error = (JSON.parse(result.stdout) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe('PASSWORD_REQUIRED');
    const human = await alice.run(['balance'], { env: { NANOPAY_PASSWORD: '' } });
    expect(human.stderr).toContain('--password-file');
    expect(human.stderr).toContain('NANOPAY_PASSWORD');
  });

  it('reads the password from --password-file or --password-stdin', async () => {
    const file = join(alice.configDir, '..', `pw-${Date.now()}`);
    await writeFile(file, 'test password 1\n', { mode: 0o600 });
    const fromFile = await alice.json<{ account: string }>(['balance', '--password-file', file], { env: { NANOPAY_PASSWORD: '' } });
    expect(fromFile).toMatchObject({ _code: 0, account: aliceAddress });
    const fromStdin = await alice.json<{ account: string }>(['balance', '--password-stdin'], { input: 'test password 1\n', env: { NANOPAY_PASSWORD: '' } });
    expect(fromStdin).toMatchObject({ _code: 0, account: aliceAddress });
  });

  it('profiles keep separate wallets', async () => {
    const other = await alice.run(['wallet', 'list', '--json'], { env: { NANOPAY_PROFILE: 'other' } });
    expect(JSON.parse(other.stdout)).toEqual([]);
    const main = await alice.run(['wallet', 'list', '--json', '--profile', 'default']);
    expect((JSON.parse(main.stdout) as { name: string }[]).map((w) => w.name)).toContain('main');
  });

  it('lists, shows, uses and removes wallets', async () => {
    const imported = await alice.json<{ name: string; address: string }>(['wallet', 'import', '--private-key-stdin', '--name', 'extra'], {
      input: 'C0CB015BCA0834AC827B6259B48C052F7D62692DA1FA21DCDF755CFD27ACBE43\n',
    });
    expect(imported.address).toBe('nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj');
    const list = await alice.run(['wallet', 'list', '--json']);
    expect((JSON.parse(list.stdout) as { name: string }[]).map((w) => w.name).sort()).toEqual(['extra', 'main']);
    const used = await alice.json<{ active: boolean; name: string }>(['wallet', 'use', 'main', '--account', '1']);
    expect(used).toMatchObject({ active: true, name: 'main' });
    const shown = await alice.json<{ accounts: { index: number }[] }>(['wallet', 'show']);
    expect(shown.accounts.map((a) => a.index)).toEqual([0, 1]);
    await alice.run(['wallet', 'use', 'main']);
    const removed = await alice.json<{ removed: string }>(['wallet', 'remove', 'extra', '--yes']);
    expect(removed.removed).toBe('extra');
    const badMnemonic = await alice.run(['wallet', 'import', '--mnemonic-stdin', '--json'], { input: 'abandon abandon abandon\n' });
    expect(JSON.parse(badMnemonic.stdout)).toMatchObject({ error: { code: 'INVALID_MNEMONIC' } });
  });
});
