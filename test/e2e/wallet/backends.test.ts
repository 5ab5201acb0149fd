import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RAW_PER_XNO, xnoToRaw } from '../../../src/nano/index.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { backendUser, fundedUser } from '../../helpers/ledger/backend-users.js';
import { BIN, type PaymentRequest } from '../../helpers/processes/cli.js';
import { fund, ledger, sandbox } from '../../helpers/ledger/sandbox.js';

/**
 * The money commands against one sandbox that speaks both backends. The
 * commands are the same code on either backend (the backend is the Session's
 * choice), so their front end (flags, exit codes, --json) runs through
 * bin/run.js once, on one backend or the other; what they do on each backend
 * runs in-process through the same operations in
 * test/integration/backends/backends-ops.test.ts.
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

/** Waits for `ready`, failing when it has not come after `ms`. */
async function until(ready: () => boolean, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`Gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
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
    const alice = await fundedUser(sb, 'service', '2');
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
    const alice = await fundedUser(sb, 'node', '2');
    const bob = await backendUser(sb, 'node');
    const to = await alice.user.json<{ to: string; amount_raw: string }>(['donate', '0.01', '--yes', '--to', bob.address]);
    expect(to).toMatchObject({ _code: 0, to: bob.address, amount_raw: xnoToRaw('0.01').toString() });
  });

  it('node: request --fresh-address in four processes at once gives four accounts', async () => {
    const merchant = await backendUser(sb, 'node');
    const made = await Promise.all(Array.from({ length: 4 }, () => merchant.user.json<PaymentRequest>(['request', '0.05', '--fresh-address', '--no-qr'])));
    expect(made.map((r) => r._code)).toEqual([0, 0, 0, 0]);
    expect(new Set(made.map((r) => r.receive_address)).size).toBe(4);
  });
});
