import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getSetting } from '../../../src/ops/profile/config.js';
import { credits, topup } from '../../../src/ops/spending/credits.js';
import { donate } from '../../../src/ops/spending/donate.js';
import { requestPayment, watchPayment, type WatchEvent } from '../../../src/ops/requests/payments.js';
import { send } from '../../../src/ops/spending/send.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { commandSession, userWithWallet, type CliUser } from '../../helpers/processes/cli.js';
import { startFaultyProxy } from '../../helpers/network/faulty-proxy.js';
import { ledger, sandbox } from '../../helpers/ledger/sandbox.js';

// What a demanding user met at the command line (issue 12): each case as they typed it. What the
// front end shows (exit codes, stdout and stderr) runs through bin/run.js; what only the operation
// decides (which error, what a result holds) runs in-process through commandSession, as one more
// command of the user's would.
let sb: RunningSandbox;
let payer: CliUser;
let payee: string;

beforeAll(async () => {
  sb = await sandbox();
  ({ user: payer } = await userWithWallet(sb.url, '5'));
  ({ address: payee } = await userWithWallet(sb.url));
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

/** A loopback port nothing listens on: the service is down. */
async function closedPort(): Promise<string> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

describe('send --id', () => {
  it('the same key with another amount is IDEMPOTENCY_MISMATCH (exit 10) naming what differs; the same parameters repeat the first result', async () => {
    const session = commandSession(payer);
    const first = await send(session, { to: payee, amount: { xno: '0.01' }, id: 'order-1' });
    const blocks = (await ledger(sb.url)).blocks.length;
    await expect(send(session, { to: payee, amount: { xno: '0.02' }, id: 'order-1' })).rejects.toMatchObject({
      code: 'IDEMPOTENCY_MISMATCH',
      exitCode: 10,
      message: expect.stringMatching(/amount/i),
    });
    // What the user saw: the refusal, never "Already sent".
    const plain = await payer.run(['send', payee, '0.02', '--yes', '--id', 'order-1']);
    expect(plain.code).toBe(10);
    expect(plain.stderr).toContain('[IDEMPOTENCY_MISMATCH]');
    expect(plain.stdout).not.toContain('Already sent');
    const same = await send(session, { to: payee, amount: { xno: '0.01' }, id: 'order-1' });
    expect(same).toMatchObject({ hash: first.hash, repeated: true });
    // pay under the same key and parameters says nothing new was paid, never "Paid".
    const repeated = await payer.run(['pay', `nano:${payee}?amount=${first.amount_raw}`, '--yes', '--id', 'order-1']);
    expect(repeated.code).toBe(0);
    expect(repeated.stdout).toContain(`Already paid under --id order-1: 0.01 XNO to ${payee} (block ${first.hash}). Nothing new was sent.`);
    expect(repeated.stdout).not.toMatch(/^Paid/m);
    expect((await ledger(sb.url)).blocks.length).toBe(blocks);
  });
});

describe('donate --id', () => {
  it('a repeated donation says nothing new was donated, never "Thank you! Donated"', async () => {
    const first = await donate(commandSession(payer), { amount: { xno: '0.01' }, id: 'gift-1' });
    expect(first.repeated).toBe(false);
    const blocks = (await ledger(sb.url)).blocks.length;
    const repeated = await payer.run(['donate', '0.01', '--yes', '--id', 'gift-1']);
    expect(repeated.code).toBe(0);
    expect(repeated.stdout).toContain(`Already donated under --id gift-1: 0.01 XNO to ${first.to} (block ${first.hash}). Nothing new was donated.`);
    expect(repeated.stdout).not.toMatch(/Thank you|^Donated/m);
    expect((await ledger(sb.url)).blocks.length).toBe(blocks);
  });
});

describe('status --watch when the service fails', () => {
  it('with the service down: failures on stderr, and at the timeout exit 5 saying it could not be reached', async () => {
    const down = await closedPort();
    const result = await payer.run(['status', UNKNOWN_ID, '--watch', '--interval', '1', '--timeout', '3'], { env: { NANOPAY_API_URL: down } });
    expect(result.code).toBe(5);
    expect(result.stderr).toMatch(/Warning \[REQUEST_ERROR\]/);
    expect(result.stderr).toMatch(/\[REQUEST_ERROR\] The service could not be asked for 3 s/);
    expect(result.stderr).not.toMatch(/Not paid/);
  });

  // Which events the watch reports is the operation's; --json printing each as a line and the error as the last
  // document is the command's, run in payments.test.ts (status --watch --json) and below.
  it('the events: errors only, within the timeout, then REQUEST_ERROR (exit 5)', async () => {
    const down = await closedPort();
    const events: WatchEvent[] = [];
    const watched = watchPayment(commandSession(payer, { NANOPAY_API_URL: down }), UNKNOWN_ID, { intervalMs: 1000, timeoutMs: 3000, onEvent: (e) => events.push(e) });
    await expect(watched).rejects.toMatchObject({ code: 'REQUEST_ERROR', exitCode: 5 });
    expect(events.length).toBeGreaterThan(0);
    for (const e of events) {
      expect(e).toMatchObject({ event: 'error', code: 'REQUEST_ERROR' });
      expect(e.elapsed_ms).toBeLessThanOrEqual(3000);
    }
  });

  it('a service that never answers is cut at the timeout (not after its own request timeout), exit 5', async () => {
    const proxy = await startFaultyProxy(sb.url, () => 'hang');
    const result = await payer.run(['status', UNKNOWN_ID, '--watch', '--timeout', '2', '--json'], { env: { NANOPAY_API_URL: proxy.url, NANOPAY_TIMEOUT_MS: '600000' }, timeoutMs: 60_000 });
    await proxy.close();
    expect(result.signal).toBeNull();
    expect(result.code).toBe(5);
    expect(JSON.parse(result.stdout.trim().split('\n').at(-1) as string)).toMatchObject({ error: { code: 'REQUEST_ERROR', message: expect.stringMatching(/2 s/) } });
  });

  it('a service that answers but nobody pays: TIMEOUT, exit 8, naming the timeout given', async () => {
    const request = await requestPayment(commandSession(payer), { amount: { xno: '0.5' } });
    const result = await payer.run(['status', request.transaction_id, '--watch', '--interval', '1', '--timeout', '2']);
    expect(result.code).toBe(8);
    expect(result.stderr).toContain('Not paid after 2 s');
  });
});

describe('profiles and settings', () => {
  it('a profile that does not exist is named, with those that do', async () => {
    const result = await payer.run(['balance', '--profile', 'nosuch']);
    expect(result.code).toBe(9);
    expect(result.stderr).toMatch(/no profile "nosuch"; the profiles are: default/);
    expect(result.stderr).not.toMatch(/No active wallet/);
  });

  it('config get shows the value in effect and its source; --json keeps the value clean', async () => {
    const fromEnv = await payer.json<{ value: string; source: string; variable: string }>(['config', 'get', 'api-url']);
    expect(fromEnv).toMatchObject({ value: sb.url, source: 'env', variable: 'NANOPAY_API_URL' });
    const human = await payer.run(['config', 'get', 'api-url']);
    expect(human.stdout.trim()).toBe(`${sb.url}  (from NANOPAY_API_URL)`);
    // Which source is in effect is the operation's.
    expect(await getSetting(commandSession(payer, { NANOPAY_API_URL: '' }), 'api-url')).toMatchObject({ value: 'http://127.0.0.1:7076', source: 'default' });
    const set = await payer.run(['config', 'set', 'work-mode', 'cpu', '--json']);
    expect(JSON.parse(set.stdout)).toMatchObject({ value: 'cpu', source: 'profile' });
  });
});

describe('credits topup', () => {
  it('without a terminal and without --yes it says plainly what needs confirming', async () => {
    const result = await payer.run(['credits', 'topup', '10']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('Buying 10 credits needs confirmation, and there is no terminal to ask on');
  });

  it('reports what the top-up\'s own calls cost', async () => {
    const session = commandSession(payer);
    const before = (await credits(session)).credits;
    const result = await topup(session, { tier: 10 });
    expect(result.credits_before).toBe(before);
    expect(result.calls_cost).toBeGreaterThan(0);
    expect(result.new_credits_balance).toBe(before + 10 - (result.calls_cost as number));
    const human = await payer.run(['credits', 'topup', '10', '--yes']);
    expect(human.stdout).toMatch(/Topped up 10 credits; balance now \d+ \(\d+ before; the top-up's own calls cost \d+\)\./);
  });
});

describe('work bench', () => {
  it('shows progress on stderr and prints an aligned table', async () => {
    const result = await payer.run(['work', 'bench', '--seconds', '0.5', '--workers', '2']);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('Measuring 1 thread for 0.5 s…');
    expect(result.stderr).toContain('Measuring 2 threads for 0.5 s…');
    const rows = result.stdout.split('\n').filter((l) => /^(THREADS|\d+ )/.test(l));
    expect(rows).toHaveLength(3);
    const column = (l: string): number => l.search(/SPEED|\d+\.\d+ MH\/s/);
    expect(new Set(rows.map(column)).size).toBe(1);
  });
});

describe('help, version, completion, unknown commands', () => {
  // --help and --version: help.test.ts (-h and help print the same page as --help) and startup.test.ts.
  it('-h and help print the top-level help; -v and version the version', async () => {
    for (const args of [['-h'], ['help']]) {
      const result = await payer.run(args);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain('USAGE');
      expect(result.stdout).toContain('send');
    }
    for (const args of [['-v'], ['version']]) {
      const result = await payer.run(args);
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/^nanopay-cli\/\d+\.\d+\.\d+ /);
    }
  });

  it('autocomplete prints a completion script for bash and zsh', async () => {
    for (const shell of ['bash', 'zsh']) {
      const result = await payer.run(['autocomplete', 'script', shell]);
      expect(result.code).toBe(0);
      expect(result.stdout.length).toBeGreaterThan(0);
    }
  });

  it('an unknown command suggests the nearest, shows no internal id, runs nothing; --json is an error document', async () => {
    const result = await payer.run(['sned', payee, '1', '--yes']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('"sned" is not a nanopay command. Did you mean send?');
    expect(result.stderr).not.toMatch(/sned:|nano_1\w*:/);
    const json = await payer.run(['walet', 'list', '--json']);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toMatchObject({ error: { code: 'USAGE', message: expect.stringContaining('Did you mean wallet list?') } });
  });
});
