import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_REPRESENTATIVE,
  buildReceiveBlock,
  buildSendBlock,
  deriveAccount,
  generateSeed,
  hashBlock,
  signBlock,
  workRoot,
  type Account,
  type AccountState,
  type StateBlock,
} from '../../src/nano/index.js';
import { startSandbox, type RunningSandbox } from '../../src/sandbox/index.js';
import { DEV_THRESHOLDS, generateWork, shutdownWorkers, validateWork } from '../../src/work/index.js';

let sb: RunningSandbox;
let apiKey: string;

interface Envelope<T = Record<string, any>> {
  status: number;
  success: boolean;
  data: T;
  error: { error: string; message: string } | null;
}

async function call<T = Record<string, any>>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Envelope<T>> {
  const response = await fetch(`${sb.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  return { status: response.status, ...((await response.json()) as Omit<Envelope<T>, 'status'>) };
}

async function head(account: Account): Promise<AccountState> {
  const info = await call('POST', '/account/info', { address: account.address });
  if (!info.success) return { address: account.address, frontier: null, balance: 0n, representative: DEFAULT_REPRESENTATIVE };
  return { address: account.address, frontier: info.data.frontier, balance: BigInt(info.data.balance), representative: info.data.representative };
}

async function complete(block: StateBlock, signer: Account, kind: 'send' | 'receive'): Promise<StateBlock> {
  const work = await generateWork(workRoot(block), kind === 'send' ? DEV_THRESHOLDS.send : DEV_THRESHOLDS.receive);
  return { ...block, signature: signBlock(block, signer.privateKey), work };
}

/** A nonce that does not meet the threshold, for the work rejection. */
function badWork(block: StateBlock, threshold: string): string {
  for (let n = 0; ; n++) {
    const work = n.toString(16).padStart(16, '0');
    if (!validateWork(workRoot(block), work, threshold)) return work;
  }
}

async function publish(block: StateBlock, subtype?: string): Promise<Envelope> {
  return call('POST', '/block/publish', subtype === undefined ? { block } : { subtype, block });
}

async function receiveAll(account: Account): Promise<string[]> {
  const pending = await call<{ blocks: Record<string, string[]> }>('POST', '/wallet/pending', { address: account.address });
  const hashes = pending.data.blocks[account.address] ?? [];
  const done = [];
  for (const source of hashes) {
    const info = await call('POST', '/block/info', { hash: source });
    const block = await complete(buildReceiveBlock(await head(account), { sourceHash: source, amount: BigInt(info.data.amount) }), account, 'receive');
    const result = await publish(block);
    expect(result.error).toBeNull();
    done.push(result.data.hash as string);
  }
  return done;
}

async function fund(address: string, amount: string): Promise<string> {
  return (await call('POST', '/sandbox/fund', { address, amount })).data.hash as string;
}

const alice = deriveAccount({ seed: generateSeed(), index: 0 });
const bob = deriveAccount({ seed: generateSeed(), index: 0 });
const XNO = 10n ** 30n;

beforeAll(async () => {
  sb = await startSandbox({ port: 0 });
  apiKey = ((await (await fetch(`${sb.url}/wallet/create`, { method: 'POST' })).json()) as { data: { api_key: string } }).data.api_key;
});

afterAll(async () => {
  await sb.close();
  await shutdownWorkers();
});

describe('a full chain between two accounts, signed by the core', () => {
  it('open -> send -> open -> send -> receive, balances exact to the raw', async () => {
    await fund(alice.address, '3');
    expect(await receiveAll(alice)).toHaveLength(1);
    const send = await complete(buildSendBlock(await head(alice), { to: bob.address, amount: XNO + 7n }), alice, 'send');
    expect((await publish(send, 'send')).data.hash).toBe(hashBlock(send));
    expect(await receiveAll(bob)).toHaveLength(1);
    const back = await complete(buildSendBlock(await head(bob), { to: alice.address, amount: 7n }), bob, 'send');
    expect((await publish(back)).success).toBe(true);
    expect(await receiveAll(alice)).toHaveLength(1);

    const a = await call('GET', `/wallet/balance/${alice.address}`);
    const b = await call('GET', `/wallet/balance/${bob.address}`);
    expect(a.data).toMatchObject({ balance_raw: (2n * XNO).toString(), pending_raw: '0' });
    expect(b.data).toMatchObject({ balance_raw: XNO.toString(), pending_raw: '0' });
    const info = await call('POST', '/account/info', { address: alice.address });
    expect(info.data).toMatchObject({ block_count: '3', difficulty_send: DEV_THRESHOLDS.send, difficulty_receive: DEV_THRESHOLDS.receive });
    const block = await call('GET', `/block/info/${hashBlock(send)}`);
    expect(block.data).toMatchObject({ block_account: alice.address, amount: (XNO + 7n).toString(), subtype: 'send', confirmed: 'true', height: '2' });
    expect(block.data.contents.link_as_account).toBe(bob.address);
  });
});

describe('publish rejections', () => {
  let carol: Account;
  let source: string;

  beforeAll(async () => {
    carol = deriveAccount({ seed: generateSeed(), index: 0 });
    source = await fund(carol.address, '1');
  });

  async function expectRejected(block: unknown, code: string, subtype?: string): Promise<void> {
    const result = await call('POST', '/block/publish', subtype === undefined ? { block } : { subtype, block });
    expect(result.success).toBe(false);
    expect(result.data).toBeNull();
    expect(result.error?.error).toBe(code);
    expect(result.error?.message.length).toBeGreaterThan(10);
    expect(result.status).toBeGreaterThanOrEqual(400);
    expect(result.status).toBeLessThan(500);
  }

  it('a bad signature', async () => {
    const block = await complete(buildReceiveBlock(await head(carol), { sourceHash: source, amount: XNO }), carol, 'receive');
    await expectRejected({ ...block, signature: signBlock(block, alice.privateKey) }, 'BLOCK_BAD_SIGNATURE');
  });

  it('insufficient work', async () => {
    const unsigned = buildReceiveBlock(await head(carol), { sourceHash: source, amount: XNO });
    await expectRejected({ ...unsigned, signature: signBlock(unsigned, carol.privateKey), work: badWork(unsigned, DEV_THRESHOLDS.receive) }, 'BLOCK_INSUFFICIENT_WORK');
  });

  it('a receive whose balance does not rise by the amount sent', async () => {
    const block = await complete(buildReceiveBlock(await head(carol), { sourceHash: source, amount: XNO + 1n }), carol, 'receive');
    await expectRejected(block, 'BLOCK_BALANCE_MISMATCH');
  });

  it('a receive of a hash that is not a pending send to this account', async () => {
    const aliceHead = await head(alice);
    const notForCarol = await complete(buildReceiveBlock(await head(carol), { sourceHash: aliceHead.frontier as string, amount: XNO }), carol, 'receive');
    await expectRejected(notForCarol, 'BLOCK_UNRECEIVABLE');
  });

  it('a malformed block and a wrong subtype claim', async () => {
    await expectRejected({ type: 'state', account: carol.address }, 'INVALID_BLOCK');
    await expectRejected({ type: 'open', account: carol.address, previous: '0'.repeat(64), representative: carol.address, balance: '1', link: '0'.repeat(64), signature: '0'.repeat(128), work: '0'.repeat(16) }, 'INVALID_BLOCK');
    const block = await complete(buildReceiveBlock(await head(carol), { sourceHash: source, amount: XNO }), carol, 'receive');
    await expectRejected(block, 'INVALID_BLOCK', 'send');
  });

  it('the open lands once; the same block again exists; a second receive of the source is refused', async () => {
    const open = await complete(buildReceiveBlock(await head(carol), { sourceHash: source, amount: XNO }), carol, 'receive');
    expect((await publish(open, 'open')).success).toBe(true);
    await expectRejected(open, 'BLOCK_EXISTS');
    const again = await complete(buildReceiveBlock(await head(carol), { sourceHash: source, amount: XNO }), carol, 'receive');
    await expectRejected(again, 'BLOCK_ALREADY_RECEIVED');
  });

  it('a second block on the same previous is a fork; an unknown previous is a gap', async () => {
    const state = await head(carol);
    const first = await complete(buildSendBlock(state, { to: bob.address, amount: 1n }), carol, 'send');
    const second = await complete(buildSendBlock(state, { to: alice.address, amount: 2n }), carol, 'send');
    expect((await publish(first)).success).toBe(true);
    await expectRejected(second, 'BLOCK_FORK');
    const gap = await complete(buildSendBlock({ ...state, frontier: 'AB'.repeat(32) }, { to: bob.address, amount: 1n }), carol, 'send');
    await expectRejected(gap, 'BLOCK_GAP_PREVIOUS');
    const reopen = await complete(buildReceiveBlock({ ...state, frontier: null, balance: 0n, representative: bob.address }, { sourceHash: source, amount: XNO }), carol, 'receive');
    await expectRejected(reopen, 'BLOCK_FORK');
  });

  it('a previous that belongs to another account', async () => {
    const aliceHead = await head(alice);
    const state = await head(carol);
    const block = await complete(buildSendBlock({ ...state, frontier: aliceHead.frontier }, { to: bob.address, amount: 1n }), carol, 'send');
    await expectRejected(block, 'BLOCK_ACCOUNT_MISMATCH');
  });
});

describe('service endpoints', () => {
  it('wallet/create makes a real keypair with an API key', async () => {
    const created = await call('POST', '/wallet/create', undefined, { authorization: '' });
    expect(Object.keys(created.data).sort()).toEqual(['Wallet Private Seed', 'address', 'api_key', 'private_key', 'public_key']);
    expect(deriveAccount({ seed: created.data['Wallet Private Seed'], index: 0 })).toMatchObject({
      address: created.data.address,
      publicKey: created.data.public_key,
      privateKey: created.data.private_key,
    });
  });

  it('auth: missing and invalid keys, X-API-Key accepted, credits exhausted', async () => {
    const missing = await fetch(`${sb.url}/credits/info`);
    expect(missing.status).toBe(401);
    expect(((await missing.json()) as Envelope).error?.error).toBe('MISSING_API_KEY');
    expect((await call('GET', '/credits/info', undefined, { authorization: 'Bearer nope' })).error?.error).toBe('INVALID_API_KEY');
    const viaHeader = await fetch(`${sb.url}/credits/info`, { headers: { 'x-api-key': apiKey } });
    expect(viaHeader.status).toBe(200);

    const fresh = ((await call('POST', '/wallet/create')).data.api_key) as string;
    const before = (await call('GET', '/credits/info', undefined, { authorization: `Bearer ${fresh}` })).data.credits;
    expect(before).toBe(1000);
    await call('GET', '/network/active-difficulty', undefined, { authorization: `Bearer ${fresh}` });
    expect((await call('GET', '/credits/info', undefined, { authorization: `Bearer ${fresh}` })).data.credits).toBe(999);
    sb.service.setCredits(fresh, 0);
    const exhausted = await call('GET', '/network/active-difficulty', undefined, { authorization: `Bearer ${fresh}` });
    expect(exhausted.status).toBe(402);
    expect(exhausted.error?.error).toBe('INSUFFICIENT_CREDITS');
  });

  it('credits info returns all nine tier prices (strings) and /credits as numbers', async () => {
    const info = await call('GET', '/credits/info');
    const numbers = await call('GET', '/credits');
    for (const tier of [10, 50, 100, 500, 1000, 5000, 10000, 50000, 100000]) {
      expect(typeof info.data[`current_credits_price_${tier}`]).toBe('string');
      expect(typeof numbers.data[`current_credits_price_${tier}`]).toBe('number');
    }
  });

  it('payment requests: only the exact adjusted amount pays', async () => {
    const shop = deriveAccount({ seed: generateSeed(), index: 0 });
    const request = await call('POST', '/payment/request', { receive_address: shop.address, amount: '0.5', redirect_url: 'https://shop.example/done' });
    const second = await call('POST', '/payment/request', { receive_address: shop.address, amount: '0.5' });
    expect(request.data.transaction_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(request.data.amount).not.toBe('0.5');
    expect(request.data.amount).not.toBe(second.data.amount);
    const exact = BigInt(request.data.amount.replace('.', '').padEnd(31, '0')) ;
    expect(exact > 5n * 10n ** 29n).toBe(true);

    await fund(shop.address, '0.5');
    expect((await call('GET', `/payment/status/${request.data.transaction_id}`)).data.is_paid).toBe('false');
    await fund(shop.address, request.data.amount);
    const paid = await call('GET', `/payment/status/${request.data.transaction_id}`);
    expect(paid.data).toMatchObject({ is_paid: 'true', success: 'true', transaction_id: request.data.transaction_id });
    expect(paid.data.message).toMatch(/paid/i);
    expect(paid.data.message).toMatch(/receive/i);
    expect((await call('GET', `/payment/status/${second.data.transaction_id}`)).data.is_paid).toBe('false');

    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const unknown = await call('GET', `/payment/status/${id}`);
      expect(unknown.status).toBe(404);
      expect(unknown.error?.error).toBe('INVALID_TRANSACTION_ID');
    }
  });

  it('top-up: exact payment adds the credits once; a mismatch publishes nothing; a retry is safe', async () => {
    const payer = deriveAccount({ seed: generateSeed(), index: 0 });
    await fund(payer.address, '1');
    await receiveAll(payer);
    expect((await call('GET', '/credits/topup/7')).error?.error).toBe('INVALID_CREDITS_AMOUNT');
    const offer = await call('GET', '/credits/topup/100');
    const price = BigInt(offer.data.nano_amount.split('.')[0]) * XNO + BigInt((offer.data.nano_amount.split('.')[1] ?? '').padEnd(30, '0') || '0');
    const wrong = await complete(buildSendBlock(await head(payer), { to: offer.data.payment_address, amount: price - 1n }), payer, 'send');
    const mismatch = await call('POST', '/credits/topup', { subtype: 'send', block: wrong, transaction_id: offer.data.transaction_id });
    expect(mismatch.error?.error).toBe('PAYMENT_MISMATCH');
    expect((await call('GET', `/block/info/${hashBlock(wrong)}`)).error?.error).toBe('BLOCK_NOT_FOUND');

    const right = await complete(buildSendBlock(await head(payer), { to: offer.data.payment_address, amount: price }), payer, 'send');
    // The payment lands by itself first (as if the answer to the top-up had been lost).
    expect((await publish(right)).success).toBe(true);
    const before = (await call('GET', '/credits/info')).data.credits as number;
    const done = await call('POST', '/credits/topup', { subtype: 'send', block: right, transaction_id: offer.data.transaction_id });
    expect(done.data).toEqual({ topped_up_credits: 100, new_credits_balance: before + 100 });
    const repeat = await call('POST', '/credits/topup', { subtype: 'send', block: right, transaction_id: offer.data.transaction_id });
    expect(repeat.data).toEqual(done.data);
    expect((await call('GET', '/credits/info')).data.credits).toBe(before + 100);
  });

  it('donation address and active difficulty', async () => {
    expect((await call('GET', '/donate/address')).data.address).toMatch(/^nano_/);
    expect((await call('GET', '/network/active-difficulty')).data).toMatchObject({ network_current: DEV_THRESHOLDS.send, network_receive_current: DEV_THRESHOLDS.receive });
  });

  it('bad requests get a 4xx envelope', async () => {
    const malformed = await call('POST', '/account/info', '{"address": ');
    expect([malformed.status, malformed.error?.error]).toEqual([400, 'INVALID_JSON']);
    const wrongType = await call('POST', '/account/info', { address: 42 });
    expect([wrongType.status, wrongType.error?.error]).toEqual([400, 'INVALID_REQUEST']);
    const huge = await call('POST', '/account/info', JSON.stringify({ address: 'x'.repeat(1024 * 1024) }));
    expect([huge.status, huge.error?.error]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    const unknown = await call('GET', '/nope');
    expect([unknown.status, unknown.error?.error, unknown.data]).toEqual([404, 'NOT_FOUND', null]);
    const badAddress = await call('GET', '/wallet/balance/nano_123');
    expect([badAddress.status, badAddress.error?.error]).toEqual([400, 'INVALID_ADDRESS']);
  });
});

describe('persistence', () => {
  it('keeps the ledger, keys and requests across a restart', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'nanopay-sandbox-'));
    const first = await startSandbox({ port: 0, dataDir });
    const created = ((await (await fetch(`${first.url}/wallet/create`, { method: 'POST' })).json()) as { data: { address: string; api_key: string } }).data;
    await fetch(`${first.url}/sandbox/fund`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ address: created.address, amount: '2' }) });
    await first.close();
    const second = await startSandbox({ port: 0, dataDir });
    const balance = (await (await fetch(`${second.url}/wallet/balance/${created.address}`, { headers: { 'x-api-key': created.api_key } })).json()) as Envelope;
    await second.close();
    expect(balance.data.pending_raw).toBe((2n * XNO).toString());
  });
});
