import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, watch } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NanoPayError } from '../../../src/errors.js';
import { topup } from '../../../src/ops/spending/credits.js';
import { donate } from '../../../src/ops/spending/donate.js';
import { send } from '../../../src/ops/spending/send.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { userSession } from '../../helpers/ledger/backend-users.js';
import { BIN, userWithWallet, type CliUser } from '../../helpers/processes/cli.js';
import { startFaultyProxy } from '../../helpers/network/faulty-proxy.js';
import { ledger, sandbox } from '../../helpers/ledger/sandbox.js';
import { addressToPublicKey } from '../../../src/nano/index.js';

// A crash is a real process killed at a named moment; what runs next for the account (the rerun that settles the
// journal) is the same operation the next command would run, so it runs in-process, as a fresh Session: a new process's
// state. The commands' front end for send --id and credits topup is in backends, cli-issue and payments.

let sb: RunningSandbox;
let payer: CliUser;
let payerAddress: string;
const payee = 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj';

/** The payer's balance on the sandbox's ledger. */
async function balanceRaw(): Promise<bigint> {
  return BigInt((await ledger(sb.url)).accounts.find((a) => a.address === payerAddress)?.balance ?? '0');
}

function journalFiles(): string[] {
  const dir = join(payer.configDir, 'journal');
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.json')) : [];
}

/** Starts `nanopay args` for the payer as a child that the test may kill. */
function start(args: string[]): { child: ChildProcess; exited: Promise<void> } {
  const child = spawn(process.execPath, [BIN, ...args], { env: payer.env, stdio: 'ignore' });
  return { child, exited: new Promise((resolve) => child.once('exit', () => resolve())) };
}

function journalText(): string {
  const file = journalFiles()[0];
  return file === undefined ? '' : readFileSync(join(payer.configDir, 'journal', file), 'utf8');
}

/** Polls `check` every `everyMs` for up to 20 s; a wait that runs out fails. */
async function waitFor(check: () => boolean, what: string, everyMs = 50): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (check()) return;
    await sleep(everyMs);
  }
  throw new Error(`timed out waiting for ${what}`);
}

beforeAll(async () => {
  sb = await sandbox();
  ({ user: payer, address: payerAddress } = await userWithWallet(sb.url, '5'));
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

/** The next run for the payer: a new Session, as a new process has. */
const nextRun = (env: NodeJS.ProcessEnv = {}) => userSession({ ...payer, env: { ...payer.env, ...env } });

describe('journal: a block signed but not known to be published', () => {
  it('killed while publish hangs: the rerun republishes the same block, once', async () => {
    const proxy = await startFaultyProxy(sb.url, (method, path) => (method === 'POST' && path === '/block/publish' ? 'hold' : 'pass'));
    const before = await balanceRaw();
    const child = spawn(process.execPath, [BIN, 'send', payee, '0.5', '--yes', '--json'], {
      env: { ...payer.env, NANOPAY_API_URL: proxy.url },
      stdio: 'ignore',
    });
    await waitFor(() => journalFiles().length === 1 && proxy.seen.includes('POST /block/publish'), 'the send to reach publish');
    const entry = JSON.parse(await readFile(join(payer.configDir, 'journal', journalFiles()[0] as string), 'utf8')) as { hash: string };
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    await proxy.close();
    expect((await ledger(sb.url)).blocks.some((b) => b.hash === entry.hash)).toBe(false);

    // The next command for the account settles the journal before anything else.
    await send(nextRun(), { to: payee, amount: { xno: '0.25' } });
    const blocks = (await ledger(sb.url)).blocks;
    expect(blocks.filter((b) => b.hash === entry.hash)).toHaveLength(1);
    expect(journalFiles()).toEqual([]);
    expect(await balanceRaw()).toBe(before - 75n * 10n ** 28n);
  });

  it('answer lost after the block landed: the rerun sees it landed and signs nothing twice', async () => {
    const proxy = await startFaultyProxy(sb.url, (method, path) => (method === 'POST' && path === '/block/publish' ? 'forward-then-drop' : 'pass'));
    const before = await balanceRaw();
    const lost = await send(nextRun({ NANOPAY_API_URL: proxy.url }), { to: payee, amount: { xno: '0.5' }, id: 'lost-answer' }).catch((e: unknown) => e);
    await proxy.close();
    expect(lost).toBeInstanceOf(NanoPayError);
    expect(lost).toMatchObject({ code: 'REQUEST_ERROR', exitCode: 5 });
    expect(journalFiles()).toHaveLength(1);

    const retry = await send(nextRun(), { to: payee, amount: { xno: '0.5' }, id: 'lost-answer' });
    expect(retry.repeated).toBe(true);
    expect(journalFiles()).toEqual([]);
    expect(await balanceRaw()).toBe(before - 5n * 10n ** 29n);
  });
});

describe('kill -9 at the named moments', () => {
  it('send --id killed at any moment after signing: each rerun lands exactly one block and the daily total is exact', async () => {
    const before = await balanceRaw();
    const delays = [0, 3, 8, 15, 30];
    for (const [i, delay] of delays.entries()) {
      const run = start(['send', payee, '0.001', '--yes', '--id', `kill-${i}`, '--json']);
      await waitFor(() => journalFiles().length === 1 || run.child.exitCode !== null, 'the signed block in the journal');
      await sleep(delay);
      run.child.kill('SIGKILL');
      await run.exited;
      await send(nextRun(), { to: payee, amount: { xno: '0.001' }, id: `kill-${i}` });
      expect(journalFiles()).toEqual([]);
    }
    expect(await balanceRaw()).toBe(before - BigInt(delays.length) * 10n ** 27n);
  });

  it('donate --id killed at any moment after signing: a rerun donates nothing again, even when the service names another address', async () => {
    const donation = sb.service.donationAddress().address;
    const donations = (): number => [...sb.service.ledger.blocks.values()].filter((b) => b.subtype === 'send' && b.block.link === addressToPublicKey(donation)).length;
    // The reruns ask a service that now names another donation address (the payee): the key's recipient is the one recorded.
    const liar = await startFaultyProxy(sb.url, (method, path) => (method === 'GET' && path === '/donate/address' ? { rewrite: () => ({ address: payee }) } : 'pass'));
    const before = { donations: donations(), balance: await balanceRaw() };
    const blocks = (await ledger(sb.url)).blocks.length;
    const delays = [0, 3, 8, 15, 30];
    try {
      for (const [i, delay] of delays.entries()) {
        const run = start(['donate', '0.001', '--yes', '--id', `donate-kill-${i}`, '--json']);
        await waitFor(() => journalFiles().length === 1 || run.child.exitCode !== null, 'the signed donation in the journal');
        await sleep(delay);
        run.child.kill('SIGKILL');
        await run.exited;
        const rerun = await donate(nextRun({ NANOPAY_API_URL: liar.url }), { amount: { xno: '0.001' }, id: `donate-kill-${i}` });
        expect(rerun).toMatchObject({ repeated: true, to: donation, amount: '0.001' });
        expect(rerun.message).toMatch(/nothing new was donated/i);
        expect(journalFiles()).toEqual([]);
      }
    } finally {
      await liar.close();
    }
    expect(donations()).toBe(before.donations + delays.length);
    // One block per key and nothing else: none to the address the service named on the reruns.
    expect((await ledger(sb.url)).blocks.length).toBe(blocks + delays.length);
    expect(await balanceRaw()).toBe(before.balance - BigInt(delays.length) * 10n ** 27n);
  });

  it('a top-up killed just after it completed is completed by the rerun, not bought again', async () => {
    const service = addressToPublicKey(sb.service.dump().service as string);
    const payments = async (): Promise<number> => [...sb.service.ledger.blocks.values()].filter((b) => b.subtype === 'send' && b.block.link === service).length;
    let caught = false;
    const journalDir = join(payer.configDir, 'journal');
    for (let attempt = 0; attempt < 20 && !caught; attempt++) {
      const paid = await payments();
      // The answer is kept for the time of one directory fsync before it is reported: the stop comes from a watch of
      // the journal (the kernel's notice of the rename), not from polling, to land in that window.
      let run: ReturnType<typeof start> | undefined;
      let stopped = false;
      const watcher = watch(journalDir, () => {
        if (stopped || run === undefined || !journalText().includes('topupResult')) return;
        run.child.kill('SIGSTOP');
        stopped = true;
      });
      run = start(['credits', 'topup', '10', '--yes', '--json']);
      const started = run;
      await waitFor(() => stopped || started.child.exitCode !== null, 'the top-up answer in the journal, or the end of the run', 1);
      watcher.close();
      // Only a stop while the answer is kept and not yet reported is the moment under test.
      caught = stopped && journalText().includes('topupResult');
      run.child.kill('SIGKILL');
      await run.exited;
      const rerun = await topup(nextRun(), { tier: 10 });
      expect(rerun.topped_up_credits).toBe(10);
      if (caught) {
        expect(rerun.resumed).toBe(true);
        expect(await payments()).toBe(paid + 1);
      }
      expect(journalFiles()).toEqual([]);
    }
    expect(caught).toBe(true);
  });
});
