import { existsSync, readFileSync } from 'node:fs';
import { chmod, copyFile, lstat, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import { newUser, type CliUser, type RunResult } from '../helpers/cli.js';
import { onTerminal, ptyMissing } from '../helpers/pty.js';
import { fund, sandbox } from '../helpers/sandbox.js';

// `nanopay unlock` / `lock`: the unlocked session, through the built bin/run.js against a real sandbox.
const PASSWORD = 'test password 1';
let sb: RunningSandbox;
const started: number[] = [];
const users: CliUser[] = [];

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  // Whatever a failed test left running ends here (an agent also ends once its config dir is gone).
  for (const user of users) await user.run(['lock', '--all']);
  for (const pid of started) if (alive(pid)) process.kill(pid, 'SIGKILL');
  await sb?.close();
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Polls until `condition` holds; fails the test if it still does not after `ms`. */
async function waitUntil(what: string, condition: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`Still waiting after ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const socketOf = (user: CliUser, profile = 'default'): string => join(user.configDir, 'sessions', `${profile}.sock`);
/** No password from anywhere: only an unlocked session can help. */
const NO_PASSWORD = { NANOPAY_PASSWORD: undefined };

interface Unlocked {
  profile: string;
  expires_at: string;
  seconds: number;
  pid: number;
  socket: string;
  replaced: boolean;
  _code: number | null;
}

/** A user with a service-made wallet (its API key and seed in the key store) and a 0600 password file. */
async function walletUser(amount?: string): Promise<{ user: CliUser; address: string; passwordFile: string }> {
  const user = await newUser(sb.url);
  users.push(user);
  const created = await user.json<{ address: string }>(['wallet', 'create', '--remote']);
  expect(created._code).toBe(0);
  if (amount !== undefined) {
    await fund(sb.url, created.address, amount);
    expect((await user.json(['receive']))._code).toBe(0);
  }
  const passwordFile = join(user.configDir, 'password.txt');
  await writeFile(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
  return { user, address: created.address, passwordFile };
}

async function unlock(user: CliUser, passwordFile: string, duration = '60s'): Promise<Unlocked> {
  const unlocked = await user.json<Unlocked>(['unlock', '--for', duration, '--password-file', passwordFile], { env: NO_PASSWORD });
  expect(unlocked._code, JSON.stringify(unlocked)).toBe(0);
  started.push(unlocked.pid);
  return unlocked;
}

/** One raw request line (or bytes) to the socket, and what came back before it closed (a reset included). */
function rawRequest(socket: string, data: string | Buffer, options: { end?: boolean } = {}): Promise<string> {
  return new Promise((resolve) => {
    const client = connect(socket);
    let answer = '';
    client.on('data', (d: Buffer) => (answer += d.toString()));
    client.on('close', () => resolve(answer));
    client.on('error', () => resolve(answer));
    client.on('connect', () => (options.end ? client.end(data) : client.write(data)));
  });
}

const expectPasswordRequired = (result: RunResult): void => {
  expect(result.code, result.stderr).toBe(6);
  expect(result.stderr).toContain('[PASSWORD_REQUIRED]');
};

describe('nanopay unlock / lock', () => {
  it('after unlock --password-file, balance and send need no password; lock ends it and the password is needed again', async () => {
    const { user, passwordFile } = await walletUser('10');
    const { user: bob, address: bobAddress } = await walletUser();
    const before = Date.now();
    const unlocked = await unlock(user, passwordFile, '15m');
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

    const balance = await user.json<{ balance: string }>(['balance'], { env: NO_PASSWORD });
    expect(balance).toMatchObject({ _code: 0, balance: '10' });
    const sent = await user.json<{ hash: string; balance_after: string }>(['send', bobAddress, '2.5', '--yes'], { env: NO_PASSWORD });
    expect(sent).toMatchObject({ _code: 0, balance_after: '7.5' });
    expect((await bob.json<{ pending: string }>(['balance'])).pending).toBe('2.5');

    const locked = await user.run(['lock']);
    expect(locked.code).toBe(0);
    expect(locked.stdout).toContain('Locked: the unlocked session of profile "default" ended.');
    expect(existsSync(socketOf(user))).toBe(false);
    await waitUntil('the agent process to end', () => !alive(unlocked.pid), 5000);

    expectPasswordRequired(await user.run(['balance'], { env: NO_PASSWORD }));
    const again = await user.run(['lock']);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('No unlocked session was running for profile "default"; nothing to do.');
    expect(await user.json(['lock'])).toMatchObject({ _code: 0, profile: 'default', ended: 0, stale_removed: false });
  });

  it('expires by itself: the socket goes and the agent ends', async () => {
    const { user, passwordFile } = await walletUser();
    const unlocked = await unlock(user, passwordFile, '2s');
    expect(unlocked.seconds).toBe(2);
    await waitUntil('the socket to disappear at expiry', () => !existsSync(socketOf(user)), 10_000);
    await waitUntil('the agent process to end', () => !alive(unlocked.pid), 5000);
    expectPasswordRequired(await user.run(['balance'], { env: NO_PASSWORD }));
  });

  it('ends when a command changes the key store, and changing it still needs the password', async () => {
    const { user, passwordFile } = await walletUser();
    const unlocked = await unlock(user, passwordFile);
    // Without a password a change is refused, and so is showing a seed; the session keeps running.
    expectPasswordRequired(await user.run(['wallet', 'create', '--name', 'second'], { env: NO_PASSWORD }));
    expectPasswordRequired(await user.run(['config', 'set', 'api-key', '--stdin'], { env: NO_PASSWORD, input: 'another-key\n' }));
    expectPasswordRequired(await user.run(['wallet', 'export', '--yes'], { env: NO_PASSWORD }));
    expect(alive(unlocked.pid)).toBe(true);
    expect((await user.json(['balance'], { env: NO_PASSWORD }))._code).toBe(0);

    const created = await user.run(['wallet', 'create', '--name', 'second', '--password-file', passwordFile, '--json'], { env: NO_PASSWORD });
    expect(created.code, created.stderr).toBe(0);
    expect(created.stderr).toContain('The key store changed, so its unlocked session ended');
    expect(existsSync(socketOf(user))).toBe(false);
    await waitUntil('the agent process to end', () => !alive(unlocked.pid), 5000);
    expectPasswordRequired(await user.run(['balance'], { env: NO_PASSWORD }));
  });

  it('ends by itself when the key store file changes behind its back, and never lends stale secrets', async () => {
    const { user, passwordFile } = await walletUser();
    const { user: other } = await walletUser();
    const keystore = join(user.configDir, 'keystore.json');

    // The same content rewritten (a new inode): the agent notices and ends.
    const first = await unlock(user, passwordFile);
    const text = await readFile(keystore, 'utf8');
    await writeFile(join(user.configDir, 'copy.json'), text, { mode: 0o600 });
    await rename(join(user.configDir, 'copy.json'), keystore);
    await waitUntil('the agent to notice the change and end', () => !alive(first.pid) && !existsSync(socketOf(user)), 10_000);

    // Another key store swapped in: the very next command gets nothing from the old session.
    const second = await unlock(user, passwordFile);
    await copyFile(join(other.configDir, 'keystore.json'), join(user.configDir, 'swap.json'));
    await rename(join(user.configDir, 'swap.json'), keystore);
    expectPasswordRequired(await user.run(['balance'], { env: NO_PASSWORD }));
    await waitUntil('the agent to end', () => !alive(second.pid) && !existsSync(socketOf(user)), 10_000);
  });

  it('keeps secrets out of its argv, its environment and every output', async () => {
    const { user } = await walletUser();
    const exported = await user.json<{ secret: string; accounts: { private_key: string }[] }>(['wallet', 'export', '--yes']);
    expect(exported._code).toBe(0);
    const apiKeySet = await user.json<{ value: string }>(['config', 'get', 'api-key']);
    const secrets = [PASSWORD, exported.secret, exported.accounts[0]!.private_key];

    const result = await user.run(['unlock', '--for', '60s', '--password-stdin', '--json'], { env: NO_PASSWORD, input: `${PASSWORD}\n` });
    expect(result.code, result.stderr).toBe(0);
    const unlocked = JSON.parse(result.stdout) as Unlocked;
    started.push(unlocked.pid);
    const balance = await user.run(['balance'], { env: NO_PASSWORD });
    const locked = await user.run(['lock', '--json']);
    const outputs = [result, balance, locked].flatMap((r) => [r.stdout, r.stderr]).join('\n');
    if (existsSync('/proc/self/environ')) {
      // Unlocked with the password in the environment this time: the agent still gets none of it.
      const again = await user.json<Unlocked>(['unlock', '--for', '60s']);
      expect(again._code).toBe(0);
      started.push(again.pid);
      const cmdline = readFileSync(`/proc/${again.pid}/cmdline`, 'utf8');
      const environ = readFileSync(`/proc/${again.pid}/environ`, 'utf8');
      expect(cmdline.split('\0').filter(Boolean)).toEqual([process.execPath, expect.stringMatching(/dist\/app\/unlocked-agent\.js$/)]);
      // An empty environment, but for the IPC channel's variables that Node itself sets.
      for (const entry of environ.split('\0').filter(Boolean)) expect(entry).toMatch(/^NODE_CHANNEL_[A-Z_]+=[\w-]*$/);
      for (const secret of secrets) {
        expect(cmdline).not.toContain(secret);
        expect(environ).not.toContain(secret);
      }
      expect((await user.run(['lock'])).code).toBe(0);
    }
    for (const secret of secrets) expect(outputs).not.toContain(secret);
    expect(apiKeySet.value).toBe('(set, encrypted)');
    // Nothing but the socket was ever written by it: no file in the config dir holds a secret in the clear.
    for (const name of ['config.json', 'keystore.json']) {
      const content = await readFile(join(user.configDir, name), 'utf8');
      for (const secret of secrets) expect(content).not.toContain(secret);
    }
  });

  it('answers malformed requests with an error and keeps running', async () => {
    const { user, passwordFile } = await walletUser();
    const unlocked = await unlock(user, passwordFile);
    const socket = socketOf(user);
    const parse = (line: string): { ok: boolean; error?: { code: string } } => JSON.parse(line) as { ok: boolean; error?: { code: string } };

    expect(parse(await rawRequest(socket, 'not json\n'))).toMatchObject({ ok: false, error: { code: 'BAD_REQUEST' } });
    expect(parse(await rawRequest(socket, '[1,2]\n'))).toMatchObject({ ok: false, error: { code: 'BAD_REQUEST' } });
    expect(parse(await rawRequest(socket, 'null\n'))).toMatchObject({ ok: false, error: { code: 'BAD_REQUEST' } });
    expect(parse(await rawRequest(socket, '{"op":"export"}\n'))).toMatchObject({ ok: false, error: { code: 'BAD_REQUEST' } });
    expect(parse(await rawRequest(socket, '{"op":{"toString":1}}\n'))).toMatchObject({ ok: false, error: { code: 'BAD_REQUEST' } });
    expect(parse(await rawRequest(socket, Buffer.from([0xff, 0xfe, 0x00, 0x0a])))).toMatchObject({ ok: false, error: { code: 'BAD_REQUEST' } });
    expect(parse(await rawRequest(socket, `{"op":"${'x'.repeat(5000)}`))).toMatchObject({ ok: false, error: { code: 'TOO_LARGE' } });
    expect(parse(await rawRequest(socket, 'x'.repeat(1 << 20)))).toMatchObject({ ok: false, error: { code: 'TOO_LARGE' } });
    // Half a request, then the connection closes; a connection that says nothing is closed after a while.
    expect(await rawRequest(socket, '{"op":"pi', { end: true })).toBe('');
    expect(await rawRequest(socket, '')).toBe('');
    // Many connections at once.
    await Promise.all(Array.from({ length: 40 }, () => rawRequest(socket, 'garbage\n')));

    expect(alive(unlocked.pid)).toBe(true);
    const ping = parse(await rawRequest(socket, '{"op":"ping"}\n')) as { ok: boolean; pid?: number; secrets?: unknown };
    expect(ping).toMatchObject({ ok: true, pid: unlocked.pid });
    expect(ping.secrets).toBeUndefined();
    expect((await user.json(['balance'], { env: NO_PASSWORD }))._code).toBe(0);
    expect((await user.run(['lock'])).code).toBe(0);
  });

  it('a dead agent\'s socket is ignored and removed; SIGTERM ends an agent and removes its socket', async () => {
    const { user, passwordFile } = await walletUser();
    const killed = await unlock(user, passwordFile);
    process.kill(killed.pid, 'SIGKILL');
    await waitUntil('the agent to die', () => !alive(killed.pid), 5000);
    expect(existsSync(socketOf(user))).toBe(true);
    // With a password the command works as without a session; the stale socket is cleared.
    expect((await user.json(['balance']))._code).toBe(0);
    expect(existsSync(socketOf(user))).toBe(false);
    expectPasswordRequired(await user.run(['balance'], { env: NO_PASSWORD }));

    const second = await unlock(user, passwordFile);
    process.kill(second.pid, 'SIGKILL');
    await waitUntil('the agent to die', () => !alive(second.pid), 5000);
    expect(await user.json(['lock'])).toMatchObject({ _code: 0, ended: 0, stale_removed: true });

    const third = await unlock(user, passwordFile);
    process.kill(third.pid, 'SIGTERM');
    await waitUntil('SIGTERM to end the agent and remove its socket', () => !alive(third.pid) && !existsSync(socketOf(user)), 5000);
  });

  it('refuses a sessions dir open to others, and serves only the profile that was unlocked', async () => {
    const { user, passwordFile } = await walletUser();
    // A second profile, made before the unlock (making it changes the key store).
    expect((await user.json(['wallet', 'create', '--profile', 'other']))._code).toBe(0);
    const unlocked = await unlock(user, passwordFile);
    expectPasswordRequired(await user.run(['balance', '--profile', 'other'], { env: NO_PASSWORD }));

    const dir = join(user.configDir, 'sessions');
    await chmod(dir, 0o755);
    const refused = await user.run(['balance'], { env: NO_PASSWORD });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('[UNSAFE_SESSION]');
    expect(refused.stderr).toContain('is open to others (mode 0755)');
    await chmod(dir, 0o700);
    expect((await user.json(['balance'], { env: NO_PASSWORD }))._code).toBe(0);

    // Unlocking again replaces the running session.
    const replaced = await unlock(user, passwordFile);
    expect(replaced.replaced).toBe(true);
    await waitUntil('the first agent to end', () => !alive(unlocked.pid), 5000);
    expect((await user.json(['balance'], { env: NO_PASSWORD }))._code).toBe(0);
    expect(await user.json(['lock', '--all'])).toMatchObject({ _code: 0, profile: null, ended: 1 });
  });

  it('checks its duration and the password before starting anything', async () => {
    const { user, passwordFile } = await walletUser();
    for (const duration of ['13h', '0s', 'abc', '15', '-1m']) {
      const result = await user.run(['unlock', '--for', duration, '--password-file', passwordFile], { env: NO_PASSWORD });
      expect(result.code, `${duration}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toContain('[USAGE]');
    }
    await writeFile(join(user.configDir, 'wrong.txt'), 'not the password\n', { mode: 0o600 });
    const wrong = await user.run(['unlock', '--password-file', join(user.configDir, 'wrong.txt')], { env: NO_PASSWORD });
    expect(wrong.code).toBe(6);
    expect(wrong.stderr).toContain('[WRONG_PASSWORD]');
    expectPasswordRequired(await user.run(['unlock'], { env: NO_PASSWORD }));
    expect(existsSync(socketOf(user))).toBe(false);
    const human = await user.run(['unlock', '--for', '1h30m', '--password-file', passwordFile], { env: NO_PASSWORD });
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/Unlocked profile "default" until .+ \(1h30m\); commands need no password until then\./);
    expect((await user.json(['lock']))._code).toBe(0);
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
    expect((await user.json(['balance'], { env: NO_PASSWORD }))._code).toBe(0);
    expect((await user.run(['lock'])).code).toBe(0);
  });
});
