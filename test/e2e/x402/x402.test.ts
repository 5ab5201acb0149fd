import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createServer, request as httpRequest, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeClient } from '../../../src/api/node-client.js';
import { xnoToRaw } from '../../../src/nano/index.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { BIN, PASSWORD, userWithWallet, type CliUser } from '../../helpers/processes/cli.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import type { RunningCommand } from '../../helpers/processes/serve.js';
import { onTerminal, ptyMissing } from '../../helpers/processes/pty.js';
import { userSession } from '../../helpers/ledger/backend-users.js';
import { findTool, runTool } from '../../../src/toolset/tools.js';
import { hashBlock, workRoot, type StateBlock } from '../../../src/nano/index.js';
import { decodeHeader, encodeHeader } from '../../../src/x402/protocol.js';
import { workValue } from '../../../src/work/index.js';
import { signCheque } from '../../../src/x402/client.js';
import { NanoPay } from '../../../src/sdk/nanopay.js';
import { Session } from '../../../src/ops/session.js';
import { nanoRequirement } from '../../../src/x402/nano-exact.js';
import { x402Middleware } from '../../../src/x402/middleware.js';
import { Paywall } from '../../../src/x402/paywall.js';
import { paywallShop, sandboxSettler } from '../../helpers/ledger/x402.js';
import { stateBlockOf } from '../../helpers/ledger/chain.js';

/** An API to sell: /report answers, /fail fails, /hold waits until the test lets it answer (with `held`'s status). */
interface Upstream {
  url: string;
  server: Server;
  holding: ServerResponse[];
  calls: string[];
}

async function startUpstream(): Promise<Upstream> {
  const up: Upstream = { url: '', server: createServer(), holding: [], calls: [] };
  up.server.on('request', (req, res) => {
    up.calls.push(`${req.method} ${req.url}`);
    if (req.url === '/fail') return void res.writeHead(500).end('upstream broke');
    if (req.url === '/hold') return void up.holding.push(res);
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end(`report for ${req.method} ${req.url}${body === '' ? '' : ` with ${body}`}`));
  });
  await new Promise<void>((resolve) => up.server.listen(0, '127.0.0.1', resolve));
  up.url = `http://127.0.0.1:${(up.server.address() as AddressInfo).port}`;
  return up;
}

let sb: RunningSandbox;
let up: Upstream;
let merchant: CliUser;
let customer: CliUser;
let merchantAddress: string;
let paywall: RunningCommand<{ url: string; pay_to: string; price_raw: string }>;
let node: NodeClient;
const PRICE = '0.001';

beforeAll(async () => {
  sb = await sandbox();
  up = await startUpstream();
  ({ merchant, customer, merchantAddress, paywall } = await paywallShop(sb, up.url, PRICE));
  node = new NodeClient({ url: sb.url });
});
afterAll(async () => {
  await paywall.stop();
  up.server.closeAllConnections();
  await new Promise((resolve) => up.server.close(resolve));
  await sb.close();
  for (const u of [merchant, customer]) await rm(u.configDir, { recursive: true, force: true });
});

function journal(user: CliUser): Record<string, any> | undefined {
  const dir = join(user.configDir, 'journal');
  const file = existsSync(dir) ? readdirSync(dir).find((f) => f.endsWith('.json')) : undefined;
  return file === undefined ? undefined : (JSON.parse(readFileSync(join(dir, file), 'utf8')) as Record<string, any>);
}

/** Sends from the customer's account to the merchant on the ledger. */
async function paymentsToMerchant(): Promise<{ hash: string; amount: string }[]> {
  const dump = (await (await fetch(`${sb.url}/sandbox/ledger`)).json()) as { data: { blocks: { hash: string; subtype: string; amount: string; account: string; link?: string }[] } };
  const sends = dump.data.blocks.filter((b) => b.subtype === 'send');
  const ours: { hash: string; amount: string }[] = [];
  for (const b of sends) {
    const info = await node.blockInfo(b.hash);
    if (stateBlockOf(info).link === (await import('../../../src/nano/index.js')).addressToPublicKey(merchantAddress)) ours.push({ hash: b.hash, amount: info.amountRaw.toString() });
  }
  return ours;
}

describe('nanopay fetch paying nanopay paywall (x402 on the sandbox)', () => {
  it('an unpaid request gets 402 with PAYMENT-REQUIRED; a free route passes', async () => {
    const unpaid = await fetch(`${paywall.printed.url}/report`);
    expect(unpaid.status).toBe(402);
    const required = JSON.parse(Buffer.from(unpaid.headers.get('payment-required') as string, 'base64').toString('utf8'));
    expect(required).toMatchObject({ x402Version: 2, error: 'Payment required', accepts: [{ scheme: 'exact', network: 'nano:dev', asset: 'XNO', amount: xnoToRaw(PRICE).toString(), payTo: merchantAddress }] });
    expect(await unpaid.json()).toEqual({});
    const free = await fetch(`${paywall.printed.url}/free`);
    expect([free.status, await free.text()]).toEqual([200, 'report for GET /free']);
  });

  it('a path through a free route to a priced one (/free/../report, sent as it is) is refused, not served free', async () => {
    const calls = up.calls.length;
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const url = new URL(paywall.printed.url);
      const req = httpRequest({ host: url.hostname, port: url.port, path: '/free/%2e%2e/report' }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject).end();
    });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body).error).toMatchObject({ error: 'INVALID_REQUEST', message: expect.stringMatching(/dot segment/) });
    expect(up.calls.length).toBe(calls);
  });

  it('paywall refuses a bad --upstream or --route at start', async () => {
    const bad = await merchant.run(['paywall', '--upstream', 'ftp://x', '--price', '0.001', '--to', merchantAddress]);
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringMatching(/--upstream must be an http\(s\) URL/)]);
    const route = await merchant.run(['paywall', '--upstream', up.url, '--price', '0.001', '--route', 'GET /x', '--to', merchantAddress]);
    expect([route.code, route.stderr]).toEqual([2, expect.stringMatching(/A route is 'METHOD \/path\/\*=XNO'/)]);
  });

  it('refuses to pay without a maximum, or over it', async () => {
    const none = await customer.run(['fetch', `${paywall.printed.url}/report`, '--yes']);
    expect(none.code).toBe(7);
    expect(none.stderr).toMatch(/no maximum is set/);
    const over = await customer.run(['fetch', `${paywall.printed.url}/report`, '--yes', '--max', '0.0001']);
    expect(over.code).toBe(7);
    expect(over.stderr).toMatch(/over the maximum/);
    expect(journal(customer)).toBeUndefined();
  });

  it('without --yes and without a terminal it pays nothing, unless the price is within x402-auto-pay', async () => {
    const asked = await customer.run(['fetch', `${paywall.printed.url}/report`, '--max', '0.01']);
    expect(asked.code).toBe(2);
    expect(asked.stderr).toMatch(/no terminal to ask on; nothing was paid/);
    expect(journal(customer)).toBeUndefined();
    expect((await customer.run(['config', 'set', 'x402-auto-pay', PRICE])).code).toBe(0);
    try {
      const auto = await customer.json<{ status: number }>(['fetch', `${paywall.printed.url}/report`, '--max', '0.01']);
      expect(auto.status).toBe(200);
    } finally {
      await customer.run(['config', 'set', 'x402-auto-pay', '--unset']);
    }
  });

  it.skipIf(ptyMissing !== undefined)('on a terminal it shows the payment and asks first; no pays nothing, yes pays', async () => {
    const declined = onTerminal(['fetch', `${paywall.printed.url}/report`, '--max', '0.01'], customer.env);
    await declined.waitFor('Pay 0.001 XNO?');
    expect(declined.output).toContain(`To:       ${merchantAddress}`);
    declined.type('n\r');
    expect(await declined.exited).not.toBe(0);
    expect(journal(customer)).toBeUndefined();
    const accepted = onTerminal(['fetch', `${paywall.printed.url}/report`, '--max', '0.01'], customer.env);
    await accepted.waitFor('Pay 0.001 XNO?');
    accepted.type('y\r');
    await accepted.waitFor('report for GET /report');
    expect(await accepted.exited).toBe(0);
    expect(accepted.output).toMatch(/Paid 0\.001 XNO to nano_/);
  });

  it('a base64url, v1 or mismatched payment header gets a fresh 402', async () => {
    const challenge = await fetch(`${paywall.printed.url}/report`);
    const required = JSON.parse(Buffer.from(challenge.headers.get('payment-required') as string, 'base64').toString('utf8'));
    const payload = { x402Version: 2, resource: { url: '???>>>???>>>' }, accepted: required.accepts[0], payload: { block: {} } };
    const asUrl = Buffer.from(JSON.stringify(payload)).toString('base64url');
    expect(asUrl).toMatch(/[-_]/);
    const tried = async (header: string): Promise<string> => {
      const r = await fetch(`${paywall.printed.url}/report`, { headers: { 'payment-signature': header } });
      expect(r.status).toBe(402);
      return JSON.parse(Buffer.from(r.headers.get('payment-required') as string, 'base64').toString('utf8')).error as string;
    };
    expect(await tried(asUrl)).toBe('invalid_payload');
    expect(await tried(Buffer.from(JSON.stringify({ x402Version: 1, scheme: 'exact', network: 'nano:mainnet', payload: {} })).toString('base64'))).toBe('invalid_payload');
    expect(await tried(Buffer.from(JSON.stringify({ ...payload, accepted: { ...required.accepts[0], amount: '1' } })).toString('base64'))).toBe('No matching payment requirements');
  });

  it('pays, gets the body, and the payment is the confirmed block it names', async () => {
    const before = (await paymentsToMerchant()).length;
    const paid = await customer.json<{ status: number; body: string; payment: Record<string, any> }>(['fetch', `${paywall.printed.url}/report?x=1`, '--max', '0.01', '--yes', '--precache']);
    expect(paid.status).toBe(200);
    expect(paid.body).toBe('report for GET /report?x=1');
    expect(paid.payment).toMatchObject({ pay_to: merchantAddress, amount: PRICE, repeated: false, settlement: { success: true, network: 'nano:dev' } });
    expect(paid.payment.settlement.transaction).toBe(paid.payment.hash);
    const info = await node.blockInfo(paid.payment.hash);
    expect([info.confirmed, info.amountRaw]).toEqual([true, xnoToRaw(PRICE)]);
    expect(await paymentsToMerchant()).toHaveLength(before + 1);
    expect(journal(customer)).toBeUndefined();
    // --precache made the work for the block after this payment.
    const work = await userSession(customer).workStore.take(paid.payment.hash, (await node.activeDifficulty()).send);
    expect(work).toMatch(/^[0-9a-f]{16}$/);
  });

  it('a payer on the service backend (not a node) pays the same way', async () => {
    const { user: serviceUser } = await userWithWallet(sb.url, '1');
    try {
      const paid = await serviceUser.json<{ status: number; body: string; payment: Record<string, any> }>(['fetch', `${paywall.printed.url}/report`, '--max', '0.01', '--yes']);
      expect([paid.status, paid.body]).toEqual([200, 'report for GET /report']);
      expect((await node.blockInfo(paid.payment.hash)).confirmed).toBe(true);
    } finally {
      await rm(serviceUser.configDir, { recursive: true, force: true });
    }
  });

  it('a failed upstream costs nothing: the cheque stays outstanding and the next payment cancels it first', async () => {
    const before = await paymentsToMerchant();
    const failed = await customer.run(['fetch', `${paywall.printed.url}/fail`, '--max', '0.01', '--yes']);
    expect(failed.code).toBe(5);
    expect(failed.stderr).toMatch(/outstanding/);
    const cheque = journal(customer);
    expect(cheque).toMatchObject({ subtype: 'send', chequeFor: `${paywall.printed.url}/fail` });
    const next = await customer.json<{ status: number; payment: Record<string, any> }>(['fetch', `${paywall.printed.url}/report`, '--max', '0.01', '--yes']);
    expect(next.status).toBe(200);
    // The cheque was superseded by a change block on its previous: it can never be cashed.
    const chequeHash = cheque?.hash as string;
    await expect(node.blockInfo(chequeHash)).rejects.toMatchObject({ code: 'BLOCK_NOT_FOUND' });
    const presentedAgain = await fetch(`${paywall.printed.url}/report`, { headers: { 'payment-signature': Buffer.from(JSON.stringify({ x402Version: 2, accepted: JSON.parse(Buffer.from((await fetch(`${paywall.printed.url}/report`)).headers.get('payment-required') as string, 'base64').toString()).accepts[0], payload: { block: cheque?.block } })).toString('base64') } });
    expect(presentedAgain.status).toBe(402);
    const after = await paymentsToMerchant();
    expect(after.map((p) => p.hash)).toEqual([...before.map((p) => p.hash), next.payment.hash]);
  });

  it('kill -9 after presenting; the block is settled meanwhile; the rerun with the same --id records that one payment', async () => {
    const before = (await paymentsToMerchant()).length;
    const child = spawn(process.execPath, [BIN, 'fetch', `${paywall.printed.url}/hold`, '--max', '0.01', '--yes', '--id', 'held-1'], { env: customer.env, stdio: 'ignore' });
    await waitFor(() => up.holding.length === 1, 'the paid request to reach the upstream');
    const cheque = journal(customer);
    expect(cheque).toMatchObject({ sendId: 'held-1', chequeFor: `${paywall.printed.url}/hold` });
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('close', resolve));
    // The client went away, so the paywall settles nothing (it gives up its hop to the upstream: waited for here, else an
    // answer coming first would be served and kept under the payment id, and the rerun would get it): the block is
    // settled as a server that did would have (published), and the client never learned of it.
    const held = up.holding.shift() as ServerResponse;
    if (held.socket?.destroyed !== true) await new Promise((resolve) => held.once('close', resolve));
    await node.publish(cheque?.block, 'send', cheque?.hash);
    held.writeHead(200).end('held report');
    await waitFor(async () => (await node.blockInfo(cheque?.hash).then((i) => i.confirmed, () => false)), 'the block to be confirmed');
    // The paywall does not serve a block settled elsewhere: the rerun says it was paid (coded, with the payment), never a bare 402.
    const paidBefore = { _code: 10, error: { code: 'X402_PAID_NOT_SERVED', payment: { hash: cheque?.hash, repeated: true } } };
    const rerun = await customer.json(['fetch', `${paywall.printed.url}/hold`, '--max', '0.01', '--yes', '--id', 'held-1']);
    expect(rerun).toMatchObject(paidBefore);
    expect(journal(customer)).toBeUndefined();
    expect(await paymentsToMerchant()).toHaveLength(before + 1);
    const again = await customer.json(['fetch', `${paywall.printed.url}/hold`, '--max', '0.01', '--yes', '--id', 'held-1']);
    expect(again).toMatchObject(paidBefore);
    expect(await paymentsToMerchant()).toHaveLength(before + 1);
  });

  it('kill -9 after presenting; the server never settles; the rerun with the same --id presents the same block and pays once', async () => {
    const before = (await paymentsToMerchant()).length;
    const child = spawn(process.execPath, [BIN, 'fetch', `${paywall.printed.url}/hold`, '--max', '0.01', '--yes', '--id', 'held-2'], { env: customer.env, stdio: 'ignore' });
    await waitFor(() => up.holding.length === 1, 'the paid request to reach the upstream');
    const cheque = journal(customer);
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('close', resolve));
    (up.holding.shift() as ServerResponse).writeHead(503).end('not now');
    await waitFor(() => up.holding.length === 0, 'the upstream answer');
    const second = spawn(process.execPath, [BIN, 'fetch', `${paywall.printed.url}/hold`, '--max', '0.01', '--yes', '--id', 'held-2', '--json'], { env: customer.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    second.stdout.on('data', (d: Buffer) => (out += d.toString()));
    await waitFor(() => up.holding.length === 1, 'the same block presented again');
    (up.holding.shift() as ServerResponse).writeHead(200).end('held report');
    await new Promise((resolve) => second.once('close', resolve));
    const rerun = JSON.parse(out) as { status: number; body: string; payment: Record<string, any> };
    expect([rerun.status, rerun.body, rerun.payment.hash]).toEqual([200, 'held report', cheque?.hash]);
    expect(await paymentsToMerchant()).toHaveLength(before + 1);
  });

  it('the toolset tool http_fetch_paid pays within max_xno through the same client', async () => {
    const tool = findTool('http_fetch_paid');
    // The paywall is on this machine: a model may reach it only when the user allows that host.
    const local = await runTool(userSession(customer), tool, { url: `${paywall.printed.url}/report`, max_xno: '0.01' });
    expect(local.envelope.error).toMatchObject({ error: 'INVALID_REQUEST', message: expect.stringMatching(/on this machine or a private network/) });
    for (const url of ['http://localhost:1/', 'http://[::1]:1/', 'http://10.1.2.3/', 'http://169.254.169.254/latest/meta-data/', 'http://[::ffff:127.0.0.1]:1/']) {
      expect((await runTool(userSession(customer), tool, { url, max_xno: '0.01' })).envelope.error?.error).toBe('INVALID_REQUEST');
    }
    const allowed = new Session({ password: async () => PASSWORD, env: { ...customer.env, NANOPAY_FETCH_ALLOW_HOSTS: new URL(paywall.printed.url).host } });
    const over = await runTool(allowed, tool, { url: `${paywall.printed.url}/report`, max_xno: '0.0001' });
    expect(over.envelope.error?.error).toBe('X402_UNPAYABLE');
    const paid = await runTool(allowed, tool, { url: `${paywall.printed.url}/report`, max_xno: '0.01', id: 'tool-1' });
    expect(paid.envelope.data).toMatchObject({ status: 200, body: 'report for GET /report', payment: { pay_to: merchantAddress, amount: PRICE, repeated: false } });
  });

  it('makes work as hard as the seller states (extra.workThreshold), not only as the backend asks', async () => {
    const { settler, dir } = await sandboxSettler(sb.url);
    const charge = x402Middleware(new Paywall({ payTo: merchantAddress, settler, workThreshold: 'fff0000000000000' }), '0.001');
    const shop = createServer((req, res) => void charge(req, res, () => res.end('hard work')));
    await new Promise<void>((resolve) => shop.listen(0, '127.0.0.1', resolve));
    try {
      // Through the SDK, as a program would.
      const sdk = new NanoPay({ password: PASSWORD, env: customer.env });
      const { response, payment } = await sdk.fetchWithPayment(`http://127.0.0.1:${(shop.address() as AddressInfo).port}/`, {}, { maxXno: '0.01' });
      expect([response.status, await response.text()]).toEqual([200, 'hard work']);
      const block = stateBlockOf(await node.blockInfo(payment?.hash as string));
      expect(BigInt(`0x${workValue(workRoot(block), block.work as string)}`) >= BigInt('0xfff0000000000000')).toBe(true);
    } finally {
      shop.closeAllConnections();
      await new Promise((resolve) => shop.close(resolve));
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a cheque handed to a client library (signCheque) is the same block again under the same id, and cancelled if never cashed', async () => {
    const requirement = nanoRequirement(merchantAddress, xnoToRaw(PRICE), 'nano:dev', 'ffc0000000000000');
    const first = await signCheque(userSession(customer), requirement, { maxXno: '0.01', id: 'lib-1' });
    const again = await signCheque(userSession(customer), requirement, { maxXno: '0.01', id: 'lib-1' });
    expect(hashBlock(again)).toBe(hashBlock(first));
    await expect(signCheque(userSession(customer), { ...requirement, amount: '5' }, { maxXno: '0.01', id: 'lib-1' })).rejects.toMatchObject({ code: 'IDEMPOTENCY_MISMATCH' });
    expect(journal(customer)?.hash).toBe(hashBlock(first));
    expect((await customer.run(['receive'])).code).toBe(0);
    expect(journal(customer)).toBeUndefined();
    await expect(node.blockInfo(hashBlock(first))).rejects.toMatchObject({ code: 'BLOCK_NOT_FOUND' });
  });

  it('servers that lie, cut or hang: a 200 without publishing is not a payment, a wrong settlement is noted, a cut cheque is presented again, a kill -9 after settlement is found paid once', async () => {
    const requirement = nanoRequirement(merchantAddress, xnoToRaw(PRICE), 'nano:dev', 'ffc0000000000000');
    // Takes the block; on /publish it publishes it itself and names another block, on /keep it keeps it and says 200;
    // on /drop it cuts the connection before reading the payment, until `dropping` is false, then settles honestly.
    let dropping = true;
    // On /hang it publishes the block and then never answers, until `hanging` is false: then it says 402.
    let hanging = true;
    const liar = createServer((req, res) => {
      const header = req.headers['payment-signature'];
      if (header !== undefined && req.url === '/drop' && dropping) return void req.socket.destroy();
      if (header !== undefined && req.url === '/hang') {
        const paid = (decodeHeader(header as string, 'PAYMENT-SIGNATURE').payload as { block: StateBlock & { link_as_account?: string } }).block;
        const { link_as_account: _la, ...sent } = paid;
        if (hanging) return void node.publish(sent, 'send', hashBlock(sent)).catch(() => undefined);
        res.writeHead(402, { 'payment-response': encodeHeader({ success: false, errorReason: 'transaction_already_settled', transaction: '', network: 'nano:dev' }) });
        return void res.end('{}');
      }
      if (header === undefined) {
        res.writeHead(402, { 'payment-required': encodeHeader({ x402Version: 2, error: 'Payment required', resource: { url: `http://x${req.url}` }, accepts: [requirement] }) });
        return void res.end('{}');
      }
      const block = (decodeHeader(header as string, 'PAYMENT-SIGNATURE').payload as { block: StateBlock }).block;
      const { link_as_account: _, ...plain } = block as StateBlock & { link_as_account?: string };
      const answer = (): void => {
        res.writeHead(200, { 'payment-response': encodeHeader({ success: true, transaction: 'AB'.repeat(32), network: 'nano:dev' }) });
        res.end('the goods');
      };
      if (req.url === '/drop') {
        void node.publish(plain, 'send', hashBlock(plain)).then(() => {
          res.writeHead(200, { 'payment-response': encodeHeader({ success: true, transaction: hashBlock(plain), network: 'nano:dev' }) });
          res.end('the goods');
        });
      } else if (req.url === '/publish') void node.publish(plain, 'send', hashBlock(plain)).then(answer);
      else answer();
    });
    await new Promise<void>((resolve) => liar.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(liar.address() as AddressInfo).port}`;
    try {
      const before = (await paymentsToMerchant()).length;
      const kept = await customer.run(['fetch', `${url}/keep`, '--max', '0.01', '--yes', '--id', 'liar-1'], { timeoutMs: 60_000 });
      expect(kept.code).toBe(5);
      expect(kept.stderr).toMatch(/our ledger does not show the payment/);
      expect(journal(customer)).toMatchObject({ sendId: 'liar-1', chequeFor: `${url}/keep` });
      const published = await customer.run(['fetch', `${url}/publish`, '--max', '0.01', '--yes']);
      expect(published.code).toBe(0);
      expect(published.stderr).toMatch(/settlement names ABAB.*counts as paid once/s);
      // The kept cheque was cancelled before the second payment; one payment reached the merchant.
      expect(await paymentsToMerchant()).toHaveLength(before + 1);
      expect(journal(customer)).toBeUndefined();

      // Journaled but never presented (the connection cut before the server read it): the rerun with the id presents it.
      const cut = await customer.run(['fetch', `${url}/drop`, '--max', '0.01', '--yes', '--id', 'drop-1']);
      expect(cut.code).toBe(5);
      const cheque = journal(customer);
      expect(cheque).toMatchObject({ sendId: 'drop-1', chequeFor: `${url}/drop` });
      dropping = false;
      const rerun = await customer.json<{ status: number; payment: Record<string, any> }>(['fetch', `${url}/drop`, '--max', '0.01', '--yes', '--id', 'drop-1']);
      expect(rerun).toMatchObject({ status: 200, payment: { hash: cheque?.hash, settlement_matches: true } });
      expect(await paymentsToMerchant()).toHaveLength(before + 2);
      expect(journal(customer)).toBeUndefined();

      // kill -9 after the server settled, before the client heard: the rerun with the id finds it paid, once.
      const child = spawn(process.execPath, [BIN, 'fetch', `${url}/hang`, '--max', '0.01', '--yes', '--id', 'hang-1'], { env: customer.env, stdio: 'ignore' });
      await waitFor(async () => {
        const entry = journal(customer);
        return entry !== undefined && (await node.blockInfo(entry.hash).then((i) => i.confirmed, () => false));
      }, 'the server to settle the block');
      const settledCheque = journal(customer);
      child.kill('SIGKILL');
      await new Promise((resolve) => child.once('close', resolve));
      hanging = false;
      // The server answers 402 to the settled block: the rerun says it was paid, never a bare 402 (issue 41).
      const found = await customer.json(['fetch', `${url}/hang`, '--max', '0.01', '--yes', '--id', 'hang-1']);
      expect(found).toMatchObject({ _code: 10, error: { code: 'X402_PAID_NOT_SERVED', payment: { hash: settledCheque?.hash, repeated: true, settlement_matches: false } } });
      expect(journal(customer)).toBeUndefined();
      const repeated = await customer.json(['fetch', `${url}/hang`, '--max', '0.01', '--yes', '--id', 'hang-1']);
      expect(repeated).toMatchObject({ _code: 10, error: { code: 'X402_PAID_NOT_SERVED', payment: { hash: settledCheque?.hash, repeated: true } } });
      expect(await paymentsToMerchant()).toHaveLength(before + 3);
    } finally {
      liar.closeAllConnections();
      await new Promise((resolve) => liar.close(resolve));
    }
  });

  it("an outstanding cheque is cancelled by the account's next block of any kind (here a receive)", async () => {
    const before = await paymentsToMerchant();
    const blocked = await customer.run(['fetch', `${paywall.printed.url}/fail`, '--max', '0.01', '--yes']);
    expect(blocked.code).toBe(5);
    const cheque = journal(customer);
    expect(cheque?.chequeFor).toBeDefined();
    const receive = await customer.run(['receive']);
    expect(receive.code).toBe(0);
    expect(journal(customer)).toBeUndefined();
    await expect(node.blockInfo(cheque?.hash)).rejects.toMatchObject({ code: 'BLOCK_NOT_FOUND' });
    expect(await paymentsToMerchant()).toEqual(before);
  });
});

async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
