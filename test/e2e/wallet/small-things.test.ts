import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deriveAccount, generateMnemonic, generateSeed } from '../../../src/nano/index.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { keystorePath } from '../../../src/wallet/paths.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { backendUser } from '../../helpers/ledger/backend-users.js';
import { newUser, runCli, userWithWallet } from '../../helpers/processes/cli.js';
import { onTerminal, ptyMissing } from '../../helpers/processes/pty.js';
import { fund, ledger, sandbox } from '../../helpers/ledger/sandbox.js';

/** Issue 25, point 13: the small things a user meets at a terminal, through bin/run.js. */
let sb: RunningSandbox;

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

/** Two different frames of the spinner (ora's dots), one after the other: it moved. */
const MOVED = /([⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏])[\s\S]*?(?!\1)[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/;
const DOWN = '\x1b[B';

describe.skipIf(ptyMissing !== undefined)(`on a terminal${ptyMissing === undefined ? '' : ` (skipped: ${ptyMissing})`}`, { timeout: 120_000 }, () => {
  it('receive --watch shows a spinner while it waits, and again after each receive', async () => {
    const { user, address } = await userWithWallet(sb.url);
    const terminal = onTerminal(['receive', '--watch', '--timeout', '10', '--interval', '1'], user.env, { columns: 100 });
    await terminal.waitFor(`Waiting for payments to ${address}`);
    await terminal.waitFor(MOVED);
    await fund(sb.url, address, '1');
    await terminal.waitFor(/Received 1 XNO on nano_\w+ \(open [0-9A-F]{64}\)/);
    const after = terminal.output.length;
    await terminal.waitFor(new RegExp(`Received 1 XNO[\\s\\S]*Waiting for payments to ${address}`));
    expect(await terminal.exited).toBe(0);
    expect(terminal.output.slice(after)).toContain('Stopped watching; received 1 XNO in all.');
  });

  it('answering no to a confirmation exits 12 (DECLINED), not 130, and does nothing', async () => {
    const { user, address } = await userWithWallet(sb.url, '1');
    const before = (await ledger(sb.url)).blocks.length;
    const send = onTerminal(['send', address, '0.1'], user.env, { columns: 80 });
    await send.waitFor('Send 0.1 XNO?');
    send.type('n\r');
    expect(await send.exited).toBe(12);
    expect(send.output).toContain('[DECLINED]');
    expect((await ledger(sb.url)).blocks.length).toBe(before);

    const wallets = async (): Promise<{ name: string }[]> => JSON.parse((await user.run(['wallet', 'list', '--json'])).stdout) as { name: string }[];
    const [wallet] = await wallets();
    const remove = onTerminal(['wallet', 'remove', wallet?.name as string], user.env, { columns: 80 });
    await remove.waitFor('Remove wallet');
    remove.type('n\r');
    expect(await remove.exited).toBe(12);
    expect(remove.output).toContain('[DECLINED]');
    expect(await wallets()).toHaveLength(1);
  });

  it('wallet import without a --*-stdin flag asks what and takes the secret at a hidden prompt', async () => {
    const user = await newUser(sb.url);
    const mnemonic = generateMnemonic();
    const words = mnemonic.split(' ');
    const imported = onTerminal(['wallet', 'import', '--name', 'typed'], user.env, { columns: 100 });
    await imported.waitFor('What do you import?');
    imported.type('\r');
    await imported.waitFor('Type or paste the mnemonic (hidden)');
    imported.type(`${mnemonic}\r`);
    await imported.waitFor('BIP39 passphrase');
    imported.type('\r');
    expect(await imported.exited).toBe(0);
    expect(imported.output).toContain(`Address: ${deriveAccount({ mnemonic, passphrase: '', index: 0 }).address}`);
    // Only the mask was shown: no two words of the mnemonic in a row reached the screen (one alone may be a word of the prompts).
    expect(imported.output).not.toContain(mnemonic);
    for (let i = 0; i + 1 < words.length; i++) expect(imported.output).not.toContain(`${words[i]} ${words[i + 1]}`);

    const seed = generateSeed();
    const second = onTerminal(['wallet', 'import', '--name', 'typed-seed'], user.env, { columns: 100 });
    await second.waitFor('What do you import?');
    second.type(DOWN);
    await second.waitFor(/❯ A seed/);
    second.type('\r');
    await second.waitFor('Type or paste the seed (hidden)');
    second.type(`${seed}\r`);
    expect(await second.exited).toBe(0);
    expect(second.output).toContain(`Address: ${deriveAccount({ seed, index: 0 }).address}`);
    expect(second.output).not.toContain(seed);
  });

  it('a new key store password shorter than 8 characters is refused at the prompt', async () => {
    const user = await newUser(sb.url, { NANOPAY_PASSWORD: '' }, { keystore: 'none' });
    const create = onTerminal(['wallet', 'create'], user.env, { columns: 80 });
    await create.waitFor('New key store password');
    create.type('short\r');
    await create.waitFor('Use at least 8 characters');
    create.type('\x03');
    expect(await create.exited).toBe(130);
    expect(existsSync(keystorePath(user.configDir))).toBe(false);
  });
});

describe('without a terminal', () => {
  it('a new key store password shorter than 8 characters is refused from any source (PASSWORD_TOO_SHORT, exit 6); 8 is enough', async () => {
    const user = await newUser(sb.url, { NANOPAY_PASSWORD: '' }, { keystore: 'none' });
    const fromEnv = await user.json<{ error: { code: string; message: string } }>(['wallet', 'create'], { env: { NANOPAY_PASSWORD: '1234567' } });
    expect([fromEnv._code, fromEnv.error.code]).toEqual([6, 'PASSWORD_TOO_SHORT']);
    expect(fromEnv.error.message).toContain('at least 8 characters');
    const seed = generateSeed();
    const fromStdin = await user.json<{ error: { code: string } }>(['wallet', 'import', '--seed-stdin', '--password-stdin'], { input: `short\n${seed}\n` });
    expect([fromStdin._code, fromStdin.error.code]).toEqual([6, 'PASSWORD_TOO_SHORT']);
    expect(existsSync(keystorePath(user.configDir))).toBe(false);
    const ok = await user.json<{ address: string }>(['wallet', 'import', '--seed-stdin', '--password-stdin'], { input: `12345678\n${seed}\n` });
    expect(ok).toMatchObject({ _code: 0, address: deriveAccount({ seed, index: 0 }).address });
    // An existing store opens with the password it has, whatever its length (the minimum is for new ones).
    expect((await user.json(['wallet', 'list'], { env: { NANOPAY_PASSWORD: '12345678' } }))._code).toBe(0);
  });

  it('wallet import without a --*-stdin flag and without a terminal says what to give', async () => {
    const user = await newUser(sb.url);
    const refused = await user.json<{ error: { code: string; message: string; hint: string } }>(['wallet', 'import']);
    expect([refused._code, refused.error.code]).toEqual([2, 'USAGE']);
    expect(refused.error.hint).toContain('hidden prompt');
  });

  it('request --fresh-address says the address is the request\'s own; a shared address says the offset identifies it', async () => {
    const merchant = await backendUser(sb, 'node');
    const fresh = await merchant.user.run(['request', '0.1', '--fresh-address', '--no-qr']);
    expect(fresh.code).toBe(0);
    expect(fresh.stdout).toContain('This address was made for this request alone');
    expect(fresh.stdout).not.toContain('offset that identifies');
    const shared = await merchant.user.run(['request', '0.1', '--no-qr']);
    expect(shared.stdout).toContain('The amount carries a small offset that identifies this request');
    expect(shared.stdout).not.toContain('made for this request alone');
  });

  it('help --json prints the JSON error document (USAGE, exit 2) and nothing else on stdout', async () => {
    const user = await newUser(sb.url);
    for (const args of [['help', '--json'], ['help', 'send', '--json']]) {
      const result = await runCli(args, user.env);
      expect(result.code, args.join(' ')).toBe(2);
      expect(JSON.parse(result.stdout)).toMatchObject({ error: { code: 'USAGE', message: expect.stringContaining('help') } });
    }
    const text = await runCli(['help', 'send'], user.env);
    expect([text.code, text.stdout]).toEqual([0, expect.stringContaining('USAGE\n  $ nanopay send ADDRESS AMOUNT')]);
  });
});
