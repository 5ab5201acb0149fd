import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deriveAccount, xnoToRaw } from '../../../src/nano/index.js';
import { topup } from '../../../src/ops/spending/credits.js';
import { donate } from '../../../src/ops/spending/donate.js';
import { payUri, requestPayment } from '../../../src/ops/requests/payments.js';
import { receive } from '../../../src/ops/account/receive.js';
import { send } from '../../../src/ops/spending/send.js';
import { createWallet } from '../../../src/ops/profile/wallet.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { commandSession, newUser, userWithWallet, type CliUser } from '../../helpers/processes/cli.js';
import { fund, ledger, sandbox } from '../../helpers/ledger/sandbox.js';

/**
 * A flag means one thing on every command: --wallet and --account pick the paying account on
 * every command that spends (send, pay, donate, credits topup) as on balance and receive;
 * --raw is send's "the amount is in raw", and balance shows raw amounts with --show-raw.
 * Each flag on each command runs through bin/run.js; setup, and what only the operation
 * decides, run in-process through commandSession as one more command of the user's would.
 */
let sb: RunningSandbox;
let user: CliUser;
let main: string;
let spare0: string;
let spare1: string;

/** An account's balance on the sandbox's ledger (what the spending commands changed, read without a command). */
const balanceRaw = async (address: string): Promise<bigint> => BigInt((await ledger(sb.url)).accounts.find((a) => a.address === address)?.balance ?? '0');

beforeAll(async () => {
  sb = await sandbox();
  ({ user, address: main } = await userWithWallet(sb.url, '5'));
  spare0 = (await createWallet(commandSession(user), { name: 'spare' })).address;
  // balance derives an account it has not seen yet.
  spare1 = (await user.json<{ account: string }>(['balance', '--wallet', 'spare', '--account', '1']))['account'];
  await fund(sb.url, spare0, '5');
  await fund(sb.url, spare1, '5');
  expect((await receive(commandSession(user), { wallet: 'spare', index: 0 })).total_raw).toBe(xnoToRaw('5').toString());
  // The spending tests below find 5 XNO on account 1 only if receive took the flags.
  expect((await user.json(['receive', '--wallet', 'spare', '--account', '1']))._code).toBe(0);
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

describe('--wallet and --account on every command that spends', () => {
  it('donate pays from the account named, not the active one', async () => {
    const before = await balanceRaw(main);
    const donated = await user.json<{ from: string; amount: string }>(['donate', '0.01', '--wallet', 'spare', '--account', '1', '--yes']);
    expect(donated).toMatchObject({ _code: 0, from: spare1, amount: '0.01' });
    expect(await balanceRaw(spare1)).toBe(xnoToRaw('4.99'));
    expect(await balanceRaw(main)).toBe(before);
  });

  it('pay pays the URI from the account named', async () => {
    const request = await requestPayment(commandSession(user), { amount: { xno: '0.5' } });
    const paid = await user.json<{ from: string; to: string; amount_raw: string }>(['pay', request.uri, '--wallet', 'spare', '--yes']);
    expect(paid).toMatchObject({ _code: 0, from: spare0, to: main, amount_raw: request.amount_raw });
    expect(await balanceRaw(spare0)).toBe(xnoToRaw('5') - BigInt(request.amount_raw));
  });

  it('credits topup pays the tier from the account named', async () => {
    const before = await balanceRaw(spare1);
    const mainBefore = await balanceRaw(main);
    const topped = await user.json<{ amount: string; topped_up_credits: number }>(['credits', 'topup', '10', '--wallet', 'spare', '--account', '1', '--yes']);
    expect(topped).toMatchObject({ _code: 0, topped_up_credits: 10 });
    expect(await balanceRaw(spare1)).toBe(before - xnoToRaw(topped.amount));
    expect(await balanceRaw(main)).toBe(mainBefore);
  });

  // The flag reaches each of these commands (the tests above); which wallet exists is the operation's.
  it('a wallet that does not exist is refused before anything is signed', async () => {
    const session = commandSession(user);
    const blocks = (await ledger(sb.url)).blocks.length;
    const attempts = {
      donate: () => donate(session, { amount: { xno: '0.01' }, wallet: 'nope' }),
      'credits topup': () => topup(session, { tier: '10', wallet: 'nope' }),
      pay: () => payUri(session, `nano:${main}?amount=1000`, { wallet: 'nope' }),
    };
    for (const [name, attempt] of Object.entries(attempts)) await expect(attempt(), name).rejects.toMatchObject({ code: 'NOT_FOUND', exitCode: 9 });
    expect((await ledger(sb.url)).blocks.length).toBe(blocks);
  });
});

describe('--raw and --show-raw', () => {
  it('balance shows raw amounts with --show-raw; --raw is not one of its flags', async () => {
    const shown = await user.run(['balance', '--show-raw']);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/^Balance: [\d.]+ XNO {2}\(\d+ raw\)$/m);
    const plain = await user.run(['balance']);
    expect(plain.stdout).not.toContain(' raw)');
    const old = await user.run(['balance', '--raw']);
    expect(old.code).toBe(2);
    expect(old.stderr).toContain('--raw');
  });

  // The command with --raw runs in backends.test.ts, with the same check.
  it('send --raw takes the amount in raw', async () => {
    const sent = await send(commandSession(user), { to: spare0, amount: { raw: '1000' } });
    expect(sent).toMatchObject({ amount_raw: '1000' });
  });
});

describe('wallet import --account', () => {
  it('starts at the account index given; --index is the same flag', async () => {
    const seed = randomBytes(32).toString('hex').toUpperCase();
    const expected = (await deriveAccount({ seed, index: 2 })).address;
    for (const flag of ['--account', '--index']) {
      const importer = await newUser(sb.url);
      const imported = await importer.json<{ address: string }>(['wallet', 'import', '--seed-stdin', flag, '2'], { input: `${seed}\n` });
      expect(imported, flag).toMatchObject({ _code: 0, address: expected });
    }
  });
});

describe('--timeout of a watch', () => {
  it('takes a duration (5s, 1m) as every other duration does, and seconds as before', async () => {
    const request = await requestPayment(commandSession(user), { amount: { xno: '0.25' } });
    for (const timeout of ['1s', '1']) {
      const watched = await user.run(['status', request.transaction_id, '--watch', '--timeout', timeout, '--interval', '1', '--json']);
      expect([watched.code, `${watched.stdout}${watched.stderr}`], timeout).toEqual([8, expect.stringMatching(/TIMEOUT/)]);
    }
    const wrong = await user.run(['status', request.transaction_id, '--watch', '--timeout', '5 parsecs']);
    expect([wrong.code, wrong.stderr]).toEqual([2, expect.stringMatching(/not a duration/)]);
    const receiving = await user.run(['receive', '--watch', '--timeout', '1s', '--json']);
    expect(receiving.code).toBe(0);
  });
});
