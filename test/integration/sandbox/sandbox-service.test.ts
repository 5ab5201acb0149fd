import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NanoPayError } from '../../../src/errors.js';
import { buildSendBlock, deriveAccount, hashBlock, xnoToRaw, type Account } from '../../../src/nano/index.js';
import { CREDIT_TIERS as TIERS } from '../../../src/api/contract.js';
import { CREDIT_COSTS, startSandbox, tierPriceRaw, type RunningSandbox } from '../../../src/sandbox/index.js';
import { DEV_THRESHOLDS, LIVE_THRESHOLDS, shutdownWorkers } from '../../../src/work/index.js';
import { SandboxClient, newAccount, sandboxWithClient } from '../../helpers/ledger/chain.js';
import { sendHostileRequests } from '../../helpers/network/raw-http.js';
import { tempDir } from '../../helpers/processes/temp.js';

let sb: RunningSandbox;
let client: SandboxClient;

beforeAll(async () => {
  ({ sb, client } = await sandboxWithClient());
});

afterAll(async () => {
  await sb.close();
  await shutdownWorkers();
});

async function credits(c: SandboxClient): Promise<number> {
  return (await c.call('GET', '/credits/info')).data.credits as number;
}

/** A new account opened with `xno` from the faucet. */
async function opened(xno: string): Promise<Account> {
  const account = newAccount();
  await client.fund(account.address, xno);
  await client.receiveAll(account);
  return account;
}

describe('wallets and reads', () => {
  it('wallet/create is public and makes a real keypair with a 1,000-credit API key', async () => {
    const created = await new SandboxClient(sb.url).call('POST', '/wallet/create', undefined, { authorization: '' });
    expect(created.status).toBe(200);
    expect(Object.keys(created.data).sort()).toEqual(['Wallet Private Seed', 'address', 'api_key', 'private_key', 'public_key']);
    expect(created.data['Wallet Private Seed']).toMatch(/^[0-9A-F]{64}$/);
    expect(deriveAccount({ seed: created.data['Wallet Private Seed'], index: 0 })).toEqual({
      address: created.data.address,
      publicKey: created.data.public_key,
      privateKey: created.data.private_key,
    });
    expect(await credits(new SandboxClient(sb.url, created.data.api_key))).toBe(1000);
  });

  it('an unopened account: zero balance, empty pending, account info not found', async () => {
    const nobody = newAccount();
    expect((await client.call('GET', `/wallet/balance/${nobody.address}`)).data).toEqual({
      account: nobody.address,
      balance: '0',
      balance_raw: '0',
      pending: '0',
      pending_raw: '0',
    });
    expect((await client.call('POST', '/wallet/pending', { address: nobody.address })).data).toEqual({ blocks: { [nobody.address]: [] } });
    for (const info of [await client.call('POST', '/account/info', { address: nobody.address }), await client.call('GET', `/account/info/${nobody.address}`)]) {
      expect([info.status, info.error?.error, info.error?.message]).toEqual([404, 'ACCOUNT_NOT_FOUND', 'Account not found']);
    }
    const block = await client.call('GET', `/block/info/${'AB'.repeat(32)}`);
    expect([block.status, block.error?.error]).toEqual([404, 'BLOCK_NOT_FOUND']);
  });

  it('pending blocks in both forms, oldest first, upper-case hashes', async () => {
    const judy = newAccount();
    const first = await client.fund(judy.address, '1');
    const second = await client.fund(judy.address, '2');
    const expected = { blocks: { [judy.address]: [first, second] } };
    expect((await client.call('POST', '/wallet/pending', { address: judy.address })).data).toEqual(expected);
    expect((await client.call('GET', `/wallet/pending/${judy.address}`)).data).toEqual(expected);
    expect(first).toMatch(/^[0-9A-F]{64}$/);
    expect((await client.call('GET', `/wallet/balance/${judy.address}`)).data).toMatchObject({ pending_raw: (3n * 10n ** 30n).toString() });
  });

  it('donation address, active difficulty and the ledger dump', async () => {
    expect((await client.call('GET', '/donate/address')).data.address).toMatch(/^nano_/);
    expect((await client.call('GET', '/network/active-difficulty')).data).toEqual({
      network_minimum: DEV_THRESHOLDS.send,
      network_receive_minimum: DEV_THRESHOLDS.receive,
      network_current: DEV_THRESHOLDS.send,
      network_receive_current: DEV_THRESHOLDS.receive,
      multiplier: '1',
    });
    const hash = await client.fund(newAccount().address, '1');
    const dump = (await new SandboxClient(sb.url).call('GET', '/sandbox/ledger')).data;
    expect(dump.blocks.at(-1)).toMatchObject({ hash, subtype: 'send', amount: (10n ** 30n).toString() });
    expect(dump.accounts.length).toBeGreaterThan(0);
    expect(dump.receivables.some((r: { hash: string }) => r.hash === hash)).toBe(true);
  });
});

describe('API keys and credits', () => {
  it('missing and invalid keys are refused; Bearer and X-API-Key both work', async () => {
    const missing = await fetch(`${sb.url}/credits/info`);
    expect(missing.status).toBe(401);
    expect(((await missing.json()) as { error: { error: string } }).error.error).toBe('MISSING_API_KEY');
    const anonymous = new SandboxClient(sb.url, 'not-a-key');
    expect((await anonymous.call('GET', '/credits/info')).error?.error).toBe('INVALID_API_KEY');
    const viaHeader = await client.call('GET', '/credits/info', undefined, { authorization: '', 'x-api-key': 'not-a-key' });
    expect([viaHeader.status, viaHeader.error?.error]).toEqual([401, 'INVALID_API_KEY']);
    expect((await client.call('GET', '/credits/info', undefined, { authorization: '', 'x-api-key': client.apiKey })).status).toBe(200);
  });

  it('calls cost credits on success only; an exhausted key gets 402 until it tops up', async () => {
    const fresh = await SandboxClient.withNewKey(sb.url);
    await fresh.call('GET', '/network/active-difficulty');
    expect(await credits(fresh)).toBe(1000 - CREDIT_COSTS.activeDifficulty);
    expect((await fresh.call('GET', '/wallet/balance/nano_123')).status).toBe(400);
    expect(await credits(fresh)).toBe(1000 - CREDIT_COSTS.activeDifficulty);

    sb.service.setCredits(fresh.apiKey, 0);
    const exhausted = await fresh.call('GET', '/network/active-difficulty');
    expect([exhausted.status, exhausted.error?.error]).toEqual([402, 'INSUFFICIENT_CREDITS']);
    expect(exhausted.error?.message).toMatch(/top up/i);

    // Top-ups are free, so the key recovers.
    const payer = await opened('1');
    const offer = await fresh.call('GET', '/credits/topup/10');
    const block = await client.complete(buildSendBlock(await client.head(payer), { to: offer.data.payment_address, amount: xnoToRaw(offer.data.nano_amount) }), payer, 'send');
    const topped = await fresh.call('POST', '/credits/topup', { subtype: 'send', block, transaction_id: offer.data.transaction_id });
    expect(topped.data).toEqual({ topped_up_credits: 10, new_credits_balance: 10 });
    expect((await fresh.call('GET', '/network/active-difficulty')).status).toBe(200);
    expect(await credits(fresh)).toBe(10 - CREDIT_COSTS.activeDifficulty);
  });

  it('credits info has all nine tier prices: strings on /credits/info, numbers on /credits', async () => {
    const info = await client.call('GET', '/credits/info');
    const numbers = await client.call('GET', '/credits');
    expect(Object.keys(info.data).sort()).toEqual(['credits', ...TIERS.map((n) => `current_credits_price_${n}`)].sort());
    expect(info.data.current_credits_price_10).toBe('0.001');
    for (const tier of TIERS) {
      expect(xnoToRaw(info.data[`current_credits_price_${tier}`])).toBe(tierPriceRaw(tier));
      expect(numbers.data[`current_credits_price_${tier}`]).toBe(Number(info.data[`current_credits_price_${tier}`]));
    }
    expect(typeof numbers.data.credits).toBe('number');
  });
});

describe('payment requests', () => {
  it('only a send of exactly the adjusted amount pays, by any route', async () => {
    const shop = newAccount();
    const customer = await opened('3');
    const request = await client.call('POST', '/payment/request', { receive_address: shop.address, amount: '0.5', redirect_url: 'https://shop.example/done' });
    const second = await client.call('POST', '/payment/request', { receive_address: shop.address, amount: '0.5' });
    expect(Object.keys(request.data).sort()).toEqual(['amount', 'receive_address', 'transaction_id']);
    expect(request.data.transaction_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    const exact = xnoToRaw(request.data.amount);
    const offset = exact - xnoToRaw('0.5');
    expect(offset >= 1n && offset <= 999_999n).toBe(true);
    expect(second.data.amount).not.toBe(request.data.amount);

    await client.send(customer, shop.address, xnoToRaw('0.5'));
    await client.send(customer, shop.address, exact + 1n);
    const unpaid = await client.call('GET', `/payment/status/${request.data.transaction_id}`);
    expect(unpaid.data).toMatchObject({ success: 'true', is_paid: 'false', amount: request.data.amount, transaction_id: request.data.transaction_id });

    expect(Object.keys(unpaid.data).sort()).toEqual(['amount', 'is_paid', 'message', 'receive_address', 'success', 'transaction_id']);
    expect(unpaid.data.receive_address).toBe(shop.address);

    const paying = await client.send(customer, shop.address, exact);
    const paid = await client.call('GET', `/payment/status/${request.data.transaction_id}`);
    expect(Object.keys(paid.data).sort()).toEqual(['amount', 'block_hash', 'is_paid', 'message', 'receive_address', 'success', 'transaction_id']);
    expect(paid.data).toMatchObject({ is_paid: 'true', success: 'true', transaction_id: request.data.transaction_id, block_hash: paying });
    expect(paid.data.message).toMatch(/has been paid/i);
    expect(paid.data.message).toMatch(/receive/i);
    expect((await client.call('GET', `/payment/status/${second.data.transaction_id}`)).data.is_paid).toBe('false');

    // The faucet is a send like any other.
    await client.fund(shop.address, second.data.amount);
    expect((await client.call('GET', `/payment/status/${second.data.transaction_id}`)).data.is_paid).toBe('true');
  });

  it('unknown or malformed transaction ids are INVALID_TRANSACTION_ID', async () => {
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const unknown = await client.call('GET', `/payment/status/${id}`);
      expect([unknown.status, unknown.error?.error]).toEqual([404, 'INVALID_TRANSACTION_ID']);
    }
  });

  it('bad request bodies', async () => {
    const shop = newAccount().address;
    expect((await client.call('POST', '/payment/request', { receive_address: 'nano_1', amount: '1' })).error?.error).toBe('INVALID_ADDRESS');
    expect((await client.call('POST', '/payment/request', { receive_address: shop, amount: 'abc' })).error?.error).toBe('INVALID_NUMBER_FORMAT');
    expect((await client.call('POST', '/payment/request', { receive_address: shop, amount: '0' })).error?.error).toBe('INVALID_NUMBER_FORMAT');
    expect((await client.call('POST', '/payment/request', { receive_address: shop, amount: 1 })).error?.error).toBe('INVALID_REQUEST');
  });
});

describe('credit top-ups', () => {
  it('an unknown tier or transaction id is refused', async () => {
    const tier = await client.call('GET', '/credits/topup/7');
    expect([tier.status, tier.error?.error]).toEqual([400, 'INVALID_CREDITS_AMOUNT']);
    const payer = await opened('1');
    const block = await client.complete(buildSendBlock(await client.head(payer), { to: newAccount().address, amount: 1n }), payer, 'send');
    const unknown = await client.call('POST', '/credits/topup', { subtype: 'send', block, transaction_id: '00000000-0000-4000-8000-000000000000' });
    expect([unknown.status, unknown.error?.error]).toEqual([404, 'INVALID_TRANSACTION_ID']);
    // Another key's offer is not ours to pay.
    const offer = await (await SandboxClient.withNewKey(sb.url)).call('GET', '/credits/topup/10');
    expect((await client.call('POST', '/credits/topup', { subtype: 'send', block, transaction_id: offer.data.transaction_id })).error?.error).toBe('INVALID_TRANSACTION_ID');
  });

  it('an exact payment publishes the block and adds the credits; a repeat adds nothing', async () => {
    const payer = await opened('1');
    const offer = await client.call('GET', '/credits/topup/100');
    expect(Object.keys(offer.data).sort()).toEqual(['nano_amount', 'payment_address', 'transaction_id']);
    expect(offer.data.nano_amount).toBe('0.01');
    const block = await client.complete(buildSendBlock(await client.head(payer), { to: offer.data.payment_address, amount: xnoToRaw(offer.data.nano_amount) }), payer, 'send');
    // Reading credits and topping up are free: the figures below move only by the top-up.
    const before = await credits(client);
    const done = await client.call('POST', '/credits/topup', { subtype: 'send', block, transaction_id: offer.data.transaction_id });
    expect(done.data).toEqual({ topped_up_credits: 100, new_credits_balance: before + 100 });
    const repeat = await client.call('POST', '/credits/topup', { subtype: 'send', block, transaction_id: offer.data.transaction_id });
    expect(repeat.data).toEqual(done.data);
    expect(await credits(client)).toBe(before + 100);
    expect((await client.call('GET', `/block/info/${hashBlock(block)}`)).data.subtype).toBe('send');
  });

  it('a payment of the wrong amount or to the wrong address is refused and not published', async () => {
    const payer = await opened('1');
    const offer = await client.call('GET', '/credits/topup/50');
    const price = xnoToRaw(offer.data.nano_amount);
    const head = await client.head(payer);
    const wrongAmount = await client.complete(buildSendBlock(head, { to: offer.data.payment_address, amount: price - 1n }), payer, 'send');
    const wrongPlace = await client.complete(buildSendBlock(head, { to: newAccount().address, amount: price }), payer, 'send');
    const before = await credits(client);
    for (const block of [wrongAmount, wrongPlace]) {
      const mismatch = await client.call('POST', '/credits/topup', { subtype: 'send', block, transaction_id: offer.data.transaction_id });
      expect([mismatch.status, mismatch.error?.error]).toEqual([400, 'PAYMENT_MISMATCH']);
    }
    expect(await credits(client)).toBe(before);
    for (const block of [wrongAmount, wrongPlace]) {
      expect((await client.call('GET', `/block/info/${hashBlock(block)}`)).error?.error).toBe('BLOCK_NOT_FOUND');
    }
    expect((await client.head(payer)).frontier).toBe(head.frontier);
  });

  it('is safe to retry when the payment landed but the answer was lost', async () => {
    const payer = await opened('1');
    const offer = await client.call('GET', '/credits/topup/500');
    const block = await client.complete(buildSendBlock(await client.head(payer), { to: offer.data.payment_address, amount: xnoToRaw(offer.data.nano_amount) }), payer, 'send');
    expect((await client.publish(block)).success).toBe(true);
    const before = await credits(client);
    const done = await client.call('POST', '/credits/topup', { subtype: 'send', block, transaction_id: offer.data.transaction_id });
    expect(done.data).toEqual({ topped_up_credits: 500, new_credits_balance: before + 500 });
    const repeat = await client.call('POST', '/credits/topup', { subtype: 'send', block, transaction_id: offer.data.transaction_id });
    expect(repeat.data).toEqual(done.data);
    expect(await credits(client)).toBe(before + 500);

    // That block cannot pay a second offer, and neither can another one that landed before the offer.
    const early = await client.complete(buildSendBlock(await client.head(payer), { to: offer.data.payment_address, amount: xnoToRaw(offer.data.nano_amount) }), payer, 'send');
    expect((await client.publish(early)).success).toBe(true);
    const next = await client.call('GET', '/credits/topup/500');
    const after = await credits(client);
    for (const old of [block, early]) {
      const reused = await client.call('POST', '/credits/topup', { subtype: 'send', block: old, transaction_id: next.data.transaction_id });
      expect(reused.error?.error).toBe('PAYMENT_MISMATCH');
    }
    expect(await credits(client)).toBe(after);
  });
});

describe('bad requests get a 4xx envelope', () => {
  it('malformed JSON, wrong types, a 1 MiB body, unknown routes and paths', async () => {
    const cases: [Promise<Awaited<ReturnType<SandboxClient['call']>>>, number, string][] = [
      [client.call('POST', '/account/info', '{"address": '), 400, 'INVALID_JSON'],
      [client.call('POST', '/account/info', '[1, 2]'), 400, 'INVALID_REQUEST'],
      [client.call('POST', '/account/info', { address: 42 }), 400, 'INVALID_REQUEST'],
      [client.call('POST', '/block/publish', { block: 42 }), 400, 'INVALID_REQUEST'],
      [client.call('POST', '/block/publish', { block: '{not json' }), 400, 'INVALID_JSON'],
      [client.call('POST', '/account/info', JSON.stringify({ address: 'x'.repeat(1024 * 1024) })), 413, 'PAYLOAD_TOO_LARGE'],
      [client.call('GET', '/nope'), 404, 'NOT_FOUND'],
      [client.call('DELETE', '/wallet/create'), 405, 'NOT_FOUND'],
      [client.call('GET', '/wallet/balance/%E0%A4%A'), 400, 'INVALID_REQUEST'],
      [client.call('GET', '/wallet/balance/nano_123'), 400, 'INVALID_ADDRESS'],
      [client.call('GET', '/block/info/XYZ'), 400, 'INVALID_HEX'],
    ];
    for (const [reply, status, code] of cases) {
      const r = await reply;
      expect([r.status, r.success, r.data, r.error?.error]).toEqual([status, false, null, code]);
    }
    // The server is still there after all of that.
    expect((await client.call('GET', '/credits/info')).status).toBe(200);
  });
});

describe('no request ends the sandbox', () => {
  it('odd targets, bad escapes, absurd methods, oversized and cut bodies all get an envelope; the sandbox keeps answering', async () => {
    await sendHostileRequests(sb.url, { getWithParam: '/payment/status/', get: '/credits', post: '/account/info', headersOnly: [401, 'MISSING_API_KEY'] });
    expect((await client.call('GET', '/credits/info')).status).toBe(200);
  });
});

describe('persistence', () => {
  it('keeps the ledger, keys, credits and requests across a restart', async () => {
    const dataDir = await tempDir('nanopay-sandbox-');
    const first = await startSandbox({ port: 0, dataDir });
    const c1 = await SandboxClient.withNewKey(first.url);
    const alice = newAccount();
    await c1.fund(alice.address, '2');
    await c1.receiveAll(alice);
    const request = await c1.call('POST', '/payment/request', { receive_address: alice.address, amount: '1' });
    const donate = (await c1.call('GET', '/donate/address')).data.address;
    const creditsBefore = await credits(c1);
    await first.close();

    const stored = JSON.parse(await readFile(join(dataDir, 'sandbox-state.json'), 'utf8')) as { ledger: { blocks: { balance: unknown }[] } };
    expect(typeof stored.ledger.blocks[0]?.balance).toBe('string');

    const second = await startSandbox({ port: 0, dataDir });
    try {
      const c2 = new SandboxClient(second.url, c1.apiKey);
      expect((await c2.call('GET', `/wallet/balance/${alice.address}`)).data).toMatchObject({ balance_raw: (2n * 10n ** 30n).toString(), pending_raw: '0' });
      expect(await credits(c2)).toBe(creditsBefore - CREDIT_COSTS.balance);
      expect((await c2.call('GET', `/payment/status/${request.data.transaction_id}`)).data.is_paid).toBe('false');
      expect((await c2.call('GET', '/donate/address')).data.address).toBe(donate);
      // The chain continues where it stopped.
      await c2.send(alice, newAccount().address, 1n);
      expect((await c2.call('GET', `/account/info/${alice.address}`)).data.block_count).toBe('2');
    } finally {
      await second.close();
    }
  });

  it('an explicit thresholds option wins over the stored one', async () => {
    const dataDir = await tempDir('nanopay-sandbox-');
    await (await startSandbox({ port: 0, dataDir })).close();
    const live = await startSandbox({ port: 0, dataDir, thresholds: 'live' });
    const c = await SandboxClient.withNewKey(live.url);
    expect((await c.call('GET', '/network/active-difficulty')).data).toMatchObject({ network_minimum: LIVE_THRESHOLDS.send, network_receive_minimum: LIVE_THRESHOLDS.receive });
    await live.close();
    // Without the option the stored choice stays.
    const again = await startSandbox({ port: 0, dataDir });
    const reply = await new SandboxClient(again.url, c.apiKey).call('GET', '/network/active-difficulty');
    await again.close();
    expect(reply.data.network_minimum).toBe(LIVE_THRESHOLDS.send);
  });

  it('a damaged state file is reported and left untouched', async () => {
    const dataDir = await tempDir('nanopay-sandbox-');
    const path = join(dataDir, 'sandbox-state.json');
    for (const damaged of ['{"version": 1, "ledger": ', '{"version": 2}']) {
      await writeFile(path, damaged);
      const failure = await startSandbox({ port: 0, dataDir }).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(NanoPayError);
      expect((failure as NanoPayError).code).toBe('STORE_CORRUPT');
      expect(await readFile(path, 'utf8')).toBe(damaged);
    }

    // A well-formed file whose chain does not add up is refused too.
    const healthyDir = await tempDir('nanopay-sandbox-');
    const healthy = await startSandbox({ port: 0, dataDir: healthyDir });
    await healthy.close();
    const state = JSON.parse(await readFile(join(healthyDir, 'sandbox-state.json'), 'utf8')) as { ledger: { blocks: { hash: string }[] } };
    (state.ledger.blocks[0] as { hash: string }).hash = 'AB'.repeat(32);
    await writeFile(path, JSON.stringify(state));
    await expect(startSandbox({ port: 0, dataDir })).rejects.toMatchObject({ code: 'STORE_CORRUPT' });
  });
});
