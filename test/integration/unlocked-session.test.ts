import { existsSync } from 'node:fs';
import { copyFile, readFile, rename, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildChangeBlock, buildReceiveBlock, buildSendBlock, deriveAccount, generateMnemonic, generateSeed, hashBlock, verifyBlock, DEFAULT_REPRESENTATIVE, type StateBlock } from '../../src/nano/index.js';
import { balance } from '../../src/ops/account/balance.js';
import { setSetting } from '../../src/ops/profile/config.js';
import { receive } from '../../src/ops/account/receive.js';
import { send } from '../../src/ops/spending/send.js';
import { lock, parseUnlockDuration, type UnlockResult } from '../../src/ops/profile/unlock.js';
import { createWallet, exportWallet, importWallet } from '../../src/ops/profile/wallet.js';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import { newUser, type CliUser } from '../helpers/processes/cli.js';
import { fund, sandbox } from '../helpers/ledger/sandbox.js';
import { alive, remoteWallet, sessionOf, socketOf, unlockInProcess, waitUntil } from '../helpers/processes/unlocked.js';
import { stateBlockOf } from '../helpers/ledger/chain.js';

/**
 * The unlocked session's process (src/session/process.ts) and its client,
 * started through the operation (ops unlock) against a real sandbox: the real
 * agent process on a real socket in the user's config dir, and the commands'
 * side in-process. What the commands print and exit with: test/e2e/wallet/unlock.test.ts.
 * The tests run concurrently: each has its own user, and most of their time is
 * waiting for an agent to notice something.
 */
let sb: RunningSandbox;
const started: number[] = [];
const users: CliUser[] = [];

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  // Whatever a failed test left running ends here.
  for (const user of users) await lock(sessionOf(user), { all: true });
  for (const pid of started) if (alive(pid)) process.kill(pid, 'SIGKILL');
  await sb?.close();
});

/** A user with a service-made wallet: its API key and seed in the key store. */
async function walletUser(): Promise<CliUser> {
  const user = await newUser(sb.url);
  users.push(user);
  await remoteWallet(user);
  return user;
}

async function unlocked(user: CliUser, seconds = 60, profile?: string): Promise<UnlockResult> {
  const result = await unlockInProcess(user, seconds, profile);
  started.push(result.pid);
  return result;
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

const PASSWORD_REQUIRED = { code: 'PASSWORD_REQUIRED' };

describe.concurrent('the unlocked session', () => {
  it('expires by itself: the socket goes and the agent ends, not before its time', async () => {
    const user = await walletUser();
    const session = await unlocked(user, 2);
    expect(session.seconds).toBe(2);
    await waitUntil('the socket to disappear at expiry', () => !existsSync(socketOf(user)), 10_000);
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(session.expires_at));
    await waitUntil('the agent process to end', () => !alive(session.pid), 5000);
    await expect(balance(sessionOf(user, { password: false }))).rejects.toMatchObject(PASSWORD_REQUIRED);
  });

  it('changing the key store and showing a seed still need the password; the session keeps running', async () => {
    const user = await walletUser();
    const session = await unlocked(user);
    const noPassword = (): ReturnType<typeof sessionOf> => sessionOf(user, { password: false });
    await expect(createWallet(noPassword(), { name: 'second' })).rejects.toMatchObject(PASSWORD_REQUIRED);
    await expect(setSetting(noPassword(), 'api-key', 'another-key')).rejects.toMatchObject(PASSWORD_REQUIRED);
    await expect(exportWallet(noPassword())).rejects.toMatchObject(PASSWORD_REQUIRED);
    expect(alive(session.pid)).toBe(true);
    await expect(balance(noPassword())).resolves.toMatchObject({ balance: '0' });
  });

  it('never hands out a seed, mnemonic, passphrase or private key, whatever it is asked: it derives and signs', async () => {
    const user = await walletUser();
    const setup = sessionOf(user);
    const mnemonic = generateMnemonic(24);
    const passphrase = 'my own passphrase';
    await importWallet(setup, { name: 'words', kind: 'mnemonic', secret: mnemonic, passphrase });
    const single = deriveAccount({ seed: generateSeed(), index: 0 });
    await importWallet(setup, { name: 'single', kind: 'private-key', secret: single.privateKey });
    await setSetting(setup, 'node-auth', 'node-token-123');
    const { secret: seed } = await exportWallet(setup, 'default');
    const apiKey = (await setup.apiKey()) as string;
    const accounts = {
      default: [0, 1, 2].map((index) => deriveAccount({ seed, index })),
      words: [0, 1].map((index) => deriveAccount({ mnemonic, passphrase, index })),
      single: [single],
    };
    const secrets = [seed, mnemonic, passphrase, ...Object.values(accounts).flat().map((a) => a.privateKey)];
    await unlocked(user);
    const socket = socketOf(user);
    const ask = async (request: Record<string, unknown> | string): Promise<Record<string, any>> => {
      const answer = await rawRequest(socket, `${typeof request === 'string' ? request : JSON.stringify(request)}\n`);
      answers.push(answer);
      return JSON.parse(answer) as Record<string, any>;
    };
    const answers: string[] = [];
    // A block the session is shown with the one before it: a change (the balance stays), so no spend to judge.
    const blocksOf = (address: string): { previous: StateBlock; block: StateBlock } => {
      const previous = buildReceiveBlock({ address, frontier: 'A'.repeat(64), balance: 0n, representative: DEFAULT_REPRESENTATIVE }, { sourceHash: 'B'.repeat(64), amount: 10n });
      return { previous, block: buildChangeBlock({ address, frontier: hashBlock(previous), balance: 10n, representative: DEFAULT_REPRESENTATIVE }, { representative: single.address }) };
    };

    // The op that handed out everything is gone; the status says nothing secret.
    expect(await ask({ op: 'secrets' })).toMatchObject({ ok: false, error: { code: 'BAD_REQUEST' } });
    expect(await ask({ op: 'ping' })).not.toHaveProperty('secrets');
    // Lent: only the bearer credentials that commands send over HTTP anyway.
    expect((await ask({ op: 'credentials' })).credentials).toEqual({ 'api-key': apiKey, 'node-auth': 'node-token-123' });
    // Derived and signed in the session, for every kind of wallet.
    for (const [wallet, list] of Object.entries(accounts)) {
      for (const [index, account] of list.entries()) {
        expect(await ask({ op: 'account', wallet, index })).toMatchObject({ ok: true, address: account.address, public_key: account.publicKey });
        const { previous, block } = blocksOf(account.address);
        const signed = await ask({ op: 'sign', wallet, index, block, previous });
        expect(signed).toMatchObject({ ok: true, signature: expect.stringMatching(/^[0-9A-F]{128}$/) });
        expect(verifyBlock(block, signed.signature as string), `${wallet} ${index}`).toBe(true);
      }
    }
    // What it does not hold, or cannot derive, is a clear refusal; so is a block of another account than the one named.
    const { previous, block } = blocksOf(accounts.default[0]!.address);
    expect(await ask({ op: 'sign', wallet: 'ghost', index: 0, block, previous })).toMatchObject({ ok: false, error: { code: 'NOT_IN_SESSION' } });
    expect(await ask({ op: 'account', wallet: '__proto__', index: 0 })).toMatchObject({ ok: false, error: { code: 'NOT_IN_SESSION' } });
    expect(await ask({ op: 'sign', wallet: 'single', index: 1, block, previous })).toMatchObject({ ok: false, error: { code: 'INVALID_REQUEST' } });
    expect(await ask({ op: 'sign', wallet: 'default', index: 1, block, previous })).toMatchObject({ ok: false, error: { code: 'INVALID_REQUEST', message: expect.stringContaining('not of') } });
    // A bare hash is never signed: the block is shown, whole, with the one before it.
    const malformed: Record<string, unknown>[] = [
      { op: 'sign', wallet: 'default', index: 0 },
      { op: 'sign', wallet: 'default', index: 0, hash: 'A'.repeat(64) },
      { op: 'sign', wallet: 'default', index: 0, block: { ...block, previous: 'A'.repeat(63) }, previous },
      { op: 'sign', wallet: 'default', index: 0, block: { ...block, type: 'send' }, previous },
      { op: 'sign', wallet: 'default', index: 0, block: { ...block, balance: '-1' }, previous },
      { op: 'sign', wallet: 'default', index: 0, block: { ...block, extra: 1 }, previous },
      { op: 'sign', wallet: 'default', index: 0, block, previous: 12 },
      { op: 'sign', wallet: 'default', index: 0, block, previous, own: -1 },
      { op: 'judge', mode: 'sign', spend: {} },
      { op: 'account', wallet: 'default' },
      { op: 'account', wallet: 'default', index: -1 },
      { op: 'account', wallet: 'default', index: 1.5 },
      { op: 'account', wallet: 'default', index: '0' },
      { op: 'account', wallet: 'default', index: 2 ** 32 },
      { op: 'account', wallet: 7, index: 0 },
      { op: 'account', index: 0 },
      { op: 'account', wallet: 'default', index: 0, secret: true },
      { op: 'credentials', wallet: 'default' },
      { op: 'export', wallet: 'default' },
      { op: 'private_key', wallet: 'default', index: 0 },
    ];
    for (const request of malformed) expect(await ask(request), JSON.stringify(request)).toMatchObject({ ok: false, error: { code: 'BAD_REQUEST' } });

    const bytes = answers.join('\n').toLowerCase();
    for (const secret of secrets) expect(bytes).not.toContain(secret.toLowerCase());
  });

  it('send, receive and balance run through it without a password, and the ledger accepts its signatures; a wallet it does not hold is a clear error', async () => {
    const user = await walletUser();
    const setup = sessionOf(user);
    await importWallet(setup, { name: 'words', kind: 'mnemonic', secret: generateMnemonic(12), passphrase: 'salt' });
    await importWallet(setup, { name: 'single', kind: 'private-key', secret: deriveAccount({ seed: generateSeed(), index: 0 }).privateKey });
    const address = await setup.address('default', 0);
    await fund(sb.url, address, '5');
    await unlocked(user);
    const noPassword = (): ReturnType<typeof sessionOf> => sessionOf(user, { password: false });

    const opened = await receive(noPassword());
    expect(opened).toMatchObject({ total: '5', received: [{ subtype: 'open' }] });
    const words = await noPassword().address('words', 3);
    const sent = await send(noPassword(), { to: words, amount: { xno: '1.5' } });
    expect(sent).toMatchObject({ balance_after: '3.5' });
    const received = await receive(noPassword(), { wallet: 'words', index: 3 });
    expect(received).toMatchObject({ account: words, total: '1.5', received: [{ subtype: 'open' }] });
    await expect(balance(noPassword(), { wallet: 'words', index: 3 })).resolves.toMatchObject({ balance: '1.5' });
    // The ledger checked each signature as it took the block; here each is checked again, on the block the sandbox keeps.
    const api = await setup.api();
    for (const hash of [opened.received[0]!.hash, sent.hash as string, received.received[0]!.hash]) expect(verifyBlock(stateBlockOf(await api.blockInfo(hash)))).toBe(true);

    // A wallet named in the settings but not in the session (written to config.json behind its back).
    setup.updateProfile((p) => ({ ...p, wallets: { ...p.wallets, ghost: { kind: 'seed', createdAt: new Date().toISOString(), accounts: {} } } }));
    await expect(send(noPassword(), { wallet: 'ghost', to: words, amount: { xno: '1' } })).rejects.toMatchObject({
      code: 'NOT_IN_SESSION',
      message: expect.stringContaining('"ghost"'),
      hint: expect.stringContaining('nanopay lock'),
    });
    await expect(receive(noPassword(), { wallet: 'single', index: 1 })).rejects.toMatchObject({ code: 'INVALID_REQUEST' });

    // The session ends while commands run: one with the password goes on with it; one without says it needs it.
    const withPassword = await sessionOf(user).account();
    const without = noPassword();
    const stranded = await without.account();
    expect(await lock(sessionOf(user))).toMatchObject({ ended: 1 });
    const previous = stateBlockOf(await api.blockInfo(sent.hash as string));
    const block = buildSendBlock({ address, frontier: sent.hash as string, balance: BigInt(previous.balance), representative: DEFAULT_REPRESENTATIVE }, { to: words, amount: 1n });
    expect(verifyBlock(block, await withPassword.sign(block))).toBe(true);
    await expect(stranded.sign(block, { previous })).rejects.toMatchObject(PASSWORD_REQUIRED);
    await expect(without.account('words', 3)).rejects.toMatchObject(PASSWORD_REQUIRED);
  });

  it('ends by itself when the key store file changes behind its back, and never lends stale secrets', async () => {
    const user = await walletUser();
    const other = await walletUser();
    const keystore = join(user.configDir, 'keystore.json');

    // The same content rewritten (a new inode): the agent notices and ends.
    const first = await unlocked(user);
    const text = await readFile(keystore, 'utf8');
    await writeFile(join(user.configDir, 'copy.json'), text, { mode: 0o600 });
    await rename(join(user.configDir, 'copy.json'), keystore);
    await waitUntil('the agent to notice the change and end', () => !alive(first.pid) && !existsSync(socketOf(user)), 10_000);

    // Another key store swapped in: the very next command gets nothing from the old session.
    const second = await unlocked(user);
    await copyFile(join(other.configDir, 'keystore.json'), join(user.configDir, 'swap.json'));
    await rename(join(user.configDir, 'swap.json'), keystore);
    await expect(balance(sessionOf(user, { password: false }))).rejects.toMatchObject(PASSWORD_REQUIRED);
    await waitUntil('the agent to end', () => !alive(second.pid) && !existsSync(socketOf(user)), 10_000);
  });

  it('answers malformed requests with an error and keeps running', async () => {
    const user = await walletUser();
    const session = await unlocked(user);
    const socket = socketOf(user);
    const parse = (line: string): { ok: boolean; error?: { code: string } } => JSON.parse(line) as { ok: boolean; error?: { code: string } };

    // A connection that says nothing is closed after a while: it waits while the others go on.
    const silent = rawRequest(socket, '');
    expect(parse(await rawRequest(socket, 'not json\n'))).toMatchObject({ ok: false, error: { code: 'BAD_REQUEST' } });
    expect(parse(await rawRequest(socket, '[1,2]\n'))).toMatchObject({ ok: false, error: { code: 'BAD_REQUEST' } });
    expect(parse(await rawRequest(socket, 'null\n'))).toMatchObject({ ok: false, error: { code: 'BAD_REQUEST' } });
    expect(parse(await rawRequest(socket, '{"op":"export"}\n'))).toMatchObject({ ok: false, error: { code: 'BAD_REQUEST' } });
    expect(parse(await rawRequest(socket, '{"op":{"toString":1}}\n'))).toMatchObject({ ok: false, error: { code: 'BAD_REQUEST' } });
    expect(parse(await rawRequest(socket, Buffer.from([0xff, 0xfe, 0x00, 0x0a])))).toMatchObject({ ok: false, error: { code: 'BAD_REQUEST' } });
    expect(parse(await rawRequest(socket, `{"op":"${'x'.repeat(70_000)}`))).toMatchObject({ ok: false, error: { code: 'TOO_LARGE' } });
    expect(parse(await rawRequest(socket, 'x'.repeat(1 << 20)))).toMatchObject({ ok: false, error: { code: 'TOO_LARGE' } });
    // Half a request, then the connection closes.
    expect(await rawRequest(socket, '{"op":"pi', { end: true })).toBe('');
    expect(await silent).toBe('');
    // Many connections at once.
    await Promise.all(Array.from({ length: 40 }, () => rawRequest(socket, 'garbage\n')));

    expect(alive(session.pid)).toBe(true);
    const ping = parse(await rawRequest(socket, '{"op":"ping"}\n')) as { ok: boolean; pid?: number; secrets?: unknown };
    expect(ping).toMatchObject({ ok: true, pid: session.pid });
    expect(ping.secrets).toBeUndefined();
    await expect(balance(sessionOf(user, { password: false }))).resolves.toMatchObject({ balance: '0' });
    expect(await lock(sessionOf(user))).toMatchObject({ ended: 1 });
  });

  it("a dead agent's socket is ignored and removed; SIGTERM ends an agent and removes its socket", async () => {
    const user = await walletUser();
    const killed = await unlocked(user);
    process.kill(killed.pid, 'SIGKILL');
    await waitUntil('the agent to die', () => !alive(killed.pid), 5000);
    expect(existsSync(socketOf(user))).toBe(true);
    // With a password the command works as without a session; the stale socket is cleared.
    await expect(balance(sessionOf(user))).resolves.toMatchObject({ balance: '0' });
    expect(existsSync(socketOf(user))).toBe(false);
    await expect(balance(sessionOf(user, { password: false }))).rejects.toMatchObject(PASSWORD_REQUIRED);

    const second = await unlocked(user);
    process.kill(second.pid, 'SIGKILL');
    await waitUntil('the agent to die', () => !alive(second.pid), 5000);
    expect(await lock(sessionOf(user))).toEqual({ profile: 'default', ended: 0, stale_removed: true });

    const third = await unlocked(user);
    process.kill(third.pid, 'SIGTERM');
    await waitUntil('SIGTERM to end the agent and remove its socket', () => !alive(third.pid) && !existsSync(socketOf(user)), 5000);
  });

  it('serves only the profile that was unlocked; unlocking again replaces the running session', async () => {
    const user = await walletUser();
    // A second profile, made before the unlock (making it changes the key store).
    await createWallet(sessionOf(user, { profile: 'other' }));
    const first = await unlocked(user);
    expect(first.replaced).toBe(false);
    await expect(balance(sessionOf(user, { password: false, profile: 'other' }))).rejects.toMatchObject(PASSWORD_REQUIRED);
    await expect(balance(sessionOf(user, { password: false }))).resolves.toMatchObject({ balance: '0' });

    const replaced = await unlocked(user);
    expect(replaced.replaced).toBe(true);
    await waitUntil('the first agent to end', () => !alive(first.pid), 5000);
    await expect(balance(sessionOf(user, { password: false }))).resolves.toMatchObject({ balance: '0' });
    expect(await lock(sessionOf(user))).toMatchObject({ ended: 1 });
  });

  it('lasts from 1 s to 12 h, written like 30s, 15m, 2h or 1h30m', () => {
    for (const duration of ['13h', '0s', 'abc', '15', '-1m', '']) expect(() => parseUnlockDuration(duration), duration).toThrow(expect.objectContaining({ code: 'USAGE' }));
    expect([parseUnlockDuration('1s'), parseUnlockDuration('15m'), parseUnlockDuration('1h30m'), parseUnlockDuration('12h')]).toEqual([1, 900, 5400, 43_200]);
  });
});
