import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { balance } from '../../../src/ops/account/balance.js';
import { blockInfo, pending } from '../../../src/ops/account/reads.js';
import { Session } from '../../../src/ops/session.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { keystorePath } from '../../../src/wallet/paths.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { commandSession, newUser, PASSWORD, userWithWallet, type CliUser } from '../../helpers/processes/cli.js';
import { fund, sandbox } from '../../helpers/ledger/sandbox.js';
import { vectors } from '../../helpers/ledger/vectors.js';

/**
 * One run of each read command through bin/run.js: the front end itself (flags, --json, exit codes).
 * What only the operation decides once a command ran with the same flags runs in-process through
 * commandSession, as one more command of the user's would.
 */
let sb: RunningSandbox;
let user: CliUser;
let address: string;
let dust: string;
let big: string;

beforeAll(async () => {
  sb = await sandbox();
  ({ user, address } = await userWithWallet(sb.url, '5'));
  dust = await fund(sb.url, address, '0.0001');
  big = await fund(sb.url, address, '2');
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

describe('read commands', () => {
  it('pending lists both blocks with amounts and sources', async () => {
    const result = await user.json<{ account: string; blocks: { hash: string; amount: string }[] }>(['pending']);
    expect(result._code).toBe(0);
    expect(result.account).toBe(address);
    expect(result.blocks.map((b) => [b.hash, b.amount])).toEqual([
      [dust, '0.0001'],
      [big, '2'],
    ]);
  });

  it('account info shows the verified head; an unopened account says so', async () => {
    const info = await user.json<{ opened: boolean; balance: string; frontier: string }>(['account', 'info']);
    expect(info).toMatchObject({ _code: 0, opened: true, balance: '5' });
    expect(info.frontier).toMatch(/^[0-9A-F]{64}$/);
    const fresh = await user.json<{ opened: boolean }>(['account', 'info', 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj']);
    expect(fresh).toMatchObject({ _code: 0, opened: false });
  });

  it('block info shows a block; a malformed hash is exit 3', async () => {
    const block = await user.json<{ subtype: string; amount: string; account: string }>(['block', 'info', big]);
    expect(block).toMatchObject({ _code: 0, subtype: 'send', amount: '2' });
    await expect(blockInfo(commandSession(user), { hash: 'xyz' })).rejects.toMatchObject({ exitCode: 3 });
  });

  it('network difficulty reports the service thresholds', async () => {
    const result = await user.json<{ send: string; receive: string; reported: boolean }>(['network', 'difficulty']);
    expect(result).toMatchObject({ _code: 0, reported: true, send: sb.service.thresholds.send, receive: sb.service.thresholds.receive });
  });

  it('config list names every setting and never shows the API key', async () => {
    const result = await user.json<{ settings: { name: string; value: string | null }[] }>(['config', 'list']);
    expect(result._code).toBe(0);
    expect(result.settings.map((s) => s.name)).toEqual(expect.arrayContaining(['api-url', 'api-key', 'limit-per-send', 'limit-per-day', 'receive-minimum', 'work-mode', 'work-servers']));
    expect(result.settings.find((s) => s.name === 'api-key')?.value).toBe('(set, encrypted)');
  });

  it('receive --min leaves dust pending', async () => {
    const result = await user.json<{ received: { source: string }[]; total: string }>(['receive', '--min', '0.001']);
    expect(result).toMatchObject({ _code: 0, total: '2' });
    expect(result.received.map((r) => r.source)).toEqual([big]);
    const left = await pending(commandSession(user));
    expect(left.blocks.map((b) => b.hash)).toEqual([dust]);
  });
});

describe('reads without the key store password', () => {
  it('balance, status and credits succeed with NANOPAY_API_KEY and no password source', async () => {
    const apiKey = (await new Session({ password: async () => user.env.NANOPAY_PASSWORD as string, configDir: user.configDir }).apiKey()) as string;
    const env = { NANOPAY_PASSWORD: '', NANOPAY_API_KEY: apiKey };
    expect(await user.json(['credits'], { env })).toMatchObject({ _code: 0 });
    const request = await user.json<{ transaction_id: string }>(['request', '0.1', '--to', address], { env });
    expect(request._code).toBe(0);
    expect(await user.json(['status', request.transaction_id], { env })).toMatchObject({ _code: 0, is_paid: false });
    // balance calls its operation alone, as the commands above do: in-process, with a session that would fail to get a password.
    expect(await balance(commandSession(user, env))).toMatchObject({ account: address });
  });
});

describe('wallet import --passphrase-file', () => {
  it('derives the BIP39 account of the mnemonic and passphrase; a missing file or a bad mnemonic leaves no key store', async () => {
    const vector = (vectors.mnemonic as { passphrase?: string; mnemonic: string; accounts: { address: string }[] }[]).find((v) => v.passphrase);
    if (vector === undefined) throw new Error('the vectors have no mnemonic with a passphrase');
    const importer = await newUser(sb.url);
    const file = join(importer.configDir, 'passphrase.txt');
    await writeFile(file, `${vector.passphrase}\n`, { mode: 0o600 });
    const imported = await importer.json<{ address: string }>(['wallet', 'import', '--mnemonic-stdin', '--passphrase-file', file], { input: `${vector.mnemonic}\n` });
    expect(imported).toMatchObject({ _code: 0, address: vector.accounts[0]?.address });
    // With --password-stdin, the password is stdin's first line and the secret the next.
    const twoLines = await importer.json<{ address: string }>(['wallet', 'import', '--private-key-stdin', '--password-stdin', '--name', 'pk'], {
      input: `${PASSWORD}\nC0CB015BCA0834AC827B6259B48C052F7D62692DA1FA21DCDF755CFD27ACBE43\n`,
      env: { NANOPAY_PASSWORD: '' },
    });
    expect(twoLines).toMatchObject({ _code: 0, address: 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj' });
    // A first run with a file that is not there: a usage error before any key store is made.
    const first = await newUser(sb.url, {}, { keystore: 'none' });
    const missing = await first.json<{ error: { code: string } }>(['wallet', 'import', '--mnemonic-stdin', '--passphrase-file', join(first.configDir, 'nope.txt')], {
      input: `${vector.mnemonic}\n`,
    });
    expect(missing).toMatchObject({ _code: 2, error: { code: 'USAGE' } });
    // So does a mnemonic that is not one: refused before any key store is made.
    const invalid = await first.json<{ error: { code: string } }>(['wallet', 'import', '--mnemonic-stdin'], { input: 'abandon abandon abandon\n' });
    expect(invalid).toMatchObject({ _code: 3, error: { code: 'INVALID_MNEMONIC' } });
    expect(existsSync(keystorePath(first.configDir))).toBe(false);
  });
});
