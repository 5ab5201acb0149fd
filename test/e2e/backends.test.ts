import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NanoPayError } from '../../src/errors.js';
import { RAW_PER_XNO, xnoToRaw } from '../../src/nano/index.js';
import { balance } from '../../src/ops/balance.js';
import { topup } from '../../src/ops/credits.js';
import { donate } from '../../src/ops/donate.js';
import { payUri, paymentStatus, requestPayment, watchPayment, type WatchEvent } from '../../src/ops/payments.js';
import { receive } from '../../src/ops/receive.js';
import { send } from '../../src/ops/send.js';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import { shutdownWorkers } from '../../src/work/index.js';
import { BACKENDS, backendUser, userSession, type Backend, type BackendUser } from '../helpers/backend-users.js';
import { BIN, type PaymentRequest } from '../helpers/cli.js';
import { fund, ledger, sandbox } from '../helpers/sandbox.js';

/**
 * The money commands against one sandbox that speaks both backends. The
 * commands are the same code on either backend (the backend is the Session's
 * choice), so their front end (flags, exit codes, --json) runs through
 * bin/run.js once, on one backend or the other; what they do on each backend
 * runs in-process through the same operations, with the assertions the commands
 * had. More of the operations per backend: test/integration/backends-ops.test.ts.
 * Wallets are made and funded in-process, as that is not the subject.
 */
const XNO = RAW_PER_XNO;

let sb: RunningSandbox;

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

/** A user of `backend` holding `amount` XNO, received in-process. */
async function funded(backend: Backend, amount: string): Promise<BackendUser> {
  const payer = await backendUser(sb, backend);
  await fund(sb.url, payer.address, amount);
  expect((await receive(payer.session)).total_raw).toBe(xnoToRaw(amount).toString());
  return payer;
}

/** Waits for `ready`, failing when it has not come after `ms`. */
async function until(ready: () => boolean, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`Gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function failure(promise: Promise<unknown>): Promise<NanoPayError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(NanoPayError);
  return error as NanoPayError;
}

describe('the commands through bin/run.js', () => {
  it('node: balance --receive, two send processes at once (--id, --raw), --dry-run without --yes', async () => {
    const alice = await backendUser(sb, 'node');
    const bob = await backendUser(sb, 'node');
    await fund(sb.url, alice.address, '10');
    const received = await alice.user.json<{ balance_raw: string; pending_raw: string; received: { subtype: string }[] }>(['balance', '--receive']);
    expect(received).toMatchObject({ _code: 0, balance_raw: (10n * XNO).toString(), pending_raw: '0' });
    expect(received.received.map((r) => r.subtype)).toEqual(['open']);

    // Two processes: the account lock (a file) orders them on one chain.
    const [one, two] = await Promise.all([
      alice.user.json<{ hash: string; amount_raw: string; repeated: boolean }>(['send', bob.address, '0.1', '--yes', '--id', 'order-node']),
      alice.user.json<{ hash: string; amount_raw: string }>(['send', bob.address, ((2n * XNO) / 10n).toString(), '--raw', '--yes']),
    ]);
    expect([one._code, two._code], JSON.stringify([one, two])).toEqual([0, 0]);
    expect(one).toMatchObject({ amount_raw: (XNO / 10n).toString(), repeated: false });
    expect(two.amount_raw).toBe(((2n * XNO) / 10n).toString());
    const chain = (await ledger(sb.url)).blocks.filter((b) => b.account === alice.address);
    expect(chain.map((b) => b.hash)).toEqual(expect.arrayContaining([one.hash, two.hash]));
    const heights = chain.map((b) => Number(b.height)).sort((a, b) => a - b);
    expect(heights).toEqual(heights.map((_, i) => i + 1));

    const before = (await ledger(sb.url)).blocks.length;
    const dry = await alice.user.json<{ dry_run: boolean; hash: null; balance_after_raw: string }>(['send', bob.address, '1', '--dry-run']);
    expect(dry).toMatchObject({ _code: 0, dry_run: true, hash: null, balance_after_raw: ((87n * XNO) / 10n).toString() });
    expect((await ledger(sb.url)).blocks.length).toBe(before);
  });

  it('service: request --watch --json prints the request, then NDJSON, and exits 0 once pay --yes pays it', async () => {
    const alice = await funded('service', '2');
    const bob = await backendUser(sb, 'service');
    const watcher = spawn(process.execPath, [BIN, 'request', '1.25', '--watch', '--interval', '1', '--timeout', '60', '--json'], { env: bob.user.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    watcher.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => watcher.on('close', resolve));
    await until(() => out.includes('"is_paid":false') || watcher.exitCode !== null, 'the watch to report unpaid');
    const request = JSON.parse(out.split('\n')[0] as string) as PaymentRequest & { event: string };
    expect(request).toMatchObject({ event: 'request', receive_address: bob.address });
    expect(BigInt(request.amount_raw)).toBeGreaterThan(xnoToRaw('1.25'));

    const paid = await alice.user.json<{ amount_raw: string; uri: string }>(['pay', request.uri, '--yes']);
    expect(paid).toMatchObject({ _code: 0, amount_raw: request.amount_raw, uri: request.uri });
    expect(await exited).toBe(0);
    const events = out.trim().split('\n').map((line) => JSON.parse(line) as { event: string; is_paid?: boolean });
    expect(events[1]).toMatchObject({ event: 'status', is_paid: false });
    expect(events.at(-1)).toMatchObject({ event: 'status', is_paid: true });
  });

  it('node: donate --to --yes --json pays the address named', async () => {
    const alice = await funded('node', '2');
    const bob = await backendUser(sb, 'node');
    const to = await alice.user.json<{ to: string; amount_raw: string }>(['donate', '0.01', '--yes', '--to', bob.address]);
    expect(to).toMatchObject({ _code: 0, to: bob.address, amount_raw: xnoToRaw('0.01').toString() });
  });
});

describe.each<Backend>(BACKENDS)('in process on the %s backend: what the commands do, exact', (backend) => {
  it('balance with receive, two sends at once (an id, raw), a dry run, over the funds (exit 4)', async () => {
    const alice = await backendUser(sb, backend);
    const bob = await backendUser(sb, backend);
    await fund(sb.url, alice.address, '10');
    const received = await balance(alice.session, { receive: true });
    expect(received).toMatchObject({ balance_raw: (10n * XNO).toString(), pending_raw: '0' });
    expect(received.received?.map((r) => r.subtype)).toEqual(['open']);

    // Two sessions, as two processes have.
    const [one, two] = await Promise.all([
      send(userSession(alice.user), { to: bob.address, amount: { xno: '0.1' }, id: `order-${backend}` }),
      send(userSession(alice.user), { to: bob.address, amount: { raw: ((2n * XNO) / 10n).toString() } }),
    ]);
    expect(one).toMatchObject({ amount_raw: (XNO / 10n).toString(), repeated: false });
    expect(two.amount_raw).toBe(((2n * XNO) / 10n).toString());
    const chain = (await ledger(sb.url)).blocks.filter((b) => b.account === alice.address);
    expect(chain.map((b) => b.hash)).toEqual(expect.arrayContaining([one.hash, two.hash]));
    const heights = chain.map((b) => Number(b.height)).sort((a, b) => a - b);
    expect(heights).toEqual(heights.map((_, i) => i + 1));

    const before = (await ledger(sb.url)).blocks.length;
    const dry = await send(userSession(alice.user), { to: bob.address, amount: { xno: '1' }, dryRun: true });
    expect(dry).toMatchObject({ dry_run: true, hash: null, balance_after_raw: ((87n * XNO) / 10n).toString() });
    expect((await ledger(sb.url)).blocks.length).toBe(before);
    expect(await failure(send(userSession(alice.user), { to: bob.address, amount: { xno: '1000' } }))).toMatchObject({ code: 'INSUFFICIENT_FUNDS', exitCode: 4 });
  });

  it('a request, watched: unpaid, then paid by its URI; the status of an unknown id is exit 9', async () => {
    const alice = await funded(backend, '2');
    const bob = await backendUser(sb, backend);
    const request = await requestPayment(bob.session, { amount: { xno: '1.25' } });
    expect(request.receive_address).toBe(bob.address);
    expect(BigInt(request.amount_raw)).toBeGreaterThan(xnoToRaw('1.25'));
    const events: WatchEvent[] = [];
    let firstEvent!: () => void;
    const seen = new Promise<void>((resolve) => (firstEvent = resolve));
    const watched = watchPayment(userSession(bob.user), request.transaction_id, {
      intervalMs: 1000,
      timeoutMs: 60_000,
      onEvent: (event) => {
        events.push(event);
        firstEvent();
      },
    });
    // A watch that fails before its first event fails here, not at the test's timeout.
    await Promise.race([seen, watched]);

    const paid = await payUri(alice.session, request.uri, {});
    expect(paid).toMatchObject({ amount_raw: request.amount_raw, uri: request.uri });
    expect(await watched).toMatchObject({ is_paid: true });
    expect(events[0]).toMatchObject({ event: 'status', is_paid: false });
    expect(events.at(-1)).toMatchObject({ event: 'status', is_paid: true });

    expect(await failure(paymentStatus(bob.session, '00000000-0000-4000-8000-000000000000'))).toMatchObject({ code: 'INVALID_TRANSACTION_ID', exitCode: 9 });
  });

  it('a top-up: bought on the service, SERVICE_ONLY (exit 2) on a node, where a donation with `to` pays the address named', async () => {
    const alice = await funded(backend, '2');
    if (backend === 'service') {
      expect(await topup(alice.session, { tier: 10 })).toMatchObject({ topped_up_credits: 10 });
      return;
    }
    expect(await failure(topup(alice.session, { tier: 10 }))).toMatchObject({ code: 'SERVICE_ONLY', exitCode: 2 });
    const bob = await backendUser(sb, backend);
    expect(await donate(alice.session, { amount: { xno: '0.01' }, to: bob.address })).toMatchObject({ to: bob.address, amount_raw: xnoToRaw('0.01').toString() });
  });
});
