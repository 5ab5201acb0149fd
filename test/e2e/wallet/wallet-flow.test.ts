import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { passwordSource } from '../../../src/cli/input/password.js';
import { balance } from '../../../src/ops/account/balance.js';
import { getSetting, setSetting, unsetSetting } from '../../../src/ops/profile/config.js';
import { receive } from '../../../src/ops/account/receive.js';
import { send } from '../../../src/ops/spending/send.js';
import type { Session } from '../../../src/ops/session.js';
import { exportWallet, importWallet, listWallets, useWallet } from '../../../src/ops/profile/wallet.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { KeyStore } from '../../../src/wallet/keystore.js';
import { keystorePath } from '../../../src/wallet/paths.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { commandSession, newUser, PASSWORD, userWithWallet, type CliUser } from '../../helpers/processes/cli.js';
import { fund, ledger, sandbox } from '../../helpers/ledger/sandbox.js';
import { tempDir } from '../../helpers/processes/temp.js';

// Wallets and money through bin/run.js where the front end is the subject (flags, stdin, exit codes, output);
// what only the operations decide runs in-process through commandSession, as one more command of the user's would.
const XNO = 10n ** 30n;
let sb: RunningSandbox;
let alice: CliUser;
let bob: CliUser;
/** Bob's profile in-process: his key store is at its real cost, so it is unlocked once, here, for every check. */
let bobSession: Session;
let aliceAddress: string;
let bobAddress: string;

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

/** An API key of the service's, as /wallet/create hands one out. */
async function newApiKey(): Promise<string> {
  return ((await (await fetch(`${sb.url}/wallet/create`, { method: 'POST' })).json()) as { data: { api_key: string } }).data.api_key;
}

beforeAll(async () => {
  sb = await sandbox();
  alice = await newUser(sb.url);
  // Bob's first run makes his key store here, at its real cost; he runs no other command at that cost.
  bob = await newUser(sb.url, {}, { keystore: 'none' });
  const a = await alice.json<{ address: string; remote: boolean }>(['wallet', 'create', '--remote', '--name', 'main']);
  expect(a._code).toBe(0);
  expect(a.remote).toBe(true);
  aliceAddress = a.address;
  const b = await bob.json<{ address: string }>(['wallet', 'create']);
  expect(b._code).toBe(0);
  bobAddress = b.address;
  // Bob made his keys locally; he still needs an API key for the service (config set api-key --stdin runs below).
  bobSession = commandSession(bob);
  await setSetting(bobSession, 'api-key', await newApiKey());
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

describe('wallet and money movement through bin/run.js', () => {
  // The main money flow (receive, send, concurrency, --dry-run, --id, limits) runs per backend in
  // test/integration/backends/backends-ops.test.ts (the operations) and backends.test.ts (the commands);
  // here: a wallet whose keys were made on this machine (by Bob's first run), its money moved in-process.
  it('a wallet with keys made here and the service\'s API key receives and sends exactly', async () => {
    const aliceSession = commandSession(alice);
    await fund(sb.url, aliceAddress, '10');
    expect((await receive(aliceSession)).total_raw).toBe((10n * XNO).toString());
    const sent = await send(aliceSession, { to: bobAddress, amount: { xno: '2.5' } });
    expect(sent.hash).toMatch(/^[0-9A-F]{64}$/);
    expect(sent.balance_after_raw).toBe(((75n * XNO) / 10n).toString());
    const bobBalance = await balance(bobSession, { receive: true });
    expect(bobBalance).toMatchObject({ balance_raw: ((25n * XNO) / 10n).toString(), pending_raw: '0' });
    const raw = await send(bobSession, { to: aliceAddress, amount: { raw: '1' } });
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

    // Which input is refused, and with which exit code, is the operation's.
    const session = commandSession(alice);
    await expect(send(session, { to: 'nano_123', amount: { xno: '1' } })).rejects.toMatchObject({ code: 'INVALID_ADDRESS', exitCode: 3 });
    await expect(send(session, { to: bobAddress, amount: { xno: '1.2.3' } })).rejects.toMatchObject({ code: 'INVALID_NUMBER_FORMAT' });
  });

  it('the daily limit counts every send of the last 24 hours', async () => {
    const { user: carol } = await userWithWallet(sb.url, '1');
    const session = commandSession(carol);
    await setSetting(session, 'limit-per-day', '0.5');
    await send(session, { to: bobAddress, amount: { xno: '0.3' } });
    const over = await carol.run(['send', bobAddress, '0.3', '--yes', '--json']);
    expect(over.code).toBe(7);
    expect(JSON.parse(over.stdout)).toMatchObject({ error: { code: 'POLICY_DENIED' } });
  });

  it("the daily limit is the profile's: another account of it gets no fresh allowance, and two accounts sending at once share it", async () => {
    const { user: dave } = await userWithWallet(sb.url, '1');
    const session = commandSession(dave);
    const second = await session.account(undefined, 1);
    const third = await session.account(undefined, 2);
    for (const account of [second, third]) await fund(sb.url, account.address, '1');
    await receive(session, { index: 1 });
    await receive(session, { index: 2 });
    await setSetting(session, 'limit-per-day', '0.5');
    await send(session, { to: bobAddress, amount: { xno: '0.3' } });
    const other = await dave.run(['send', bobAddress, '0.3', '--account', '1', '--yes', '--json']);
    expect(other.code).toBe(7);
    expect(JSON.parse(other.stdout)).toMatchObject({ error: { code: 'POLICY_DENIED' } });

    // 0.2 left: two accounts (two sessions, as two processes) asking 0.15 each at once; one fits.
    const both = await Promise.allSettled([1, 2].map((index) => send(commandSession(dave), { to: bobAddress, amount: { xno: '0.15' }, index })));
    expect(both.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(both.find((r) => r.status === 'rejected')).toMatchObject({ reason: { code: 'POLICY_DENIED' } });
  });

  it('keeps no seed, private key or API key in plain text, with private modes', async () => {
    const exported = await alice.json<{ secret: string; accounts: { private_key: string }[] }>(['wallet', 'export', '--yes']);
    expect(exported.secret).toMatch(/^[0-9A-F]{64}$/i);
    // An API key given on stdin is stored, and shown only as set.
    const apiKey = await newApiKey();
    const set = await alice.run(['config', 'set', 'api-key', '--stdin'], { input: `${apiKey}\n` });
    expect(set.code).toBe(0);
    expect(set.stdout).toContain('api-key = (set, encrypted)');
    expect(set.stdout + set.stderr).not.toContain(apiKey);
    expect(await commandSession(alice).apiKey()).toBe(apiKey);
    expect((await getSetting(commandSession(alice), 'api-key')).value).toBe('(set, encrypted)');
    const secrets = [exported.secret, ...exported.accounts.map((a) => a.private_key), apiKey];
    for (const file of await filesUnder(alice.configDir)) {
      const bytes = (await readFile(file, 'latin1')).toLowerCase();
      for (const s of secrets) expect(bytes, file).not.toContain(s.toLowerCase());
      expect((await stat(file)).mode & 0o077, file).toBe(0);
    }
    expect((await stat(alice.configDir)).mode & 0o777).toBe(0o700);
  });

  it('the API key and node-auth can be backed up: wallet export shows them, config get --reveal prints one alone for scripts', async () => {
    const { user } = await userWithWallet(sb.url);
    const apiKey = (await commandSession(user).apiKey()) as string;
    expect(apiKey).toBeTypeOf('string');
    const withKey = await user.json<{ api_key?: string; node_auth?: string }>(['wallet', 'export', '--yes']);
    expect(withKey).toMatchObject({ _code: 0, api_key: apiKey });
    expect(withKey).not.toHaveProperty('node_auth');
    await setSetting(commandSession(user), 'node-auth', 'node-secret-1');
    const both = await user.json<{ api_key?: string; node_auth?: string }>(['wallet', 'export', '--yes']);
    expect(both).toMatchObject({ _code: 0, api_key: apiKey, node_auth: 'node-secret-1' });
    const human = await user.run(['wallet', 'export', '--yes']);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain(`API key of profile "default": ${apiKey}\n`);
    expect(human.stdout).toContain('node-auth of profile "default": node-secret-1\n');
    // The same confirmation as the seed: without a terminal and without --yes, nothing is shown.
    const unconfirmed = await user.run(['wallet', 'export']);
    expect(unconfirmed.code).toBe(2);
    expect(`${unconfirmed.stdout}${unconfirmed.stderr}`).not.toContain(apiKey);

    // One value alone, for a script; without --reveal nothing changes.
    const revealed = await user.run(['config', 'get', 'api-key', '--reveal']);
    expect(revealed.code, revealed.stderr).toBe(0);
    expect(revealed.stdout).toBe(`${apiKey}\n`);
    expect(await user.json(['config', 'get', 'node-auth', '--reveal'])).toEqual({ value: 'node-secret-1', source: 'profile', _code: 0 });
    const plain = await user.run(['config', 'get', 'api-key']);
    expect(plain.stdout).toContain('(set, encrypted)');
    expect(plain.stdout).not.toContain(apiKey);
    // The value in effect: a variable's is shown as it is; one that is set nowhere is an error, not an empty line.
    expect(await user.json(['config', 'get', 'api-key', '--reveal'], { env: { NANOPAY_API_KEY: 'key-from-env' } })).toEqual({ value: 'key-from-env', source: 'env', _code: 0 });
    await unsetSetting(commandSession(user), 'node-auth');
    const unset = await user.run(['config', 'get', 'node-auth', '--reveal']);
    expect(unset.code).toBe(9);
    expect(unset.stdout).toBe('');
    expect(unset.stderr).toContain('[NOT_FOUND]');
    // A setting that is not a secret has nothing to reveal.
    const notSecret = await user.run(['config', 'get', 'api-url', '--reveal']);
    expect(notSecret.code).toBe(2);
    expect(notSecret.stderr).toContain('[USAGE]');
    const wrong = await user.run(['config', 'get', 'api-key', '--reveal'], { env: { NANOPAY_PASSWORD: 'not it' } });
    expect(wrong.code).toBe(6);
    expect(`${wrong.stdout}${wrong.stderr}`).not.toContain(apiKey);
  });

  it('a wrong password fails clearly and leaves the store byte-identical', async () => {
    const path = join(alice.configDir, 'keystore.json');
    const before = await readFile(path);
    // A command ending with exit 6 runs below (PASSWORD_REQUIRED), and with [WRONG_PASSWORD] on a terminal in
    // terminal.test.ts; here the store.
    const wrong = send(commandSession(alice, { NANOPAY_PASSWORD: 'not it' }), { to: bobAddress, amount: { xno: '0.1' } });
    await expect(wrong).rejects.toMatchObject({ code: 'WRONG_PASSWORD', exitCode: 6 });
    expect(await readFile(path)).toEqual(before);
  });

  it('without a terminal and without a password source it stops at once, naming the options', async () => {
    const result = await alice.run(['balance'], { env: { NANOPAY_PASSWORD: '' }, timeoutMs: 10_000 });
    expect(result.signal).toBeNull();
    expect(result.code).toBe(6);
    expect(result.stderr).toContain('[PASSWORD_REQUIRED]');
    expect(result.stderr).toContain('--password-file');
    expect(result.stderr).toContain('NANOPAY_PASSWORD');
  });

  it('reads the password from --password-file or --password-stdin', async () => {
    const file = join(await tempDir('nanopay-pw-'), 'password');
    await writeFile(file, 'test password 1\n', { mode: 0o600 });
    // The file is read by the CLI's password source (the flag reaches it on every command: unlock.test.ts).
    expect(await passwordSource({ 'password-file': file }, {})('unlock')).toBe(PASSWORD);
    const fromStdin = await alice.json<{ account: string }>(['balance', '--password-stdin'], { input: 'test password 1\n', env: { NANOPAY_PASSWORD: '' } });
    expect(fromStdin).toMatchObject({ _code: 0, account: aliceAddress });
  });

  it('profiles keep separate wallets', async () => {
    const other = await alice.run(['wallet', 'list', '--json'], { env: { NANOPAY_PROFILE: 'other' } });
    expect(JSON.parse(other.stdout)).toEqual([]);
    expect(listWallets(commandSession(alice, { NANOPAY_PROFILE: 'default' })).map((w) => w.name)).toContain('main');
  });

  it('wallets created at the same time each keep their secret', async () => {
    // At the real cost, so that both commands have read the store before either writes.
    const carol = await newUser(sb.url, {}, { keystore: 'none' });
    await KeyStore.create(keystorePath(carol.configDir), PASSWORD);
    const names = ['one', 'two'];
    const created = await Promise.all(names.map((name) => carol.json<{ address: string }>(['wallet', 'create', '--name', name])));
    expect(created.map((c) => c._code)).toEqual([0, 0]);
    const session = commandSession(carol);
    for (const [i, name] of names.entries()) {
      expect((await exportWallet(session, name)).accounts[0]?.address).toBe(created[i]?.address);
    }
  });

  it('lists, shows, uses and removes wallets', async () => {
    const imported = await alice.json<{ name: string; address: string }>(['wallet', 'import', '--private-key-stdin', '--name', 'extra'], {
      input: 'C0CB015BCA0834AC827B6259B48C052F7D62692DA1FA21DCDF755CFD27ACBE43\n',
    });
    expect(imported.address).toBe('nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj');
    // wallet list runs as a command in the test above.
    expect(listWallets(commandSession(alice)).map((w) => w.name).sort()).toEqual(['extra', 'main']);
    const used = await alice.json<{ active: boolean; name: string }>(['wallet', 'use', 'main', '--account', '1']);
    expect(used).toMatchObject({ active: true, name: 'main' });
    const shown = await alice.json<{ accounts: { index: number }[] }>(['wallet', 'show']);
    expect(shown.accounts.map((a) => a.index)).toEqual([0, 1]);
    await useWallet(commandSession(alice), { name: 'main' });
    const removed = await alice.json<{ removed: string }>(['wallet', 'remove', 'extra', '--yes']);
    expect(removed.removed).toBe('extra');
    // A mnemonic read from stdin runs as a command in reads.test.ts; refusing a bad one is the operation's.
    await expect(importWallet(commandSession(alice), { kind: 'mnemonic', secret: 'abandon abandon abandon' })).rejects.toMatchObject({ code: 'INVALID_MNEMONIC' });
  });
});
