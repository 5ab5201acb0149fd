import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicKeyToAddress, xnoToRaw } from '../../../src/nano/index.js';
import { historyStream, type HistoryItem } from '../../../src/ops/account/history.js';
import { planSend, sendBlockOf, signAndJournal } from '../../../src/ops/ledger/chain.js';
import { receive } from '../../../src/ops/account/receive.js';
import { payUri, paymentStatus, requestPayment } from '../../../src/ops/requests/payments.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { BACKENDS, backendUser, fundedUser, userSession, type BackendUser } from '../../helpers/ledger/backend-users.js';
import { newUser } from '../../helpers/processes/cli.js';
import { startFaultyProxy } from '../../helpers/network/faulty-proxy.js';
import { ledger, sandbox } from '../../helpers/ledger/sandbox.js';

/**
 * history: sends, receives and representative changes, newest first, with amount, counterparty,
 * time, block hash and the --id / request they belong to; on a node from account_history (paged,
 * each block checked), on the service from what nanopay recorded (and it says so).
 */
let sb: RunningSandbox;

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

type Item = HistoryItem & { _code?: number };

const ndjson = (stdout: string): Item[] =>
  stdout
    .trim()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Item);

describe.each(BACKENDS)('history on the %s backend', (backend) => {
  let payer: BackendUser;
  let payee: BackendUser;
  let genesis: string;
  const hashes: Record<string, string> = {};
  const rep = publicKeyToAddress(randomBytes(32));

  beforeAll(async () => {
    payer = await fundedUser(sb, backend, '5');
    payee = await backendUser(sb, backend);
    const dump = await ledger(sb.url);
    const open = dump.blocks.find((b) => b.account === payer.address && b.subtype === 'open');
    hashes.open = open?.hash as string;
    genesis = dump.blocks[0]?.account as string;
    const first = await payer.user.json<{ hash: string }>(['send', payee.address, '0.5', '--id', 'order-1', '--yes']);
    hashes.first = first.hash;
    hashes.second = (await payer.user.json<{ hash: string }>(['send', payee.address, '0.25', '--yes'])).hash;
    hashes.change = (await payer.user.json<{ hash: string }>(['representative', 'set', rep, '--yes'])).hash;
  });

  it('lists sends, receives and changes newest first, with amount, counterparty, time, block and --id', async () => {
    const result = await payer.user.json<{ account: string; source: string; note: string; history: Item[]; more: boolean }>(['history']);
    expect(result).toMatchObject({ _code: 0, account: payer.address, source: backend === 'node' ? 'node' : 'recorded', more: false });
    if (backend === 'service') expect(result.note).toMatch(/recorded on this machine/);
    expect(result.history.map((i) => [i.type, i.hash, i.amount, i.counterparty])).toEqual([
      ['change', hashes.change, '0', null],
      ['send', hashes.second, '0.25', payee.address],
      ['send', hashes.first, '0.5', payee.address],
      ['open', hashes.open, '5', genesis],
    ]);
    expect(result.history.map((i) => i.balance)).toEqual(['4.25', '4.25', '4.5', '5']);
    expect(result.history[0]?.representative).toBe(rep);
    expect(result.history[2]?.id).toBe('order-1');
    expect(result.history[1]?.id).toBeUndefined();
    for (const item of result.history) {
      expect(item.verified).toBe(true);
      expect(Math.abs(Date.parse(item.time as string) - Date.now())).toBeLessThan(10 * 60_000);
    }

    const human = await payer.user.run(['history']);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain('-0.5');
    expect(human.stdout).toContain('--id order-1');
    expect(human.stdout).toContain(hashes.first);
    if (backend === 'service') expect(human.stdout).toContain('The service has no account history');
  });

  it('--limit keeps the newest and says there are more; --all --json is NDJSON of the whole history', async () => {
    const limited = await payer.user.json<{ history: Item[]; more: boolean }>(['history', '--limit', '2']);
    expect(limited.history.map((i) => i.hash)).toEqual([hashes.change, hashes.second]);
    expect(limited.more).toBe(true);

    const all = await payer.user.run(['history', '--all', '--json']);
    expect(all.code).toBe(0);
    const lines = ndjson(all.stdout);
    expect(lines.map((i) => i.hash)).toEqual([hashes.change, hashes.second, hashes.first, hashes.open]);
    expect(lines[2]).toMatchObject({ type: 'send', amount_raw: xnoToRaw('0.5').toString(), id: 'order-1', account: payer.address });
  });

  it('a block signed by a run that died before publishing comes first, marked unsettled, until the next command settles it', async () => {
    const owner = await fundedUser(sb, backend, '1');
    const ctx = await owner.session.context();
    const signer = await owner.session.account();
    const elsewhere = publicKeyToAddress(randomBytes(32));
    const plan = await planSend(ctx, signer.address, elsewhere, xnoToRaw('0.1'));
    const entry = await signAndJournal(ctx, signer, sendBlockOf(plan), 'send', plan.head.thresholds, { amountRaw: xnoToRaw('0.1').toString(), sendId: 'crashed' });
    const before = await owner.user.json<{ history: Item[] }>(['history']);
    expect(before.history.map((i) => [i.type, i.hash, i.unsettled, i.id])).toEqual([
      ['send', entry.hash, true, 'crashed'],
      ['open', expect.any(String), undefined, undefined],
    ]);
    expect((await owner.user.run(['history'])).stdout).toContain('signed, not yet in the ledger');
    // The next send settles it first (the same block is published), then sends its own.
    await owner.user.json(['send', elsewhere, '0.2', '--yes']);
    const after = await owner.user.json<{ history: Item[] }>(['history']);
    expect(after.history.map((i) => [i.amount, i.unsettled])).toEqual([
      ['0.2', undefined],
      ['0.1', undefined],
      ['1', undefined],
    ]);
    expect(after.history[1]).toMatchObject({ hash: entry.hash, id: 'crashed' });
  });

  it('the payee sees what it received, from whom', async () => {
    await receive(payee.session);
    const result = await payee.user.json<{ history: Item[] }>(['history']);
    expect(result.history.map((i) => [i.type, i.amount, i.counterparty])).toEqual([
      ['receive', '0.25', payer.address],
      ['open', '0.5', payer.address],
    ]);
  });
});

describe('history on the node backend', () => {
  it('pages through account_history with head, each page joined to the next, the same as one page', async () => {
    const payer = await fundedUser(sb, 'node', '5');
    const other = publicKeyToAddress(randomBytes(32));
    for (let i = 1; i <= 6; i++) await payer.user.json(['send', other, `0.0${i}`, '--yes']);
    const collect = async (pageSize: number): Promise<HistoryItem[]> => {
      const out: HistoryItem[] = [];
      for await (const item of (await historyStream(payer.session, { pageSize })).items) out.push(item);
      return out;
    };
    const whole = await collect(100);
    expect(whole.map((i) => i.amount)).toEqual(['0.06', '0.05', '0.04', '0.03', '0.02', '0.01', '5']);
    for (const size of [1, 2, 3]) expect(await collect(size)).toEqual(whole);

    // A proxy that drops "previous": the pages go on from each one's last block with offset 1.
    const calls: Record<string, unknown>[] = [];
    const proxy = await startFaultyProxy(sb.url, () => ({
      node: (answer, body) => {
        if (body.action !== 'account_history') return answer;
        calls.push(body);
        const { previous: _, ...rest } = answer;
        return rest;
      },
    }));
    try {
      const session = userSession(await newUser(sb.url, { ...payer.user.env, NANOPAY_NODE_URL: proxy.url, NANOPAY_CONFIG_DIR: payer.user.configDir }));
      const out: HistoryItem[] = [];
      for await (const item of (await historyStream(session, { pageSize: 3 })).items) out.push(item);
      expect(out).toEqual(whole);
      expect(calls.slice(1).every((c) => c.offset === '1' && typeof c.head === 'string')).toBe(true);
    } finally {
      await proxy.close();
    }
  });

  it('marks the receive that paid a payment request with its id', async () => {
    const merchant = await backendUser(sb, 'node');
    const customer = await fundedUser(sb, 'node', '3');
    const request = await requestPayment(merchant.session, { amount: { xno: '1' } });
    await payUri(customer.session, request.uri, {});
    expect((await paymentStatus(merchant.session, request.transaction_id)).is_paid).toBe(true);
    await receive(merchant.session);
    const result = await merchant.user.json<{ history: Item[] }>(['history']);
    expect(result.history[0]).toMatchObject({ type: 'open', counterparty: customer.address, request: request.transaction_id });
  });

  it('a node that lies about a block in the history is caught: nothing past it is shown as checked', async () => {
    const payer = await fundedUser(sb, 'node', '2');
    await payer.user.json(['send', publicKeyToAddress(randomBytes(32)), '0.5', '--yes']);
    const proxy = await startFaultyProxy(sb.url, () => ({
      node: (answer, body) => {
        if (body.action !== 'account_history' || !Array.isArray(answer.history)) return answer;
        // The send grows to 1.5 XNO: its balance is not the signed one.
        return { ...answer, history: answer.history.map((h: Record<string, string>, i: number) => (i === 0 ? { ...h, balance: xnoToRaw('0.5').toString(), amount: xnoToRaw('1.5').toString() } : h)) };
      },
    }));
    try {
      const lied = await newUser(sb.url, { ...payer.user.env, NANOPAY_NODE_URL: proxy.url });
      const result = await lied.json(['history'], { env: { NANOPAY_CONFIG_DIR: payer.user.configDir } });
      expect(result).toMatchObject({ _code: 5, error: { code: 'SERVICE_INCONSISTENT' } });
    } finally {
      await proxy.close();
    }
  });
});

describe('history on the service backend', () => {
  it('a credits top-up shows as a send to the service, marked with its transaction', async () => {
    const buyer = await fundedUser(sb, 'service', '3');
    const topup = await buyer.user.json<{ hash: string; payment_address: string }>(['credits', 'topup', '10', '--yes']);
    expect(topup._code).toBe(0);
    const [item] = (await buyer.user.json<{ history: Item[] }>(['history', '--limit', '1'])).history;
    expect(item).toMatchObject({ type: 'send', hash: topup.hash, counterparty: topup.payment_address });
    expect(item?.topup).toMatch(/\S/);
  });

  it('an address nanopay has not recorded gets an empty history, said to come from what was recorded', async () => {
    const user = await backendUser(sb, 'service');
    const result = await user.user.json<{ history: Item[]; source: string }>(['history', publicKeyToAddress(randomBytes(32))]);
    expect(result).toMatchObject({ _code: 0, history: [], source: 'recorded' });
    expect(userSession(user.user).backendKind()).toBe('service');
  });
});
