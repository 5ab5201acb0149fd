import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseNanoUri, xnoToRaw } from '../../../src/nano/index.js';
import { credits, topup } from '../../../src/ops/spending/credits.js';
import { donate } from '../../../src/ops/spending/donate.js';
import { requestPayment } from '../../../src/ops/requests/payments.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { BIN, commandSession, userWithWallet, type CliUser } from '../../helpers/processes/cli.js';
import { startFaultyProxy } from '../../helpers/network/faulty-proxy.js';
import { ledger, sandbox } from '../../helpers/ledger/sandbox.js';
import { decodeTerminalQr } from '../../helpers/processes/terminal-qr.js';

let sb: RunningSandbox;
let merchant: CliUser;
let customer: CliUser;
let merchantAddress: string;
let customerAddress: string;

beforeAll(async () => {
  sb = await sandbox();
  ({ user: merchant, address: merchantAddress } = await userWithWallet(sb.url));
  ({ user: customer, address: customerAddress } = await userWithWallet(sb.url, '20'));
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

// The request/pay/status flow and status --watch --json run per backend in backends.test.ts;
// --timeout and service failures in cli-issue.test.ts. Through bin/run.js here: what the front end
// adds (the QR code, Ctrl-C); credits, top-ups and donations are the operations', run in-process
// through commandSession as one more command of the user's would (the commands themselves:
// credits in reads.test.ts, credits topup in flag-conventions.test.ts and cli-issue.test.ts, donate
// in flag-conventions.test.ts and backends.test.ts).
describe('request', () => {
  it('the QR code encodes the standard URI with the raw amount, and reads on the terminal theme it is drawn for', async () => {
    const result = await merchant.run(['request', '0.75', '--qr']);
    expect(result.code).toBe(0);
    const decoded = decodeTerminalQr(result.stdout);
    expect(decoded).toBeDefined();
    const uri = parseNanoUri(decoded as string);
    expect(decoded).toMatch(/^nano:nano_[13][0-9a-z]{59}\?amount=\d+$/);
    expect(uri.address).toBe(merchantAddress);
    expect(result.stdout).toContain(`Link: ${decoded}`);
    expect(uri.amountRaw).toBeGreaterThan(xnoToRaw('0.75'));
    expect(uri.amountRaw).toBeLessThan(xnoToRaw('0.75') + 10n ** 6n);
    // The default is drawn for a dark terminal: it does not read on a light one, and --qr-style light is the reverse.
    expect(decodeTerminalQr(result.stdout, 'light')).toBeUndefined();
    const light = await merchant.run(['request', '0.75', '--qr', '--qr-style', 'light']);
    expect(light.code).toBe(0);
    const lightDecoded = decodeTerminalQr(light.stdout, 'light');
    expect(lightDecoded).toMatch(/^nano:nano_[13][0-9a-z]{59}\?amount=\d+$/);
    expect(light.stdout).toContain(`Link: ${lightDecoded}`);
    expect(decodeTerminalQr(light.stdout, 'dark')).toBeUndefined();
    const quiet = await merchant.run(['request', '0.75', '--no-qr']);
    expect(quiet.code).toBe(0);
    expect(quiet.stdout).toContain('Link: nano:');
    expect(decodeTerminalQr(quiet.stdout)).toBeUndefined();
  });
});

describe('status --watch', () => {
  it('Ctrl-C ends a watch cleanly with exit 130', async () => {
    const request = await requestPayment(commandSession(merchant), { amount: { xno: '0.5' } });
    const watcher = spawn(process.execPath, [BIN, 'status', request.transaction_id, '--watch', '--interval', '1', '--json'], { env: merchant.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    watcher.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => watcher.on('close', resolve));
    for (let i = 0; i < 200 && !out.includes('"is_paid":false'); i++) await new Promise((r) => setTimeout(r, 50));
    watcher.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(out.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>).at(-1)).toMatchObject({ error: { code: 'CANCELLED' } });
  });

});

describe('credits and top-up', () => {
  it('credits lists all nine tiers', async () => {
    const listed = await credits(commandSession(merchant));
    expect(listed.tiers.map((t) => t.credits)).toEqual([10, 50, 100, 500, 1000, 5000, 10000, 50000, 100000]);
    expect(listed.credits).toBeGreaterThan(0);
  });

  it('an invalid tier fails before any network call', async () => {
    const proxy = await startFaultyProxy(sb.url, () => 'pass');
    // The tier as the command hands it on: the argument's text.
    const result = topup(commandSession(customer, { NANOPAY_API_URL: proxy.url }), { tier: '7' });
    await expect(result).rejects.toMatchObject({ code: 'INVALID_CREDITS_AMOUNT', exitCode: 3 });
    await proxy.close();
    expect(proxy.seen).toEqual([]);
  });

  it('a top-up raises the credits by the tier and pays exactly its price', async () => {
    const session = commandSession(customer);
    const before = (await credits(session)).credits;
    const result = await topup(session, { tier: '50' });
    expect(result.topped_up_credits).toBe(50);
    const after = (await credits(session)).credits;
    // The credits call itself is free; the top-up's own reads cost a few credits.
    expect(after).toBe(result.new_credits_balance);
    expect(after).toBeGreaterThan(before + 40);
    const block = (await ledger(sb.url)).blocks.find((b) => b.hash === result.hash);
    expect(block?.amount).toBe(xnoToRaw(result.amount).toString());
  });

  it('an interrupted top-up completes on rerun without a second payment', async () => {
    const proxy = await startFaultyProxy(sb.url, (method, path) => (method === 'POST' && path === '/credits/topup' ? 'forward-then-drop' : 'pass'));
    const interrupted = topup(commandSession(customer, { NANOPAY_API_URL: proxy.url }), { tier: '100' });
    await expect(interrupted).rejects.toMatchObject({ exitCode: 5 });
    await proxy.close();
    const sendsBefore = (await ledger(sb.url)).blocks.filter((b) => b.account === customerAddress && b.subtype === 'send').length;
    const rerun = await topup(commandSession(customer), { tier: '100' });
    expect(rerun).toMatchObject({ resumed: true, topped_up_credits: 100 });
    const sendsAfter = (await ledger(sb.url)).blocks.filter((b) => b.account === customerAddress && b.subtype === 'send').length;
    expect(sendsAfter).toBe(sendsBefore);
  });
});

describe('donate', () => {
  it('moves exactly the amount to the service donation address', async () => {
    const address = ((await (await fetch(`${sb.url}/donate/address`, { headers: { 'x-api-key': (await newKey()) } })).json()) as { data: { address: string } }).data.address;
    const result = await donate(commandSession(customer), { amount: { xno: '0.3' } });
    expect(result).toMatchObject({ success: true, to: address, amount_raw: xnoToRaw('0.3').toString() });
    const block = (await ledger(sb.url)).blocks.find((b) => b.hash === result.hash);
    expect(block).toMatchObject({ subtype: 'send', amount: xnoToRaw('0.3').toString() });
  });
});

async function newKey(): Promise<string> {
  return ((await (await fetch(`${sb.url}/wallet/create`, { method: 'POST' })).json()) as { data: { api_key: string } }).data.api_key;
}
