import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RAW_PER_XNO, xnoToRaw } from '../../src/nano/index.js';
import { receive } from '../../src/ops/receive.js';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import { shutdownWorkers } from '../../src/work/index.js';
import { BACKENDS, backendUser, type Backend, type BackendUser } from '../helpers/backend-users.js';
import { BIN, type PaymentRequest } from '../helpers/cli.js';
import { fund, ledger, sandbox } from '../helpers/sandbox.js';

/**
 * The commands' front end (flags, exit codes, --json) once per backend, through
 * bin/run.js against one sandbox that speaks both. What the operations do on
 * each backend, exact to the raw, is test/integration/backends-ops.test.ts;
 * wallets are made and funded in-process here, as that is not the subject.
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

describe.each<Backend>(BACKENDS)('the commands on the %s backend', (backend) => {
  it('balance --receive, two send processes at once (--id, --raw), --dry-run without --yes, over the funds exit 4', async () => {
    const alice = await backendUser(sb, backend);
    const bob = await backendUser(sb, backend);
    await fund(sb.url, alice.address, '10');
    const received = await alice.user.json<{ balance_raw: string; pending_raw: string; received: { subtype: string }[] }>(['balance', '--receive']);
    expect(received).toMatchObject({ _code: 0, balance_raw: (10n * XNO).toString(), pending_raw: '0' });
    expect(received.received.map((r) => r.subtype)).toEqual(['open']);

    // Two processes: the account lock (a file) orders them on one chain.
    const [one, two] = await Promise.all([
      alice.user.json<{ hash: string; amount_raw: string; repeated: boolean }>(['send', bob.address, '0.1', '--yes', '--id', `order-${backend}`]),
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
    const tooMuch = await alice.user.run(['send', bob.address, '1000', '--yes', '--json']);
    expect(tooMuch.code).toBe(4);
    expect(JSON.parse(tooMuch.stdout)).toMatchObject({ error: { code: 'INSUFFICIENT_FUNDS' } });
  });

  it('request --watch --json prints the request, then NDJSON, and exits 0 once pay --yes pays it; status of an unknown id exits 9', async () => {
    const alice = await funded(backend, '2');
    const bob = await backendUser(sb, backend);
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

    const unknown = await bob.user.run(['status', '00000000-0000-4000-8000-000000000000', '--json']);
    expect(unknown.code).toBe(9);
    expect(JSON.parse(unknown.stdout)).toMatchObject({ error: { code: 'INVALID_TRANSACTION_ID' } });
  });

  it('credits topup --yes --json: bought on the service, SERVICE_ONLY (exit 2) on a node, where donate --to pays the address named', async () => {
    const alice = await funded(backend, '2');
    const topup = await alice.user.run(['credits', 'topup', '10', '--yes', '--json']);
    if (backend === 'service') {
      expect(topup.code).toBe(0);
      expect(JSON.parse(topup.stdout)).toMatchObject({ topped_up_credits: 10 });
      return;
    }
    expect(topup.code).toBe(2);
    expect(JSON.parse(topup.stdout)).toMatchObject({ error: { code: 'SERVICE_ONLY' } });
    const bob = await backendUser(sb, backend);
    const to = await alice.user.json<{ to: string; amount_raw: string }>(['donate', '0.01', '--yes', '--to', bob.address]);
    expect(to).toMatchObject({ _code: 0, to: bob.address, amount_raw: xnoToRaw('0.01').toString() });
  });
});
