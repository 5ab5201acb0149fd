import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as sdk from '../../src/index.js';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import { fund } from '../helpers/ledger/sandbox.js';
import { tempDir } from '../helpers/processes/temp.js';

let sb: RunningSandbox;

beforeAll(async () => {
  sb = await sdk.startSandbox({ port: 0 });
});

afterAll(async () => {
  await sb.close();
  await sdk.shutdownWorkers();
});

describe('the SDK', () => {
  it('exports the names of DESIGN.md', () => {
    for (const name of ['xnoToRaw', 'rawToXno', 'deriveAccount', 'addressToPublicKey', 'publicKeyToAddress', 'isValidAddress', 'hashBlock', 'signBlock', 'verifyBlock', 'workValue', 'validateWork', 'generateWork', 'buildNanoUri', 'parseNanoUri', 'NanoPay', 'AgentClient', 'AgentError', 'NanoPayError']) {
      expect(typeof (sdk as Record<string, unknown>)[name], name).toBe('function');
    }
  });

  it('NanoPay runs the operations in-process, configured like the CLI', async () => {
    const configDir = await tempDir('nanopay-sdk-');
    const key = ((await (await fetch(`${sb.url}/wallet/create`, { method: 'POST' })).json()) as { data: { api_key: string } }).data.api_key;
    const pay = new sdk.NanoPay({ password: 'sdk password', configDir, env: { NANOPAY_API_URL: sb.url, NANOPAY_API_KEY: key } });
    const wallet = await pay.createWallet('sdk');
    await fund(sb.url, wallet.address, '2');
    const balance = await pay.balance({ receive: true });
    expect(balance).toMatchObject({ account: wallet.address, balance: '2', pending: '0' });
    const request = await pay.requestPayment('0.5');
    const sent = await pay.send(request.receive_address, request.amount);
    expect(sent.amount).toBe(request.amount);
    expect((await pay.paymentStatus(request.transaction_id)).is_paid).toBe(true);
    await expect(pay.send('nano_nope', '1')).rejects.toMatchObject({ code: 'INVALID_ADDRESS' });
  });

  it('spends and receives from the wallet and account named, like --wallet and --account', async () => {
    const configDir = await tempDir('nanopay-sdk-');
    const key = ((await (await fetch(`${sb.url}/wallet/create`, { method: 'POST' })).json()) as { data: { api_key: string } }).data.api_key;
    const pay = new sdk.NanoPay({ password: 'sdk password', configDir, env: { NANOPAY_API_URL: sb.url, NANOPAY_API_KEY: key } });
    const main = await pay.createWallet('main');
    await pay.createWallet('spare');
    const spare1 = await pay.session.address('spare', 1);
    await fund(sb.url, spare1, '1');
    const received = await pay.receive({ wallet: 'spare', account: 1 });
    expect(received.received.map((r) => r.account)).toEqual([spare1]);
    const sent = await pay.send(main.address, '0.25', { wallet: 'spare', account: 1 });
    expect(sent).toMatchObject({ from: spare1, to: main.address, amount: '0.25' });
    const donated = await pay.donate('0.05', { wallet: 'spare', account: 1, id: 'sdk-gift' });
    expect(donated).toMatchObject({ from: spare1, repeated: false });
    // Under the same key again: the first donation's result, nothing sent.
    expect(await pay.donate('0.05', { wallet: 'spare', account: 1, id: 'sdk-gift' })).toMatchObject({ hash: donated.hash, repeated: true });
    const topped = await pay.topup(10, { wallet: 'spare', account: 1 });
    expect(topped.topped_up_credits).toBe(10);
    const after = await pay.balance({ address: spare1 });
    expect(sdk.xnoToRaw(after.balance)).toBe(sdk.xnoToRaw('0.7') - sdk.xnoToRaw(topped.amount));
    await expect(pay.send(main.address, '0.01', { wallet: 'nope' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
