import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestPayment } from '../../../src/ops/requests/payments.js';
import { Session } from '../../../src/ops/session.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { PASSWORD, newUser, userWithWallet } from '../../helpers/processes/cli.js';
import { onTerminal, ptyMissing } from '../../helpers/processes/pty.js';
import { fund, ledger, sandbox } from '../../helpers/ledger/sandbox.js';
import { tempDir } from '../../helpers/processes/temp.js';

// On a real pseudo-terminal: spinners, prompts and Ctrl-C as a user meets them. Proof of work at the
// live thresholds only where a search must outlast a keystroke; elsewhere at the dev ones, which cost nothing.
let sb: RunningSandbox;

beforeAll(async () => {
  if (ptyMissing === undefined) sb = await sandbox();
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

const lines = (text: string, pattern: RegExp): number => text.split('\n').filter((l) => pattern.test(l)).length;

/** A frame of the spinner (ora's dots). */
const FRAME = /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/;
/** Two different frames, one after the other: the spinner moved. */
const MOVED = /([⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏])[\s\S]*?(?!\1)[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/;
/** No nonce meets it (one chance in 2^64 a hash): the search runs until it is stopped. */
const UNREACHABLE = 'ffffffffffffffff';

describe.skipIf(ptyMissing !== undefined)(`on a terminal${ptyMissing === undefined ? '' : ` (skipped: ${ptyMissing})`}`, { timeout: 120_000 }, () => {
  for (const columns of [undefined, 80]) {
    const size = columns === undefined ? {} : { columns };

    it(`receive of several pending blocks ends, its spinner with it (${columns ?? 'unsized'} columns)`, async () => {
      const { user, address } = await userWithWallet(sb.url);
      for (let i = 0; i < 3; i++) await fund(sb.url, address, '5');
      const terminal = onTerminal(['receive'], user.env, size);
      expect(await terminal.exited).toBe(0);
      expect(lines(terminal.output, /Received 5 XNO \((open|receive) [0-9A-F]{64}\)/)).toBe(3);
      expect(terminal.output).toContain('Total: 15 XNO');
      // The spinner was shown (from the start of each search, however short) and cleared before the results, and nothing was drawn after them.
      expect(terminal.output).toContain('Proof of work');
      const after = terminal.output.slice(terminal.output.indexOf('Total: 15 XNO'));
      expect(after).not.toContain('Proof of work');
      expect(after).not.toMatch(FRAME);
    });

    it(`the proof-of-work spinner keeps moving and reports progress while the work runs, and Ctrl-C ends both (${columns ?? 'unsized'} columns)`, async () => {
      // A search that never ends by itself: it lasts exactly as long as the test needs to watch it.
      const user = await newUser(sb.url);
      const terminal = onTerminal(['work', 'generate', '--root', 'AB'.repeat(32), '--threshold', UNREACHABLE], user.env, size);
      await terminal.waitFor('Proof of work');
      // Work runs off the event loop: frames keep coming, and so do the workers' reports.
      await terminal.waitFor(MOVED);
      await terminal.waitFor(/Proof of work: \d+\.\d MH\/s, expected ~\d+ s, elapsed \d/);
      terminal.type('\x03');
      expect(await terminal.exited).toBe(130);
      expect(terminal.output).toContain('[CANCELLED]');
      expect(terminal.output.slice(terminal.output.indexOf('[CANCELLED]'))).not.toMatch(FRAME);
    });
  }

  it('Ctrl-C during proof of work ends the command with 130, and nothing is published', async () => {
    // The account is opened on a dev ledger (its work costs nothing), and the same ledger is then served at the live
    // thresholds (the blocks in it stay valid): there a send's search takes many seconds, and Ctrl-C comes first.
    const dataDir = await tempDir('nanopay-sandbox-');
    const dev = await sandbox({ dataDir });
    const { user, address } = await userWithWallet(dev.url, '5').finally(() => dev.close());
    const live = await sandbox({ dataDir, thresholds: 'live' });
    try {
      const blocksBefore = (await ledger(live.url)).blocks.length;
      const terminal = onTerminal(['send', address, '1', '--yes'], { ...user.env, NANOPAY_API_URL: live.url }, { columns: 80 });
      await terminal.waitFor('Proof of work');
      terminal.type('\x03');
      expect(await terminal.exited).toBe(130);
      expect(terminal.output).toContain('[CANCELLED]');
      expect((await ledger(live.url)).blocks.length).toBe(blocksBefore);
    } finally {
      await live.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('Ctrl-C at the password prompt is CANCELLED, exit 130', async () => {
    const { user } = await userWithWallet(sb.url);
    const terminal = onTerminal(['receive'], { ...user.env, NANOPAY_PASSWORD: '' }, { columns: 80 });
    await terminal.waitFor('password');
    terminal.type('\x03');
    expect(await terminal.exited).toBe(130);
    expect(terminal.output).toContain('[CANCELLED]');
    expect(terminal.output).not.toContain('INTERNAL_ERROR');
  });

  it('Ctrl-C at the confirmation prompt is CANCELLED, exit 130, and nothing is sent', async () => {
    const { user, address } = await userWithWallet(sb.url, '1');
    const blocksBefore = (await ledger(sb.url)).blocks.length;
    const terminal = onTerminal(['send', address, '0.1'], user.env, { columns: 80 });
    await terminal.waitFor('Send 0.1 XNO?');
    terminal.type('\x03');
    expect(await terminal.exited).toBe(130);
    expect(terminal.output).toContain('[CANCELLED]');
    expect(terminal.output).not.toContain('INTERNAL_ERROR');
    expect((await ledger(sb.url)).blocks.length).toBe(blocksBefore);
  });

  it('wallet create asks again when the two passwords differ', async () => {
    // The first run: the key store made here, at its real cost.
    const user = await newUser(sb.url, { NANOPAY_PASSWORD: '' }, { keystore: 'none' });
    const create = onTerminal(['wallet', 'create'], user.env, { columns: 80 });
    await create.waitFor('New key store password');
    create.type('first password\r');
    await create.waitFor('Repeat the password');
    create.type('other password\r');
    await create.waitFor('differ; try again (2 tries left)');
    await create.waitFor(/differ; try again[\s\S]*New key store password/);
    create.type('good password\r');
    await create.waitFor(/differ; try again[\s\S]*Repeat the password/);
    create.type('good password\r');
    expect(await create.exited).toBe(0);
    expect(create.output).toContain('Created wallet');
  });

  it('unlock gives three tries', async () => {
    // The store's cost is not the subject here: a store made at the cheap cost, so five tries cost milliseconds.
    const { user } = await userWithWallet(sb.url);
    const env = { ...user.env, NANOPAY_PASSWORD: '' };
    const unlock = onTerminal(['wallet', 'export', '--yes'], env, { columns: 80 });
    await unlock.waitFor('Key store password');
    unlock.type('wrong password\r');
    await unlock.waitFor('Wrong password; 2 tries left');
    unlock.type(`${PASSWORD}\r`);
    expect(await unlock.exited).toBe(0);
    expect(unlock.output).toContain('Secret:');

    const fail = onTerminal(['wallet', 'export', '--yes'], env, { columns: 80 });
    for (const left of ['2 tries', '1 try']) {
      await fail.waitFor(/Key store password/);
      fail.type('wrong password\r');
      await fail.waitFor(`Wrong password; ${left} left`);
    }
    fail.type('wrong password\r');
    expect(await fail.exited).toBe(6);
    expect(fail.output).toContain('[WRONG_PASSWORD]');
    expect(fail.output).not.toContain('Secret:');
  });

  it('NO_COLOR: the status --watch spinner has no colour codes', async () => {
    const { user } = await userWithWallet(sb.url);
    // Made in this process: the request is only the setup here.
    const request = await requestPayment(new Session({ password: async () => PASSWORD, configDir: user.configDir, env: user.env }), { amount: { xno: '0.5' } });
    const terminal = onTerminal(['status', request.transaction_id, '--watch', '--interval', '1', '--timeout', '2'], { ...user.env, NO_COLOR: '1' }, { columns: 80 });
    expect(await terminal.exited).toBe(8);
    expect(terminal.output).toContain('Waiting for payment');
    // SGR sequences (colours, bold, dim): ESC [ … m.
    expect(terminal.output).not.toMatch(/\u001B\[[0-9;]*m/);
  });
});
