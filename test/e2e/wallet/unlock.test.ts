import { existsSync, readFileSync } from 'node:fs';
import { chmod, lstat, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NanoPayError } from '../../../src/errors.js';
import { deriveAccount, generateSeed } from '../../../src/nano/index.js';
import { balance } from '../../../src/ops/account/balance.js';
import { getSetting } from '../../../src/ops/profile/config.js';
import { send } from '../../../src/ops/spending/send.js';
import { Session } from '../../../src/ops/session.js';
import { lock, unlock, type UnlockResult } from '../../../src/ops/profile/unlock.js';
import { createWallet, exportWallet } from '../../../src/ops/profile/wallet.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { newUser, PASSWORD, type CliUser } from '../../helpers/processes/cli.js';
import { onTerminal, ptyMissing } from '../../helpers/processes/pty.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { alive, remoteWallet, sessionOf, socketOf, unlockInProcess, waitUntil } from '../../helpers/processes/unlocked.js';

// `nanopay unlock` / `lock` through the built bin/run.js against a real sandbox: what the commands themselves do
// (flags, exit codes, messages, --json, the prompt). Setup, and checks the front end adds nothing to, run
// in-process; the agent's own behaviour (expiry, key store changes, malformed requests, a dead agent's socket,
// SIGTERM, profiles) is in test/integration/unlocked-session.test.ts.
let sb: RunningSandbox;
const started: number[] = [];
const users: CliUser[] = [];

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  // Whatever a failed test left running ends here (lock --all in-process: no process per user).
  for (const user of users) await lock(sessionOf(user), { all: true });
  for (const pid of started) if (alive(pid)) process.kill(pid, 'SIGKILL');
  await sb?.close();
  await shutdownWorkers();
});

/** No password from anywhere: only an unlocked session can help. */
const NO_PASSWORD = { NANOPAY_PASSWORD: undefined };

type Unlocked = UnlockResult & { _code: number | null };

/** A user with a service-made wallet (its API key and seed in the key store), made in-process, and a 0600 password file. */
async function walletUser(amount?: string): Promise<{ user: CliUser; address: string; passwordFile: string }> {
  const user = await newUser(sb.url);
  users.push(user);
  const address = await remoteWallet(user, amount);
  const passwordFile = join(user.configDir, 'password.txt');
  await writeFile(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
  return { user, address, passwordFile };
}

async function unlockedInProcess(user: CliUser, profile?: string): Promise<UnlockResult> {
  const result = await unlockInProcess(user, 60, profile);
  started.push(result.pid);
  return result;
}

/** A command of the user's without a password, in-process: it works only if an unlocked session lends the secrets. */
const balanceWithoutPassword = (user: CliUser, profile?: string): ReturnType<typeof balance> =>
  balance(sessionOf(user, { password: false, ...(profile === undefined ? {} : { profile }) }));

describe('nanopay unlock / lock', () => {
  it('after unlock --password-stdin, commands need no password and no secret shows; lock ends it and the password is needed again', async () => {
    const { user } = await walletUser('10');
    const bob = deriveAccount({ seed: generateSeed(), index: 0 }).address;
    const exported = await exportWallet(sessionOf(user));
    const apiKey = await sessionOf(user).apiKey();
    expect(apiKey).toBeTypeOf('string');
    expect((await getSetting(sessionOf(user), 'api-key')).value).toBe('(set, encrypted)');
    const secrets = [PASSWORD, exported.secret, exported.accounts[0]!.private_key, apiKey as string];

    const before = Date.now();
    const result = await user.run(['unlock', '--for', '15m', '--password-stdin', '--json'], { env: NO_PASSWORD, input: `${PASSWORD}\n` });
    expect(result.code, result.stderr).toBe(0);
    const unlocked = JSON.parse(result.stdout) as Unlocked;
    started.push(unlocked.pid);
    expect(unlocked).toMatchObject({ profile: 'default', seconds: 900, socket: socketOf(user), replaced: false });
    const expiry = Date.parse(unlocked.expires_at);
    expect(expiry).toBeGreaterThanOrEqual(before + 900_000);
    expect(expiry).toBeLessThanOrEqual(Date.now() + 900_000);

    // The socket: 0600, ours, in a 0700 dir.
    const socketInfo = await lstat(socketOf(user));
    expect(socketInfo.isSocket()).toBe(true);
    expect(socketInfo.mode & 0o777).toBe(0o600);
    expect(socketInfo.uid).toBe(process.getuid?.());
    expect((await stat(join(user.configDir, 'sessions'))).mode & 0o777).toBe(0o700);

    // A command without a password, as a process of its own; a send in-process (signed through the session, in Session).
    const shown = await user.run(['balance'], { env: NO_PASSWORD });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain('Balance: 10 XNO');
    expect(await send(sessionOf(user, { password: false }), { to: bob, amount: { xno: '2.5' } })).toMatchObject({ balance_after: '7.5' });
    expect((await balance(sessionOf(user), { address: bob })).pending).toBe('2.5');

    const locked = await user.run(['lock']);
    expect(locked.code).toBe(0);
    expect(locked.stdout).toContain('Locked: the unlocked session of profile "default" ended.');
    expect(existsSync(socketOf(user))).toBe(false);
    await waitUntil('the agent process to end', () => !alive(unlocked.pid), 5000);

    await expect(balanceWithoutPassword(user)).rejects.toMatchObject({ code: 'PASSWORD_REQUIRED' });
    const again = await user.run(['lock']);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('No unlocked session was running for profile "default"; nothing to do.');
    expect(await lock(sessionOf(user))).toEqual({ profile: 'default', ended: 0, stale_removed: false });

    const outputs = [result, shown, locked, again].flatMap((r) => [r.stdout, r.stderr]).join('\n');
    if (existsSync('/proc/self/environ')) {
      // Unlocked with the password in the environment this time: the agent still gets none of it.
      const fromEnv = await user.json<Unlocked>(['unlock', '--for', '60s']);
      expect(fromEnv._code).toBe(0);
      started.push(fromEnv.pid);
      const cmdline = readFileSync(`/proc/${fromEnv.pid}/cmdline`, 'utf8');
      const environ = readFileSync(`/proc/${fromEnv.pid}/environ`, 'utf8');
      expect(cmdline.split('\0').filter(Boolean)).toEqual([process.execPath, expect.stringMatching(/dist\/app\/session-process\.js$/)]);
      // None of the environment but HOME and PostgreSQL's settings (for a shared store), and the IPC channel's variables that Node itself sets.
      for (const entry of environ.split('\0').filter(Boolean)) expect(entry).toMatch(/^(NODE_CHANNEL_[A-Z_]+=[\w-]*|HOME=.*|PG[A-Z_]*=.*)$/);
      for (const secret of secrets) {
        expect(cmdline).not.toContain(secret);
        expect(environ).not.toContain(secret);
      }
      expect(await lock(sessionOf(user))).toMatchObject({ ended: 1 });
    }
    for (const secret of secrets) expect(outputs).not.toContain(secret);
    // No file in the config dir holds a secret in the clear.
    for (const name of ['config.json', 'keystore.json']) {
      const content = await readFile(join(user.configDir, name), 'utf8');
      for (const secret of secrets) expect(content).not.toContain(secret);
    }
  });

  it('ends when a command changes the key store, and changing it still needs the password', async () => {
    const { user, passwordFile } = await walletUser();
    const unlocked = await unlockedInProcess(user);
    // Without a password a change is refused (config set api-key and wallet export too: the integration test);
    // the session keeps running.
    await expect(createWallet(sessionOf(user, { password: false }), { name: 'second' })).rejects.toMatchObject({ code: 'PASSWORD_REQUIRED', exitCode: 6 });
    expect(alive(unlocked.pid)).toBe(true);
    await expect(balanceWithoutPassword(user)).resolves.toMatchObject({ balance: '0' });

    const created = await user.run(['wallet', 'create', '--name', 'second', '--password-file', passwordFile, '--json'], { env: NO_PASSWORD });
    expect(created.code, created.stderr).toBe(0);
    expect(created.stderr).toContain('The key store changed, so its unlocked session ended');
    expect(existsSync(socketOf(user))).toBe(false);
    await waitUntil('the agent process to end', () => !alive(unlocked.pid), 5000);
    await expect(balanceWithoutPassword(user)).rejects.toMatchObject({ code: 'PASSWORD_REQUIRED' });
  });

  it('showing a secret always asks for the password: wallet export and config get --reveal refuse without one while a session runs', async () => {
    const { user, passwordFile } = await walletUser();
    const exported = await exportWallet(sessionOf(user));
    const apiKey = (await sessionOf(user).apiKey()) as string;
    const secrets = [exported.secret, exported.accounts[0]!.private_key, apiKey];
    const unlocked = await unlockedInProcess(user);

    const refused = [
      await user.run(['wallet', 'export', '--yes', '--json'], { env: NO_PASSWORD }),
      await user.run(['wallet', 'export', '--yes'], { env: NO_PASSWORD }),
      await user.run(['config', 'get', 'api-key', '--reveal', '--json'], { env: NO_PASSWORD }),
    ];
    for (const result of refused) {
      expect(result.code, result.stderr).toBe(6);
      expect(`${result.stdout}${result.stderr}`).toContain('PASSWORD_REQUIRED');
      for (const secret of secrets) expect(`${result.stdout}${result.stderr}`).not.toContain(secret);
    }
    // The session is still there for what it is for, and the password still shows the secret.
    expect(alive(unlocked.pid)).toBe(true);
    await expect(balanceWithoutPassword(user)).resolves.toMatchObject({ balance: '0' });
    const shown = await user.run(['config', 'get', 'api-key', '--reveal', '--password-file', passwordFile], { env: NO_PASSWORD });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toBe(`${apiKey}\n`);
    expect(await lock(sessionOf(user))).toMatchObject({ ended: 1 });
  });

  it('refuses a sessions dir open to others; lock --all ends the sessions of every profile, and shows no secret', async () => {
    const { user } = await walletUser();
    await createWallet(sessionOf(user, { profile: 'other' }));
    const exported = await exportWallet(sessionOf(user));
    const secrets = [PASSWORD, exported.secret, exported.accounts[0]!.private_key, (await sessionOf(user).apiKey()) as string];
    const sessions = [await unlockedInProcess(user), await unlockedInProcess(user, 'other')];

    const dir = join(user.configDir, 'sessions');
    await chmod(dir, 0o755);
    const refused = await balanceWithoutPassword(user).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(NanoPayError);
    expect(refused).toMatchObject({ code: 'UNSAFE_SESSION', exitCode: 1, message: expect.stringContaining('is open to others (mode 0755)') });
    await chmod(dir, 0o700);
    await expect(balanceWithoutPassword(user)).resolves.toMatchObject({ balance: '0' });

    const all = await user.run(['lock', '--all', '--json']);
    expect(all.code, all.stderr).toBe(0);
    expect(JSON.parse(all.stdout)).toMatchObject({ profile: null, ended: 2 });
    for (const secret of secrets) expect(`${all.stdout}${all.stderr}`).not.toContain(secret);
    for (const { pid } of sessions) await waitUntil('the agents to end', () => !alive(pid), 5000);
    expect(existsSync(socketOf(user))).toBe(false);
    expect(existsSync(socketOf(user, 'other'))).toBe(false);
  });

  it('checks its duration and the password before starting anything', async () => {
    const { user, passwordFile } = await walletUser();
    // Every bad duration is refused by the operation (the integration test); here the command's exit code.
    const duration = await user.run(['unlock', '--for', '-1m', '--password-file', passwordFile], { env: NO_PASSWORD });
    expect(duration.code, duration.stderr).toBe(2);
    expect(duration.stderr).toContain('[USAGE]');
    // A wrong password, and none at all, are the operation's refusals (the front end's exit 6 for both: wallet-flow).
    const wrong = new Session({ password: async () => 'not the password', env: user.env });
    await expect(unlock(wrong, { seconds: 900 })).rejects.toMatchObject({ code: 'WRONG_PASSWORD', exitCode: 6 });
    await expect(unlock(sessionOf(user, { password: false }), { seconds: 900 })).rejects.toMatchObject({ code: 'PASSWORD_REQUIRED', exitCode: 6 });
    expect(existsSync(socketOf(user))).toBe(false);
    const human = await user.run(['unlock', '--for', '1h30m', '--password-file', passwordFile], { env: NO_PASSWORD });
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/Unlocked profile "default" until .+ \(1h30m\), scope all; commands need no password until then\./);
    expect(await lock(sessionOf(user))).toMatchObject({ ended: 1 });
  });

  it('--help lists unlock and lock as commands, never lock as a topic', async () => {
    const user = await newUser(sb.url, { COLUMNS: '200' });
    const help = await user.run(['--help']);
    expect(help.code).toBe(0);
    const [topics, commands] = help.stdout.split('COMMANDS');
    expect(topics).not.toMatch(/^ {2}(un)?lock\s/m);
    expect(commands).toMatch(/^ {2}lock\s+End the unlocked session/m);
    expect(commands).toMatch(/^ {2}unlock\s+Unlock the key store/m);
  });

  it.skipIf(ptyMissing !== undefined)('on a terminal: asks for the password, then lets the terminal go', async () => {
    const { user } = await walletUser();
    const terminal = onTerminal(['unlock', '--for', '60s'], { ...user.env, NANOPAY_PASSWORD: '' }, { columns: 80 });
    await terminal.waitFor('password');
    terminal.type(`${PASSWORD}\r`);
    // The agent holds no part of the terminal: the command's exit ends the session of `script`.
    expect(await terminal.exited).toBe(0);
    expect(terminal.output).toContain('Unlocked profile "default"');
    expect(terminal.output).not.toContain(PASSWORD);
    await expect(balanceWithoutPassword(user)).resolves.toMatchObject({ balance: '0' });
    expect(await lock(sessionOf(user))).toMatchObject({ ended: 1 });
  });
});
