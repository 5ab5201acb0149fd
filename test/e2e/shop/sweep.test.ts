import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addressToPublicKey, xnoToRaw } from '../../../src/nano/index.js';
import { payUri } from '../../../src/ops/requests/payments.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { backendUser, fundedUser, type BackendUser } from '../../helpers/ledger/backend-users.js';
import { BIN } from '../../helpers/processes/cli.js';
import { startFaultyProxy } from '../../helpers/network/faulty-proxy.js';
import { ledger, sandbox } from '../../helpers/ledger/sandbox.js';
import { startCommand } from '../../helpers/processes/serve.js';
import { until } from '../../helpers/network/webhook-receiver.js';

/**
 * nanopay sweep (issue 33, part 4) through the built CLI on the sandbox's node: the takings of the fresh accounts go
 * to one address, --min leaves dust, --dry-run signs nothing, a sweep killed between signing and publishing is
 * finished by the next one (no account swept twice, none forgotten), and checkout serve --sweep-to does it itself.
 */
let sb: RunningSandbox;
let merchant: BackendUser;
let payer: BackendUser;
let cold: BackendUser;

beforeAll(async () => {
  sb = await sandbox();
  merchant = await backendUser(sb, 'node');
  payer = await fundedUser(sb, 'node', '3');
  cold = await backendUser(sb, 'node');
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

/** The sends of the ledger to `to`, by the account that sent them. */
function sendsTo(to: string): Map<string, string[]> {
  const link = addressToPublicKey(to);
  const by = new Map<string, string[]>();
  for (const b of sb.service.ledger.blocks.values()) if (b.subtype === 'send' && b.block.link === link) by.set(b.block.account, [...(by.get(b.block.account) ?? []), b.hash]);
  return by;
}

async function freshRequest(amount: string): Promise<{ transaction_id: string; receive_address: string; amount_raw: string; uri: string }> {
  return merchant.user.json(['request', amount, '--fresh-address', '--no-qr']);
}

interface Summary {
  run_id?: string;
  resumed: boolean;
  swept: number;
  total: string;
  total_raw: string;
  left: number;
  left_total: string;
  accounts: { address: string; request_id: string; status: string; amount?: string; block?: string; reason?: string }[];
}

describe('nanopay sweep on the node backend', () => {
  it('moves each fresh account once to --to, leaves what is below --min, and a run killed mid-way is finished by the next', async () => {
    const paid = [await freshRequest('0.2'), await freshRequest('0.3')];
    const dust = await freshRequest('0.4');
    for (const r of paid) await payUri(payer.session, r.uri, {});
    await payUri(payer.session, `nano:${dust.receive_address}?amount=${xnoToRaw('0.0001')}`, {});
    const args = ['sweep', '--to', cold.address, '--min', '0.001'];

    const blocks = (await ledger(sb.url)).blocks.length;
    const dry = await merchant.user.json<Summary>([...args, '--dry-run']);
    expect(dry).toMatchObject({ _code: 0, swept: 2, total: '0.5', left: 1, left_total: '0.0001' });
    // Underpaid: the rest may still come, so its money is not the shop's to move.
    expect(dry.accounts.find((a) => a.address === dust.receive_address)).toMatchObject({ status: 'left', amount: '0.0001', reason: expect.stringContaining('underpaid') });
    expect((await ledger(sb.url)).blocks.length).toBe(blocks);

    // Killed while the first account's send waits at the node.
    let held = false;
    const proxy = await startFaultyProxy(sb.url, (_method, _path, body) => {
      if (body.action !== 'process' || body.subtype !== 'send') return 'pass';
      held = true;
      return 'hold';
    });
    const child = spawn(process.execPath, [BIN, ...args, '--yes'], { env: { ...merchant.user.env, NANOPAY_NODE_URL: proxy.url }, stdio: 'ignore' });
    await until(() => held, 'the first sweep send at the node');
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    await proxy.close();
    expect(sendsTo(cold.address).size).toBe(0);

    const finished = await merchant.user.json<Summary>([...args, '--yes']);
    expect(finished).toMatchObject({ _code: 0, resumed: true, swept: 2, total: '0.5', total_raw: xnoToRaw('0.5').toString() });
    const sent = sendsTo(cold.address);
    for (const r of paid) expect(sent.get(r.receive_address)).toHaveLength(1);
    expect([...sent.keys()].sort()).toEqual(paid.map((r) => r.receive_address).sort());
    expect(finished.accounts.find((a) => a.address === dust.receive_address)?.status).toBe('left');

    // Nothing is left to move: a new run sweeps nothing, and the requests still say what they were paid.
    const again = await merchant.user.json<Summary>([...args, '--yes']);
    expect(again).toMatchObject({ _code: 0, resumed: false, swept: 0, total: '0' });
    expect(sendsTo(cold.address).size).toBe(2);
    for (const r of paid) expect(await merchant.user.json(['status', r.transaction_id])).toMatchObject({ status: 'paid', is_paid: true });
    expect(await merchant.user.json(['status', dust.transaction_id])).toMatchObject({ status: 'underpaid', mismatch: { amount: '0.0001' } });
  });

  it('refuses on the service backend', async () => {
    const service = await backendUser(sb, 'service');
    expect(await service.user.json(['sweep', '--to', cold.address, '--yes'])).toMatchObject({ _code: 2, error: { code: 'USAGE' } });
  });

  it('checkout serve --sweep-to sweeps by itself', async () => {
    const made = await freshRequest('0.15');
    await payUri(payer.session, made.uri, {});
    const server = await startCommand(['checkout', 'serve', '--json', '--sweep-to', cold.address, '--sweep-every', '1h', '--sweep-min', '0.001', '--poll-interval', '1'], merchant.user.env);
    try {
      await until(() => sendsTo(cold.address).get(made.receive_address)?.length === 1, 'the sweep at start');
      await until(() => server.stderr().includes('0.15 XNO from 1 account(s)'), 'the sweep in the log');
    } finally {
      await server.stop();
    }
  });
});
