import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NanoPayError } from '../../../src/errors.js';
import { RAW_PER_XNO, ZERO_HASH, addressToPublicKey, deriveAccount, generateSeed, hashBlock, rawToXno, signBlock, type AccountState, type StateBlock } from '../../../src/nano/index.js';
import { readAccountHead } from '../../../src/ops/ledger/chain.js';
import { balance } from '../../../src/ops/account/balance.js';
import { setSetting, unsetSetting } from '../../../src/ops/profile/config.js';
import { countedSpends } from '../../../src/ops/spending/spend-log.js';
import type { OpsContext } from '../../../src/ops/context.js';
import { move } from '../../../src/ops/spending/movement.js';
import { parseTier } from '../../../src/api/contract.js';
import { topup } from '../../../src/ops/spending/credits.js';
import { paymentStatus, requestPayment } from '../../../src/ops/requests/payments.js';
import { accountInfo, pending } from '../../../src/ops/account/reads.js';
import { receive } from '../../../src/ops/account/receive.js';
import { send } from '../../../src/ops/spending/send.js';
import { Session } from '../../../src/ops/session.js';
import { createRemoteWallet } from '../../../src/ops/profile/wallet.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { startFaultyProxy, type Fault, type FaultyProxy } from '../../helpers/network/faulty-proxy.js';
import { fund, sandbox } from '../../helpers/ledger/sandbox.js';
import { failure } from '../../helpers/processes/failure.js';
import { tempDir } from '../../helpers/processes/temp.js';

/**
 * The operations in-process against the real sandbox behind a proxy that can
 * lie: whatever the service claims, nanopay signs only what the user asked for,
 * on top of blocks it verified itself.
 */
let sb: RunningSandbox;
let proxy: FaultyProxy;
let lie: (method: string, path: string) => Fault = () => 'pass';
let configDir: string;
let session: Session;
let address: string;
let apiKey: string;
const payee = deriveAccount({ seed: generateSeed(), index: 0 }).address;
const XNO = RAW_PER_XNO;

const blocksInLedger = (): number => sb.service.ledger.order.length;
const journalEntry = () => session.journal.read(address);

/** Asserts a lie was caught before anything was signed: a coded error, no journal entry, the ledger unchanged. */
async function refusedUnsigned(operation: Promise<unknown>, code = 'SERVICE_INCONSISTENT'): Promise<NanoPayError> {
  const before = blocksInLedger();
  const error = await failure(operation);
  expect(error.code).toBe(code);
  expect(await journalEntry()).toBeUndefined();
  expect(blocksInLedger()).toBe(before);
  return error;
}

beforeAll(async () => {
  sb = await sandbox();
  proxy = await startFaultyProxy(sb.url, (method, path) => lie(method, path));
  configDir = await tempDir('nanopay-lies-');
  session = new Session({ password: async () => 'lies test password', configDir, env: { NANOPAY_API_URL: proxy.url } });
  address = (await createRemoteWallet(session)).address;
  apiKey = (await session.apiKey()) as string;
  await fund(sb.url, address, '20');
  await receive(session);
});

afterEach(() => {
  lie = () => 'pass';
});

afterAll(async () => {
  await proxy?.close();
  await sb?.close();
  await shutdownWorkers();
});

const accountInfoLie = (rewrite: (data: Record<string, any>) => Record<string, any>) => (method: string, path: string): Fault =>
  method === 'POST' && path === '/account/info' ? { rewrite } : 'pass';

describe('the frontier is checked before anything is built on it', () => {
  it('a balance reported 5 XNO low, with the right frontier: nothing is signed (before: a 6 XNO send past the limit)', async () => {
    await setSetting(session, 'limit-per-send', '2');
    lie = accountInfoLie((d) => ({ ...d, balance: (BigInt(d.balance) - 5n * XNO).toString() }));
    const error = await refusedUnsigned(send(session, { to: payee, amount: { raw: XNO } }));
    expect(error.message).toMatch(/balance of .* XNO .*frontier block holds .* XNO/);
    expect(error.exitCode).toBe(5);
    await unsetSetting(session, 'limit-per-send');
  });

  it('a balance reported higher: nothing is signed', async () => {
    lie = accountInfoLie((d) => ({ ...d, balance: (BigInt(d.balance) + 100n * XNO).toString() }));
    await refusedUnsigned(send(session, { to: payee, amount: { raw: XNO } }));
  });

  it('a random frontier: nothing is signed', async () => {
    lie = accountInfoLie((d) => ({ ...d, frontier: 'AB'.repeat(32) }));
    await refusedUnsigned(send(session, { to: payee, amount: { raw: XNO } }));
  });

  it("another account's frontier and balance: nothing is signed", async () => {
    const genesis = sb.service.ledger.order[0] as string;
    const other = sb.service.ledger.blocks.get(genesis);
    lie = accountInfoLie((d) => ({ ...d, frontier: genesis, balance: other?.balance.toString() }));
    await refusedUnsigned(send(session, { to: payee, amount: { raw: XNO } }));
  });

  it('an old frontier of the account (it has a successor): nothing is signed', async () => {
    const first = await send(session, { to: payee, amount: { raw: XNO / 100n } });
    const old = sb.service.ledger.blocks.get(sb.service.ledger.blocks.get(first.hash as string)?.block.previous as string);
    lie = accountInfoLie((d) => ({ ...d, frontier: old?.hash, balance: old?.balance.toString() }));
    await refusedUnsigned(send(session, { to: payee, amount: { raw: XNO / 100n } }));
  });

  it('a block landing between account info and the frontier read (another process of the wallet): the head is read again and the send goes through', async () => {
    const first = await send(session, { to: payee, amount: { raw: XNO / 100n } });
    const old = sb.service.ledger.blocks.get(sb.service.ledger.blocks.get(first.hash as string)?.block.previous as string);
    // Only the first account info is stale, as when it was read just before the other process published.
    let stale = 1;
    lie = (method, path) => (method === 'POST' && path === '/account/info' && stale-- > 0 ? { rewrite: (d) => ({ ...d, frontier: old?.hash, balance: old?.balance.toString() }) } : 'pass');
    const sent = await send(session, { to: payee, amount: { raw: XNO / 100n } });
    expect(stale).toBeLessThan(0);
    expect(sb.service.ledger.blocks.get(sent.hash as string)?.block.previous).toBe(first.hash);
  });

  it('a pending block whose contents were altered is not received: it is reported, and nothing is signed', async () => {
    const hash = await fund(sb.url, address, '1');
    lie = (method, path) => (method === 'POST' && path === '/block/info' ? { rewrite: (d) => ({ ...d, contents: { ...d.contents, balance: '1' } }) } : 'pass');
    const before = blocksInLedger();
    const result = await receive(session);
    expect(result.received).toEqual([]);
    expect(result.not_received).toEqual([{ account: address, hash, code: 'SERVICE_INCONSISTENT', message: expect.stringMatching(/hash to/) }]);
    expect(await journalEntry()).toBeUndefined();
    expect(blocksInLedger()).toBe(before);
    lie = () => 'pass';
    expect((await receive(session)).total).toBe('1');
  });

  it('without lies the same send goes through, with XNO and raw in money messages', async () => {
    const sent = await send(session, { to: payee, amount: { raw: XNO } });
    expect(sent.hash).toMatch(/^[0-9A-F]{64}$/);
    const error = await failure(send(session, { to: payee, amount: { raw: 1000n * XNO } }));
    expect(error.code).toBe('INSUFFICIENT_FUNDS');
    expect(error.message).toMatch(/the send needs 1000 XNO \(1000000000000000000000000000000000 raw\)/);
  });
});

describe('a new payment request is the one asked for', () => {
  const requestLie = (rewrite: (data: Record<string, any>) => Record<string, any>) => (method: string, path: string): Fault =>
    method === 'POST' && path === '/payment/request' ? { rewrite } : 'pass';
  const asked = XNO / 10n;

  it.each([
    ['another address', (d: Record<string, any>) => ({ ...d, receive_address: payee }), /asked for nano_\w+ was made for nano_/],
    ['an amount 1 XNO higher', (d: Record<string, any>) => ({ ...d, amount: rawToXno(asked + XNO) }), /asked for 0.1 XNO .* was made for 1.1 XNO/],
    ['an amount 1 raw lower than asked', () => ({ amount: rawToXno(asked - 1n) }), /made for 0.0999/],
    ['an adjustment 1 raw over the bound', () => ({ amount: rawToXno(asked + 10n ** 24n + 1n) }), /at most 0.000001 XNO/],
    ['no address at all', (d: Record<string, any>) => ({ ...d, receive_address: 'somewhere' }), /names "somewhere"/],
  ])('%s: SERVICE_INCONSISTENT (exit 5), and nothing is returned to show', async (_what, rewrite, message) => {
    lie = requestLie((d) => ({ ...d, ...rewrite(d) }));
    const error = await failure(requestPayment(session, { amount: { raw: asked } }));
    expect(error).toMatchObject({ code: 'SERVICE_INCONSISTENT', exitCode: 5 });
    expect(error.message).toMatch(message);
    expect(error.message).toMatch(/Nothing was shown/);
  });

  it('an adjustment within the bound, and the address asked for with --to, are accepted as the service made them', async () => {
    lie = requestLie((d) => ({ ...d, amount: rawToXno(asked + 10n ** 24n) }));
    const made = await requestPayment(session, { amount: { raw: asked }, to: payee });
    expect(made).toMatchObject({ receive_address: payee, amount_raw: (asked + 10n ** 24n).toString() });
  });
});

describe('epoch blocks', () => {
  const EPOCH_V2 = '65706F636820763220626C6F636B000000000000000000000000000000000000';
  const network = deriveAccount({ seed: generateSeed(), index: 0 });

  /** A service whose account head is an epoch block on top of our real frontier, signed by the network. */
  async function epochHead(change: (head: AccountState) => Partial<StateBlock>): Promise<string> {
    lie = () => 'pass';
    const head = (await readAccountHead(await session.context(), address)).state;
    const unsigned: StateBlock = { type: 'state', account: address, previous: head.frontier as string, representative: head.representative, balance: head.balance.toString(), link: EPOCH_V2, ...change(head) };
    const block: StateBlock = { ...unsigned, signature: signBlock(unsigned, network.privateKey), work: '0'.repeat(16) };
    const hash = hashBlock(block);
    lie = (method, path) => {
      if (method === 'POST' && path === '/account/info') return { rewrite: (d) => ({ ...d, frontier: hash, balance: block.balance }) };
      if (method === 'POST' && path === '/block/info') {
        return { answer: (body) => (body.hash === hash ? { block_account: address, amount: '0', balance: block.balance, height: '9', confirmed: 'true', subtype: 'epoch', successor: ZERO_HASH, contents: block } : undefined) };
      }
      return 'pass';
    };
    return hash;
  }

  it('an epoch block that keeps the balance and representative is a valid head, though not signed by the owner', async () => {
    const hash = await epochHead(() => ({}));
    expect((await readAccountHead(await session.context(), address)).state.frontier).toBe(hash);
  });

  it('an epoch block that moves the balance or the representative is refused', async () => {
    await epochHead((head) => ({ balance: (head.balance + XNO).toString() }));
    await refusedUnsigned(send(session, { to: payee, amount: { raw: XNO } }));
    await epochHead(() => ({ representative: payee }));
    await refusedUnsigned(send(session, { to: payee, amount: { raw: XNO } }));
  });
});

describe('top-up', () => {
  it('an offer above the listed price is refused before anything is signed', async () => {
    lie = (method, path) => (method === 'GET' && path === '/credits/topup/10' ? { rewrite: (d) => ({ ...d, nano_amount: '5' }) } : 'pass');
    const error = await refusedUnsigned(topup(session, { tier: 10 }));
    expect(error.message).toMatch(/lists 10 credits at 0.001 XNO .* but asks 5 XNO/);
  });

  it('a final refusal settles the entry: the account stays usable, the message is clear', async () => {
    // The service lies consistently (listed price and offer), then refuses the block it asked for.
    lie = (method, path) => {
      if (method === 'GET' && path === '/credits/info') return { rewrite: (d) => ({ ...d, current_credits_price_10: '0.5' }) };
      if (method === 'GET' && path === '/credits/topup/10') return { rewrite: (d) => ({ ...d, nano_amount: '0.5' }) };
      return 'pass';
    };
    const before = blocksInLedger();
    const error = await failure(topup(session, { tier: 10 }));
    expect(error.code).toBe('PAYMENT_MISMATCH');
    expect(await journalEntry()).toBeUndefined();
    expect(blocksInLedger()).toBe(before);
    lie = () => 'pass';
    expect((await send(session, { to: payee, amount: { raw: XNO / 1000n } })).hash).toMatch(/^[0-9A-F]{64}$/);
  });

  it('a top-up that completed but was not reported is completed by the rerun, never bought twice', async () => {
    const service = addressToPublicKey(sb.service.dump().service as string);
    const payments = (): number => [...sb.service.ledger.blocks.values()].filter((b) => b.account === address && b.subtype === 'send' && b.block.link === service).length;
    const paid = payments();
    const died = await topup(session, {
      tier: 10,
      report: () => {
        throw new Error('the process died before the user saw the result');
      },
    }).catch((e: unknown) => e);
    expect(died).toBeInstanceOf(Error);
    expect(payments()).toBe(paid + 1);
    const kept = (await journalEntry())?.topupResult;
    expect(kept?.toppedUp).toBe(10);
    const rerun = await topup(session, { tier: 10 });
    expect(rerun).toMatchObject({ resumed: true, topped_up_credits: 10, new_credits_balance: kept?.newBalance });
    expect(payments()).toBe(paid + 1);
    expect(await journalEntry()).toBeUndefined();
    // Once reported, the next run buys again.
    expect(await topup(session, { tier: 10 })).toMatchObject({ resumed: false });
    expect(payments()).toBe(paid + 2);
  });

  it('tiers are exact', () => {
    for (const tier of ['010', '1e1', '10.0', ' 10', '+10', '7']) expect(() => parseTier(tier)).toThrow(expect.objectContaining({ code: 'INVALID_CREDITS_AMOUNT' }));
    expect(parseTier('10')).toBe(10);
  });
});

/** What the profile spent in the last 24 hours, every account, landed or in flight: what the day budget counts. */
const spentToday = async (ctx: OpsContext): Promise<bigint> => (await countedSpends(ctx, ctx.now() - 24 * 60 * 60_000)).reduce((sum, s) => sum + s.amountRaw, 0n);

/** The context with a store whose recording of a landed spend fails: the process dying right after the block landed. */
function crashingRecords(ctx: OpsContext): OpsContext {
  return {
    ...ctx,
    store: async () => {
      const store = await ctx.store();
      const audit = Object.assign(Object.create(store.audit) as typeof store.audit, { setStatus: () => Promise.reject(new Error('killed before the spend was recorded')) });
      return Object.assign(Object.create(store) as typeof store, { audit });
    },
  };
}

describe('idempotent sends', () => {
  it('the same key with the same parameters returns the first result; with others it is IDEMPOTENCY_MISMATCH naming what differs', async () => {
    const first = await send(session, { to: payee, amount: { raw: XNO / 100n }, id: 'order-1' });
    const again = await send(session, { to: payee, amount: { raw: XNO / 100n }, id: 'order-1' });
    expect(again).toMatchObject({ repeated: true, hash: first.hash });
    const before = blocksInLedger();
    const error = await failure(send(session, { to: payee, amount: { raw: XNO / 50n }, id: 'order-1' }));
    expect(error).toMatchObject({ code: 'IDEMPOTENCY_MISMATCH', exitCode: 10 });
    expect(error.message).toMatch(/amount \(first 0.01 XNO, now 0.02 XNO\)/);
    const other = await failure(send(session, { to: address, amount: { raw: XNO / 100n }, id: 'order-1' }));
    expect(other.message).toMatch(/recipient/);
    expect(blocksInLedger()).toBe(before);
  });

  it('a crash after the block landed, before its records: the rerun repeats, and the daily limit counts it once', async () => {
    // Room for one more 0.001 XNO send today, not two.
    const spent = await spentToday(await session.context());
    await setSetting(session, 'limit-per-day', rawToXno(spent + (15n * XNO) / 10_000n));
    const ctx = await session.context();
    const before = blocksInLedger();
    const crashed = await move(crashingRecords(ctx), { signer: await session.account(), to: payee, amountRaw: XNO / 1000n, id: 'crash-1' }).catch((e: unknown) => e);
    expect(crashed).toMatchObject({ message: 'killed before the spend was recorded' });
    expect(blocksInLedger()).toBe(before + 1);
    expect((await journalEntry())?.sendId).toBe('crash-1');

    const rerun = await send(session, { to: payee, amount: { raw: XNO / 1000n }, id: 'crash-1' });
    expect(rerun.repeated).toBe(true);
    expect(blocksInLedger()).toBe(before + 1);
    expect(await spentToday(await session.context())).toBe(spent + XNO / 1000n);
    const over = await failure(send(session, { to: payee, amount: { raw: XNO / 1000n }, id: 'crash-2' }));
    expect(over.code).toBe('POLICY_DENIED');
    await setSetting(session, 'limit-per-day', '1000');
  });
});

describe('a rerun under the key of a block still in the journal', () => {
  it('is that payment: the block is settled first, so a rerun is its repeat, not refused for the funds the block already spent', async () => {
    const other = await tempDir('nanopay-lies-');
    const poor = new Session({ password: async () => 'lies test password', configDir: other, env: { NANOPAY_API_URL: proxy.url } });
    const from = (await createRemoteWallet(poor)).address;
    await fund(sb.url, from, '1');
    await receive(poor);
    const ctx = await poor.context();
    const amountRaw = (XNO * 7n) / 10n;
    await move(crashingRecords(ctx), { signer: await poor.account(), to: payee, amountRaw, id: 'most-of-it' }).catch(() => undefined);
    expect((await poor.journal.read(from))?.sendId).toBe('most-of-it');
    const rerun = await send(poor, { to: payee, amount: { raw: amountRaw }, id: 'most-of-it' });
    expect(rerun).toMatchObject({ repeated: true, balance_after_raw: (XNO - amountRaw).toString() });
    expect(await poor.journal.read(from)).toBeUndefined();
  });
});

describe('reads need no password when the API key is given', () => {
  it('balance, pending, account info, status, credits and request --to run without unlocking', async () => {
    const locked = new Session({
      password: () => Promise.reject(new NanoPayError('PASSWORD_REQUIRED', 'no password in this test')),
      configDir,
      env: { NANOPAY_API_URL: sb.url, NANOPAY_API_KEY: apiKey },
    });
    expect((await balance(locked)).account).toBe(address);
    expect((await pending(locked)).account).toBe(address);
    expect((await accountInfo(locked)).opened).toBe(true);
    const request = await requestPayment(locked, { amount: { xno: '0.1' }, to: address });
    expect((await paymentStatus(locked, request.transaction_id)).is_paid).toBe(false);
    await expect(send(locked, { to: payee, amount: { raw: 1n } })).rejects.toMatchObject({ code: 'PASSWORD_REQUIRED' });
  });

  it('balance of another address with --receive is refused rather than reporting the active account', async () => {
    await expect(balance(session, { address: payee, receive: true })).rejects.toMatchObject({ code: 'USAGE' });
  });
});

describe('messages', () => {
  it('credentials written into the API URL never appear in an error', async () => {
    const leaky = new Session({ password: async () => 'x', configDir, env: { NANOPAY_API_URL: 'http://user:hunter2secret@127.0.0.1:9', NANOPAY_API_KEY: 'k', NANOPAY_TIMEOUT_MS: '2000' } });
    const error = await failure(balance(leaky, { address: payee }));
    expect(error.code).toBe('REQUEST_ERROR');
    expect(`${error.message} ${error.hint ?? ''}`).not.toContain('hunter2secret');
    expect(error.message).toContain('***@127.0.0.1:9');
  });
});

describe('upstream faults', () => {
  const cases: [Fault, string][] = [
    ['500', 'REQUEST_ERROR'],
    ['hang', 'REQUEST_ERROR'],
    ['drop', 'REQUEST_ERROR'],
    ['bad-json', 'PARSE_ERROR'],
    ['wrong-shape', 'INVALID_DATA'],
  ];
  /** The same profile with a short timeout, so a hanging service fails fast (unlocked once). */
  let shortTimeout: Session | undefined;
  const impatient = (): Session =>
    (shortTimeout ??= new Session({ password: async () => 'lies test password', configDir, env: { NANOPAY_API_URL: proxy.url, NANOPAY_TIMEOUT_MS: '300' } }));

  it.each(cases)('%s on account info gives %s (exit 5) and signs nothing', async (fault, code) => {
    lie = (_method, path) => (path === '/account/info' ? fault : 'pass');
    const error = await refusedUnsigned(send(impatient(), { to: payee, amount: { raw: XNO / 100n } }), code);
    expect(error.exitCode).toBe(5);
  });

  it.each(cases)('%s on publish gives an upstream error; the next command lands the very same block once', async (fault) => {
    const before = blocksInLedger();
    lie = (method, path) => (method === 'POST' && path === '/block/publish' ? fault : 'pass');
    const error = await failure(send(impatient(), { to: payee, amount: { raw: XNO / 100n } }));
    expect(error.exitCode).toBe(5);
    const entry = await journalEntry();
    expect(entry).toBeDefined();
    expect(blocksInLedger()).toBe(before);
    lie = () => 'pass';
    await receive(session);
    expect(await journalEntry()).toBeUndefined();
    expect([...sb.service.ledger.blocks.keys()].filter((hash) => hash === entry?.hash)).toHaveLength(1);
    expect(blocksInLedger()).toBe(before + 1);
  });
});
