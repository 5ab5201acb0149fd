import { spawn } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { createServer, request as httpRequest, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawToXno, xnoToRaw } from '../../../src/nano/index.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { decodeHeader, encodeHeader } from '../../../src/x402/protocol.js';
import { fetchInSession } from '../../../src/x402/sessions/buyer.js';
import { buyerSessions } from '../../../src/x402/sessions/buyer-book.js';
import { requestDigest, signWithSessionKey, voucherMessage } from '../../../src/x402/sessions/wire.js';
import { userSession } from '../../helpers/ledger/backend-users.js';
import { nodeMerchantAndCustomer } from '../../helpers/ledger/node-users.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { BIN, PASSWORD, type CliUser } from '../../helpers/processes/cli.js';
import { NanoPay } from '../../../src/sdk/nanopay.js';
import { startCommand, type RunningCommand } from '../../helpers/processes/serve.js';

/** An API to sell: /report answers, /fail fails, /hold waits for the test, /metered says how many units it used. */
interface Upstream {
  url: string;
  server: Server;
  holding: ServerResponse[];
  served: number;
}

async function startUpstream(): Promise<Upstream> {
  const up: Upstream = { url: '', server: createServer(), holding: [], served: 0 };
  up.server.on('request', (req, res) => {
    if (req.url === '/fail') return void res.writeHead(503).end('not now');
    if (req.url === '/hold') return void up.holding.push(res);
    up.served++;
    if (req.url === '/metered') return void res.writeHead(200, { 'nanopay-units': '7' }).end('seven units');
    res.writeHead(200, { 'content-type': 'text/plain' }).end(`report for ${req.method} ${req.url}`);
  });
  await new Promise<void>((resolve) => up.server.listen(0, '127.0.0.1', resolve));
  up.url = `http://127.0.0.1:${(up.server.address() as AddressInfo).port}`;
  return up;
}

async function waitFor(check: () => boolean | Promise<boolean>, what: string, ms = 15_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

let sb: RunningSandbox;
let up: Upstream;
let merchant: CliUser;
let customer: CliUser;
let merchantAddress: string;
let paywall: RunningCommand<{ url: string; sessions: boolean }>;
const SELL = ['--price', '0.001', '--route', "GET /metered=0.002 unit=0.0001", '--sessions', '--session-deposit', '0.05'];

beforeAll(async () => {
  sb = await sandbox();
  up = await startUpstream();
  ({ merchant, customer, merchantAddress } = await nodeMerchantAndCustomer(sb, {}));
  paywall = await startCommand(['paywall', '--upstream', up.url, ...SELL, '--json'], merchant.env);
});
afterAll(async () => {
  await paywall.stop();
  up.server.closeAllConnections();
  up.server.close();
  await sb.close();
  for (const u of [merchant, customer]) await rm(u.configDir, { recursive: true, force: true });
});

type Paid = { status: number; body: string; payment: Record<string, any> | null; session: Record<string, any> | null };
const inSession = (path: string, more: string[] = []): Promise<Paid & { _code: number | null }> => customer.json<Paid>(['fetch', `${paywall.printed.url}${path}`, '--session', '--max', '0.01', '--yes', ...more]);
const balanceRaw = async (user: CliUser): Promise<bigint> => {
  await user.json(['receive']);
  return BigInt((await user.json<{ balance_raw: string }>(['balance'])).balance_raw);
};

describe('nano-session through nanopay paywall --sessions and nanopay fetch --session', () => {
  it('offers a session beside exact; a buyer that knows only exact still pays per call', async () => {
    const unpaid = await fetch(`${paywall.printed.url}/report`);
    expect(unpaid.status).toBe(402);
    const required = decodeHeader(unpaid.headers.get('payment-required') as string, 'PAYMENT-REQUIRED') as { accepts: Record<string, any>[] };
    expect(required.accepts.map((a) => a.scheme)).toEqual(['exact', 'nano-session']);
    expect(required.accepts[1]).toMatchObject({ amount: xnoToRaw('0.001').toString(), payTo: merchantAddress, extra: { sessions: `${paywall.printed.url}/.well-known/x402/sessions`, minDeposit: xnoToRaw('0.05').toString() } });
    const exact = await customer.json<Paid>(['fetch', `${paywall.printed.url}/report`, '--max', '0.01', '--yes']);
    expect(exact).toMatchObject({ status: 200, payment: { amount: '0.001', settlement: { success: true } } });
  });

  it('one deposit, then a voucher a call (metered calls charge their units, failed ones nothing); close refunds the rest with a receipt anyone can check', async () => {
    const start = await balanceRaw(customer);
    const first = await inSession('/report', ['--session-deposit', '0.05']);
    expect(first).toMatchObject({ status: 200, body: 'report for GET /report', payment: null, session: { opened: true, counter: 1, amount: '0.001', pay_to: merchantAddress } });
    const id = first.session?.session as string;
    const second = await inSession('/report?page=2');
    expect(second).toMatchObject({ status: 200, session: { session: id, opened: false, counter: 2, spent_raw: xnoToRaw('0.002').toString() } });
    const metered = await inSession('/metered');
    // 7 units at 0.0001 within the route's ceiling of 0.002.
    expect(metered).toMatchObject({ status: 200, body: 'seven units', session: { session: id, amount: '0.0007', spent_raw: xnoToRaw('0.0027').toString() } });
    const failed = await inSession('/fail');
    expect(failed).toMatchObject({ status: 503, session: null });

    const listed = await customer.json<{ sessions: Record<string, any>[] }>(['sessions']);
    expect(listed.sessions.find((s) => s.session === id)).toMatchObject({ state: 'open', deposit: '0.05', spent: '0.0027', remaining: '0.0473' });
    expect(JSON.stringify(listed)).not.toMatch(/seed/);

    const closed = await customer.json<Record<string, any>>(['sessions', 'close', id]);
    expect(closed).toMatchObject({ session: id, deposit: '0.05', spent: '0.0027', refunded: '0.0473', refund_confirmed: true });
    // The buyer paid the deposit less the refund: exactly what the seller charged.
    expect(start - (await balanceRaw(customer))).toBe(xnoToRaw('0.0027'));

    const receipt = await customer.run(['sessions', 'receipt', id]);
    const file = join(customer.configDir, 'receipt.json');
    await writeFile(file, receipt.stdout);
    const checked = await customer.json<Record<string, any>>(['receipt', 'verify', file]);
    expect(checked).toMatchObject({ valid: true, spent_raw: xnoToRaw('0.0027').toString(), refund_raw: xnoToRaw('0.0473').toString() });
    // A receipt edited to say less was spent no longer holds.
    const forged = JSON.parse(receipt.stdout) as Record<string, any>;
    await writeFile(file, JSON.stringify({ ...forged, spent_raw: '0', refund_raw: forged.deposit_raw }));
    const refused = await customer.json<Record<string, any>>(['receipt', 'verify', file]);
    expect(refused).toMatchObject({ _code: 1, valid: false, problems: [expect.stringMatching(/seller_signature/)] });

    // The audit shows the deposit as it left, and the refund that came back.
    const audit = await customer.run(['audit', '--json']);
    expect(audit.stdout).toContain(xnoToRaw('0.05').toString());
    expect(audit.stdout).toContain(`-${xnoToRaw('0.0473')}`);
  });

  it('refuses a voucher replayed, for another request, above the deposit, under the price, or not signed by the session key; none is served', async () => {
    const session = userSession(customer);
    const opened = await fetchInSession(session, `${paywall.printed.url}/report`, {}, { maxXno: '0.01', depositXno: '0.05' });
    expect(opened.response.status).toBe(200);
    const s = (await buyerSessions(session)).find((b) => b.id === opened.session?.session);
    if (s === undefined) throw new Error('no buyer session');
    const served = up.served;
    const call = (path: string, fields: { counter: number; spent: bigint; request?: string; seed?: string }) => {
      const unsigned = { session: s.id, counter: fields.counter, spent: fields.spent.toString(), request: fields.request ?? requestDigest('GET', path, undefined) };
      const signature = signWithSessionKey(fields.seed ?? s.seed, voucherMessage(unsigned));
      return fetch(`${paywall.printed.url}${path}`, { headers: { 'payment-signature': encodeHeader({ x402Version: 2, accepted: s.requirement, payload: { ...unsigned, signature } }) } });
    };
    const reason = async (response: Response) => ({ status: response.status, error: (decodeHeader(response.headers.get('payment-required') as string, 'PAYMENT-REQUIRED') as { error: string }).error });
    const price = xnoToRaw('0.001');
    const good = await call('/report', { counter: 5, spent: 2n * price });
    expect(good.status).toBe(200);
    expect(await reason(await call('/report', { counter: 5, spent: 3n * price }))).toEqual({ status: 402, error: 'voucher_replayed' });
    expect(await reason(await call('/report', { counter: 6, spent: 3n * price, request: requestDigest('GET', '/other', undefined) }))).toEqual({ status: 402, error: 'voucher_mismatch' });
    expect(await reason(await call('/report', { counter: 7, spent: xnoToRaw('0.051') }))).toEqual({ status: 402, error: 'insufficient_funds' });
    expect(await reason(await call('/report', { counter: 8, spent: 2n * price + price / 2n }))).toEqual({ status: 402, error: 'invalid_amount' });
    expect(await reason(await call('/report', { counter: 9, spent: 3n * price, seed: '11'.repeat(32) }))).toEqual({ status: 402, error: 'invalid_signature' });
    expect(up.served).toBe(served + 1);
  });

  it('kill -9 of the buyer mid-call, then of the seller: the next call goes on, and the close refunds the deposit less every call served, once', async () => {
    const first = await inSession('/report', ['--session-deposit', '0.05']);
    const id = first.session?.session as string;
    const counter = first.session?.counter as number;
    const held = spawn(process.execPath, [BIN, 'fetch', `${paywall.printed.url}/hold`, '--session', '--max', '0.01', '--yes'], { env: customer.env, stdio: 'ignore' });
    await waitFor(() => up.holding.length === 1, 'the call to reach the upstream');
    held.kill('SIGKILL');
    await new Promise((resolve) => held.once('close', resolve));
    // Its buyer went away before the answer: not served, so not charged; its counter is spent all the same.
    await waitFor(async () => (await fetch(`${paywall.printed.url}/.well-known/x402/sessions/${id}`).then((r) => r.json() as Promise<{ counter: number }>)).counter === counter + 1, 'the held call to be let go');
    (up.holding.shift() as ServerResponse).writeHead(200).end('held report');
    const spentBefore = BigInt(first.session?.spent_raw as string);
    const next = await inSession('/report');
    expect(next).toMatchObject({ status: 200, session: { session: id, counter: counter + 2, spent_raw: (spentBefore + xnoToRaw('0.001')).toString() } });

    // The seller is killed after serving: what it served is on disk, and it comes back on the same port.
    const port = new URL(paywall.printed.url).port;
    paywall.child.kill('SIGKILL');
    await paywall.stop();
    paywall = await startCommand(['paywall', '--upstream', up.url, ...SELL, '--port', port, '--json'], merchant.env);
    const after = await inSession('/report');
    const spent = spentBefore + xnoToRaw('0.002');
    expect(after).toMatchObject({ status: 200, session: { session: id, counter: counter + 3, spent_raw: spent.toString() } });
    const closed = await customer.json<Record<string, any>>(['sessions', 'close', id]);
    expect(closed).toMatchObject({ refunded: rawToXno(xnoToRaw('0.05') - spent), refund_confirmed: true });
    const again = await customer.json<Record<string, any>>(['sessions', 'close', id]);
    expect(again).toMatchObject({ refund_block: closed.refund_block, refunded: closed.refunded });
  });

});

describe('payment-identifier (a retry gets the first answer) and the seller\'s receipts', () => {
  it('exact: the same payment again under its id gets the first answer and pays nothing; another request under it is refused', async () => {
    const first = await customer.json<Paid>(['fetch', `${paywall.printed.url}/report?n=1`, '--max', '0.01', '--yes', '--id', 'exact-retry-1']);
    expect(first).toMatchObject({ status: 200, body: 'report for GET /report?n=1', payment: { repeated: false } });
    const served = up.served;
    const again = await customer.json<Paid>(['fetch', `${paywall.printed.url}/report?n=1`, '--max', '0.01', '--yes', '--id', 'exact-retry-1']);
    expect(again).toMatchObject({ status: 200, body: 'report for GET /report?n=1', payment: { hash: first.payment?.hash, repeated: true, settlement: { success: true, transaction: first.payment?.hash } } });
    expect(up.served).toBe(served);

    // The seller exports a receipt of that settlement, signed with its key, which anyone checks.
    const receipt = await merchant.run(['receipt', 'export', first.payment?.hash as string]);
    const file = join(merchant.configDir, 'exact-receipt.json');
    await writeFile(file, receipt.stdout);
    expect(await merchant.json(['receipt', 'verify', file])).toMatchObject({ valid: true, scheme: 'exact', payer: first.payment?.payer, pay_to: merchantAddress, spent_raw: xnoToRaw('0.001').toString() });
  });

  it('session: a call again under its id gets the first answer without a second charge; the seller exports the closed session\'s receipt', async () => {
    const first = await inSession('/report?n=2', ['--session-deposit', '0.05', '--id', 'session-retry-1']);
    expect(first).toMatchObject({ status: 200, session: { repeated: false } });
    const served = up.served;
    const again = await inSession('/report?n=2', ['--id', 'session-retry-1']);
    expect(again).toMatchObject({ status: 200, body: first.body, session: { session: first.session?.session, counter: first.session?.counter, spent_raw: first.session?.spent_raw, repeated: true } });
    expect(up.served).toBe(served);
    const other = await inSession('/report?n=3', ['--id', 'session-retry-1']);
    expect(other).toMatchObject({ error: { code: 'IDEMPOTENCY_MISMATCH' } });

    const id = first.session?.session as string;
    const closed = await customer.json<Record<string, any>>(['sessions', 'close', id]);
    const exported = await merchant.run(['receipt', 'export', id]);
    expect(JSON.parse(exported.stdout)).toMatchObject({ session: id, spent_raw: xnoToRaw(closed.spent as string).toString(), refund_block: closed.refund_block });
    const file = join(merchant.configDir, 'session-receipt.json');
    await writeFile(file, exported.stdout);
    expect(await merchant.json(['receipt', 'verify', file])).toMatchObject({ valid: true, scheme: 'nano-session' });
  });

  it('the paywall refuses one payment id for two requests (409) and replays the first answer to a raw retry', async () => {
    const session = userSession(customer);
    const opened = await fetchInSession(session, `${paywall.printed.url}/report?n=4`, {}, { maxXno: '0.01', depositXno: '0.05' });
    const s = (await buyerSessions(session)).find((b) => b.id === opened.session?.session);
    if (s === undefined) throw new Error(`no buyer session: ${opened.response.status} ${await opened.response.text()} ${JSON.stringify(opened.session)}`);
    const voucher = (path: string, counter: number, spent: bigint) => {
      const unsigned = { session: s.id, counter, spent: spent.toString(), request: requestDigest('GET', path, undefined) };
      return { 'payment-signature': encodeHeader({ x402Version: 2, accepted: s.requirement, payload: { ...unsigned, signature: signWithSessionKey(s.seed, voucherMessage(unsigned)) }, extensions: { 'payment-identifier': { info: { id: 'raw_retry_0123456789' } } } }) };
    };
    const headers = voucher('/report?n=5', 100, xnoToRaw('0.002'));
    const first = await fetch(`${paywall.printed.url}/report?n=5`, { headers });
    expect(first.status).toBe(200);
    const retry = await fetch(`${paywall.printed.url}/report?n=5`, { headers });
    expect([retry.status, await retry.text(), retry.headers.get('payment-response')]).toEqual([200, await first.text(), first.headers.get('payment-response')]);
    const conflict = await fetch(`${paywall.printed.url}/report?n=6`, { headers: voucher('/report?n=6', 101, xnoToRaw('0.003')) });
    expect(conflict.status).toBe(409);
    // The id alone gets nothing: the same request under it with another voucher is refused too.
    const stolen = await fetch(`${paywall.printed.url}/report?n=5`, { headers: voucher('/report?n=5', 102, xnoToRaw('0.004')) });
    expect(stolen.status).toBe(409);
    const required = decodeHeader((await fetch(`${paywall.printed.url}/report`)).headers.get('payment-required') as string, 'PAYMENT-REQUIRED');
    expect(required.extensions).toMatchObject({ 'payment-identifier': { info: { required: false } } });
  });
});

describe("the buyer's spending policy", () => {
  it('counts a deposit in the day when it leaves, and frees the refund when it is back', async () => {
    const users = await nodeMerchantAndCustomer(sb, {});
    // Two sellers (one profile keeps one paywall's sessions).
    const other = await nodeMerchantAndCustomer(sb, {});
    const sellers = await Promise.all([users.merchant, other.merchant].map((m) => startCommand<{ url: string }>(['paywall', '--upstream', up.url, '--price', '0.001', '--sessions', '--session-deposit', '0.05', '--json'], m.env)));
    try {
      expect((await users.customer.json(['policy', 'set', 'day', '0.08']))._code).toBe(0);
      const open = (seller: number) => users.customer.json<Paid>(['fetch', `${sellers[seller]?.printed.url}/report`, '--session', '--max', '0.01', '--yes', '--session-deposit', '0.05']);
      const first = await open(0);
      expect(first).toMatchObject({ status: 200, session: { opened: true } });
      // The first deposit counts in full while its session is open: a second one would pass the day's 0.08.
      const refused = await open(1);
      expect(refused, JSON.stringify(refused)).toMatchObject({ _code: 7, error: { code: 'POLICY_DENIED', rule: 'day' } });
      await users.customer.json(['sessions', 'close', first.session?.session as string]);
      // Closed: 0.049 came back, so the day counts 0.001 of it.
      const second = await open(1);
      expect(second).toMatchObject({ status: 200, session: { opened: true } });
    } finally {
      for (const s of sellers) await s.stop();
      for (const u of [users.merchant, users.customer, other.merchant, other.customer]) await rm(u.configDir, { recursive: true, force: true });
    }
  });
});

describe('approvals and the SDK', () => {
  it('a deposit above an ask-above rule waits for an approval, bound to that deposit; then the SDK\'s sessionFetch calls in the session', async () => {
    const users = await nodeMerchantAndCustomer(sb, {});
    const seller = await startCommand<{ url: string }>(['paywall', '--upstream', up.url, '--price', '0.001', '--sessions', '--session-deposit', '0.05', '--json'], users.merchant.env);
    try {
      expect((await users.customer.run(['policy', 'set', 'ask-above', '0.03'])).code).toBe(0);
      const url = `${seller.printed.url}/report`;
      const held = await users.customer.json<{ error: { code: string; approval: { id: string; amount: string } } }>(['fetch', url, '--session', '--max', '0.01', '--yes']);
      expect(held).toMatchObject({ _code: 14, error: { code: 'APPROVAL_REQUIRED', approval: { amount: '0.05' } } });
      expect((await users.customer.run(['approvals', 'approve', held.error.approval.id, '--yes'])).code).toBe(0);
      const opened = await users.customer.json<Paid>(['fetch', url, '--session', '--max', '0.01', '--yes', '--approval', held.error.approval.id]);
      expect(opened).toMatchObject({ status: 200, session: { opened: true } });
      const sdk = new NanoPay({ password: PASSWORD, env: users.customer.env });
      try {
        const paidFetch = sdk.sessionFetch({ maxXno: '0.01' });
        const response = await paidFetch(`${url}?sdk=1`);
        expect([response.status, await response.text()]).toEqual([200, 'report for GET /report?sdk=1']);
        const standing = decodeHeader(response.headers.get('payment-response') as string, 'PAYMENT-RESPONSE') as { session: { id: string; spent_raw: string } };
        expect(standing.session).toMatchObject({ id: opened.session?.session, spent_raw: xnoToRaw('0.002').toString() });
      } finally {
        await sdk.session.close();
      }
    } finally {
      await seller.stop();
      for (const u of [users.merchant, users.customer]) await rm(u.configDir, { recursive: true, force: true });
    }
  });
});

describe('one seller process per profile', () => {
  it('a second paywall with sessions of the same profile is refused while the first runs', async () => {
    const second = await merchant.run(['paywall', '--upstream', up.url, '--price', '0.001', '--sessions', '--json']);
    expect(second.code).not.toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({ error: { code: 'CONFLICT', message: expect.stringMatching(/Another paywall with sessions/) } });
  });
});

/** A pass-through to the sandbox's node RPC that can hold the next `process` of a send from `account` until told what to do with it. */
async function processGate(target: string): Promise<{ url: string; holdSendFrom(account: string): Promise<(forward: boolean) => void>; close(): Promise<void> }> {
  let waiting: { account: string; reached: (settle: (forward: boolean) => void) => void } | undefined;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const pass = (): void => {
        const out = httpRequest(target, { method: req.method, headers: { ...req.headers, host: new URL(target).host } }, (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        });
        out.on('error', () => res.destroy());
        out.end(body);
      };
      const text = body.toString();
      const held = waiting;
      if (held !== undefined && text.includes('"process"') && text.includes('"send"') && text.includes(held.account)) {
        waiting = undefined;
        return held.reached((forward) => (forward ? pass() : res.destroy()));
      }
      pass();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    holdSendFrom: (account) => new Promise((reached) => (waiting = { account, reached })),
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

describe('a seller killed while it sends a refund', () => {
  it('sends the same refund block when it starts again: one refund, the rest of the deposit exactly', async () => {
    const users = await nodeMerchantAndCustomer(sb, {});
    const gate = await processGate(sb.url);
    const sellerEnv = { ...users.merchant.env, NANOPAY_NODE_URL: gate.url };
    let seller = await startCommand<{ url: string; pay_to: string }>(['paywall', '--upstream', up.url, '--price', '0.001', '--sessions', '--session-deposit', '0.02', '--json'], sellerEnv);
    try {
      const buyerStart = await balanceRaw(users.customer);
      const opened = await users.customer.json<Paid>(['fetch', `${seller.printed.url}/report`, '--session', '--max', '0.01', '--yes']);
      const id = opened.session?.session as string;
      const held = gate.holdSendFrom(seller.printed.pay_to);
      const closing = spawn(process.execPath, [BIN, 'sessions', 'close', id, '--json'], { env: users.customer.env, stdio: 'ignore' });
      const settle = await held;
      // The refund is signed and on its way to the ledger: the seller dies here, and the block lands without it.
      seller.child.kill('SIGKILL');
      await seller.stop();
      closing.kill('SIGKILL');
      settle(true);
      const port = new URL(seller.printed.url).port;
      seller = await startCommand(['paywall', '--upstream', up.url, '--price', '0.001', '--sessions', '--session-deposit', '0.02', '--port', port, '--json'], users.merchant.env);
      const closed = await users.customer.json<Record<string, any>>(['sessions', 'close', id]);
      expect(closed).toMatchObject({ spent: '0.001', refunded: '0.019', refund_confirmed: true });
      // One refund: the buyer is out exactly the one call.
      expect(buyerStart - (await balanceRaw(users.customer))).toBe(xnoToRaw('0.001'));
    } finally {
      await seller.stop();
      await gate.close();
      for (const u of [users.merchant, users.customer]) await rm(u.configDir, { recursive: true, force: true });
    }
  });
});

describe('a buyer', () => {
  it('tops its session up when the deposit is spent, in the same session', async () => {
    const users = await nodeMerchantAndCustomer(sb, {});
    const seller = await startCommand<{ url: string }>(['paywall', '--upstream', up.url, '--price', '0.001', '--sessions', '--session-deposit', '0.002', '--json'], users.merchant.env);
    try {
      const call = () => users.customer.json<Paid>(['fetch', `${seller.printed.url}/report`, '--session', '--max', '0.01', '--yes']);
      const first = await call();
      await call();
      const third = await call();
      expect(third).toMatchObject({ status: 200, session: { session: first.session?.session, counter: 3, spent_raw: xnoToRaw('0.003').toString(), remaining_raw: xnoToRaw('0.001').toString() } });
      const closed = await users.customer.json<Record<string, any>>(['sessions', 'close', first.session?.session as string]);
      expect(closed).toMatchObject({ deposit: '0.004', spent: '0.003', refunded: '0.001', refund_confirmed: true });
      expect(closed.receipt).toBeUndefined();
      const receipt = JSON.parse((await users.customer.run(['sessions', 'receipt', first.session?.session as string])).stdout) as { deposits: unknown[] };
      expect(receipt.deposits).toHaveLength(2);
    } finally {
      await seller.stop();
      for (const u of [users.merchant, users.customer]) await rm(u.configDir, { recursive: true, force: true });
    }
  });

  it('killed after its deposit left and before the answer: the rerun finds the same session, one deposit', async () => {
    const users = await nodeMerchantAndCustomer(sb, {});
    const gate = await processGate(sb.url);
    const seller = await startCommand<{ url: string }>(['paywall', '--upstream', up.url, '--price', '0.001', '--sessions', '--session-deposit', '0.02', '--json'], { ...users.merchant.env, NANOPAY_NODE_URL: gate.url });
    try {
      const buyerStart = await balanceRaw(users.customer);
      const held = gate.holdSendFrom(await userSession(users.customer).address());
      const opening = spawn(process.execPath, [BIN, 'fetch', `${seller.printed.url}/report`, '--session', '--max', '0.01', '--yes'], { env: users.customer.env, stdio: 'ignore' });
      const settle = await held;
      opening.kill('SIGKILL');
      await new Promise((resolve) => opening.once('close', resolve));
      // The seller publishes the deposit; the buyer that sent it is gone.
      settle(true);
      const rerun = await users.customer.json<Paid>(['fetch', `${seller.printed.url}/report`, '--session', '--max', '0.01', '--yes']);
      expect(rerun).toMatchObject({ status: 200, session: { opened: false } });
      const listed = await users.customer.json<{ sessions: Record<string, any>[] }>(['sessions']);
      expect(listed.sessions).toHaveLength(1);
      const closed = await users.customer.json<Record<string, any>>(['sessions', 'close', rerun.session?.session as string]);
      expect(closed).toMatchObject({ deposit: '0.02', refund_confirmed: true });
      expect(buyerStart - (await balanceRaw(users.customer))).toBe(xnoToRaw(closed.spent as string));
    } finally {
      await seller.stop();
      await gate.close();
      for (const u of [users.merchant, users.customer]) await rm(u.configDir, { recursive: true, force: true });
    }
  });
});

describe('a session the buyer leaves idle', () => {
  it('is closed and refunded by the seller; the buyer reads the receipt and the refund from its ledger', async () => {
    const seller = (await nodeMerchantAndCustomer(sb, {})).merchant;
    const idle = await startCommand<{ url: string }>(['paywall', '--upstream', up.url, '--price', '0.001', '--sessions', '--session-deposit', '0.02', '--session-idle', '2s', '--json'], seller.env);
    try {
      const opened = await customer.json<Paid>(['fetch', `${idle.printed.url}/report`, '--session', '--max', '0.01', '--yes']);
      const id = opened.session?.session as string;
      await waitFor(async () => (await fetch(`${idle.printed.url}/.well-known/x402/sessions/${id}`).then((r) => r.json() as Promise<{ state: string }>)).state === 'closed', 'the idle session to close', 20_000);
      const closed = await customer.json<Record<string, any>>(['sessions', 'close', id]);
      expect(closed).toMatchObject({ spent: '0.001', refunded: '0.019', refund_confirmed: true });
    } finally {
      await idle.stop();
      await rm(seller.configDir, { recursive: true, force: true });
    }
  });
});
