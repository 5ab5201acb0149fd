import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { BIN, commandSession, newUser, type CliUser } from '../../helpers/processes/cli.js';
import { startFaultyProxy } from '../../helpers/network/faulty-proxy.js';
import { fund, ledger, sandbox } from '../../helpers/ledger/sandbox.js';
import { startServe } from '../../helpers/processes/serve.js';

/**
 * Credits never lock a wallet out: a --remote wallet whose API key is at 0
 * credits tops up (the service wants credits to read the account; the top-up
 * builds on the block this profile recorded instead, and its own calls are
 * free), a send refused for credits leaves the account free for that top-up,
 * an interrupted top-up at 0 credits completes with its one block, and every
 * INSUFFICIENT_CREDITS (CLI, toolset, MCP) names the command that fixes it.
 */
let sb: RunningSandbox;
const stops: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  await sb?.close();
  await shutdownWorkers();
});

const TOP_UP = 'nanopay credits topup 1000';

interface Wallet {
  user: CliUser;
  address: string;
  apiKey: string;
}

/** A wallet made by `nanopay wallet create --remote`, funded by the faucet and received with `nanopay receive`. */
async function remoteWallet(amount = '1'): Promise<Wallet> {
  const user = await newUser(sb.url);
  const created = await user.json<{ address: string }>(['wallet', 'create', '--remote']);
  expect(created._code).toBe(0);
  await fund(sb.url, created.address, amount);
  expect((await user.run(['receive'])).code).toBe(0);
  return { user, address: created.address, apiKey: (await commandSession(user).apiKey()) as string };
}

const creditsOf = (wallet: Wallet): number => sb.service.snapshot().apiKeys[wallet.apiKey]?.credits as number;

async function sendsOf(address: string): Promise<string[]> {
  return (await ledger(sb.url)).blocks.filter((b) => b.account === address && b.subtype === 'send').map((b) => b.hash);
}

const journalOf = (user: CliUser): string[] => readdirSync(join(user.configDir, 'journal')).filter((name) => name.endsWith('.json'));

describe('a key at 0 credits', () => {
  it('nanopay credits topup buys credits: one send block to the service, credits above 0', async () => {
    const wallet = await remoteWallet();
    sb.service.setCredits(wallet.apiKey, 0);
    // Reading the credits is free, so it works at 0 too.
    expect(await wallet.user.json(['credits'])).toMatchObject({ _code: 0, credits: 0 });
    const sendsBefore = await sendsOf(wallet.address);

    const topped = await wallet.user.json<{ topped_up_credits: number; new_credits_balance: number; hash: string }>(['credits', 'topup', '10', '--yes']);
    expect(topped).toMatchObject({ _code: 0, topped_up_credits: 10, new_credits_balance: 10 });
    expect(creditsOf(wallet)).toBe(10);
    expect(await sendsOf(wallet.address)).toEqual([...sendsBefore, topped.hash]);
    // The account works as before: its next send reads the head from the service again.
    expect((await wallet.user.run(['send', wallet.address, '0.001', '--yes'])).code).toBe(0);
  });

  it('a send the service refuses for credits leaves nothing journaled, names the top-up, and the top-up then works', async () => {
    const wallet = await remoteWallet();
    // Enough to read the head (account info, block info), not to publish.
    sb.service.setCredits(wallet.apiKey, 2);
    const sendsBefore = await sendsOf(wallet.address);
    const refused = await wallet.user.run(['send', wallet.address, '0.1', '--yes', '--json']);
    expect(refused.code).toBe(4);
    const error = (JSON.parse(refused.stdout) as { error: { code: string; message: string; hint: string } }).error;
    expect(error).toMatchObject({ code: 'INSUFFICIENT_CREDITS', message: expect.stringContaining('was not published'), hint: expect.stringContaining(TOP_UP) });
    expect(journalOf(wallet.user)).toEqual([]);
    expect(creditsOf(wallet)).toBe(0);

    const topped = await wallet.user.json<{ hash: string; new_credits_balance: number }>(['credits', 'topup', '50', '--yes']);
    expect(topped).toMatchObject({ _code: 0, new_credits_balance: 50 });
    expect(await sendsOf(wallet.address)).toEqual([...sendsBefore, topped.hash]);
  });

  it('a top-up whose submit never reached the service completes on the next run, with its one block', async () => {
    const wallet = await remoteWallet();
    sb.service.setCredits(wallet.apiKey, 0);
    const sendsBefore = await sendsOf(wallet.address);
    const proxy = await startFaultyProxy(sb.url, (method, path) => (method === 'POST' && path === '/credits/topup' ? 'drop' : 'pass'));
    const interrupted = await wallet.user.run(['credits', 'topup', '10', '--yes', '--json'], { env: { NANOPAY_API_URL: proxy.url } });
    await proxy.close();
    expect(interrupted.code).toBe(5);
    expect(journalOf(wallet.user)).toHaveLength(1);
    expect(creditsOf(wallet)).toBe(0);

    const rerun = await wallet.user.json<{ hash: string; resumed: boolean; new_credits_balance: number }>(['credits', 'topup', '10', '--yes']);
    expect(rerun).toMatchObject({ _code: 0, resumed: true, new_credits_balance: 10 });
    expect(await sendsOf(wallet.address)).toEqual([...sendsBefore, rerun.hash]);
    expect(journalOf(wallet.user)).toEqual([]);
  });

  it('an account moved elsewhere since the block recorded here: the ledger refuses the top-up as a fork, nothing is paid, and it says why', async () => {
    const wallet = await remoteWallet();
    // The same wallet and key on another machine, which sends from the account: this profile never sees that block.
    const { secret } = await wallet.user.json<{ secret: string }>(['wallet', 'export', '--yes']);
    const elsewhere = await newUser(sb.url, { NANOPAY_API_KEY: wallet.apiKey });
    expect((await elsewhere.run(['wallet', 'import', '--seed-stdin'], { input: secret })).code).toBe(0);
    expect((await elsewhere.run(['send', wallet.address, '0.01', '--yes'])).code).toBe(0);
    sb.service.setCredits(wallet.apiKey, 0);
    const sendsBefore = await sendsOf(wallet.address);

    const refused = await wallet.user.run(['credits', 'topup', '10', '--yes', '--json']);
    expect(refused.code).toBe(10);
    const error = (JSON.parse(refused.stdout) as { error: { code: string; message: string; hint: string } }).error;
    expect(error).toMatchObject({ code: 'BLOCK_FORK', message: expect.stringContaining('the account has moved since'), hint: expect.stringContaining('--wallet') });
    expect(await sendsOf(wallet.address)).toEqual(sendsBefore);
    expect(creditsOf(wallet)).toBe(0);
    expect(journalOf(wallet.user)).toEqual([]);
  });

  it('a profile with no block of the account recorded cannot top up from it, and says what to do', async () => {
    const user = await newUser(sb.url);
    const created = await user.json<{ address: string }>(['wallet', 'create', '--remote']);
    const apiKey = (await commandSession(user).apiKey()) as string;
    sb.service.setCredits(apiKey, 0);
    const refused = await user.run(['credits', 'topup', '10', '--yes', '--json']);
    expect(refused.code).toBe(4);
    const error = (JSON.parse(refused.stdout) as { error: { code: string; message: string; hint: string } }).error;
    expect(error).toMatchObject({ code: 'INSUFFICIENT_CREDITS', message: expect.stringContaining(`no block of ${created.address} recorded`), hint: expect.stringContaining('--wallet') });
  });
});

describe('INSUFFICIENT_CREDITS names the command that fixes it', () => {
  let wallet: Wallet;

  beforeAll(async () => {
    wallet = await remoteWallet();
    sb.service.setCredits(wallet.apiKey, 0);
  });

  it('the CLI: on stderr, and in --json', async () => {
    const plain = await wallet.user.run(['balance']);
    expect(plain.code).toBe(4);
    expect(plain.stderr).toContain('INSUFFICIENT_CREDITS');
    expect(plain.stderr).toContain(`Hint: Buy credits with: ${TOP_UP}`);
    const json = await wallet.user.run(['status', '00000000-0000-4000-8000-000000000000', '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ error: { code: 'INSUFFICIENT_CREDITS', hint: expect.stringContaining(TOP_UP) } });
  });

  it('the HTTP toolset: in the envelope', async () => {
    const serve = await startServe(wallet.user);
    stops.push(() => serve.stop());
    const answer = await fetch(`${serve.url}/wallet/balance`);
    expect(answer.status).toBe(402);
    expect(((await answer.json()) as { error: unknown }).error).toMatchObject({ error: 'INSUFFICIENT_CREDITS', hint: expect.stringContaining(TOP_UP) });
  });

  it('MCP: in the tool error, which names the credits_topup tool too', async () => {
    const client = new Client({ name: 'nanopay-credits-test', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'], env: wallet.user.env as Record<string, string>, stderr: 'pipe' }));
    stops.push(() => client.close());
    const result = await client.callTool({ name: 'payment_request', arguments: { receive_address: wallet.address, amount: '0.1' } });
    expect(result.isError).toBe(true);
    const envelope = JSON.parse((result.content as { text: string }[])[0]?.text ?? 'null') as { error: { error: string; hint: string } };
    expect(envelope.error).toMatchObject({ error: 'INSUFFICIENT_CREDITS', hint: expect.stringContaining(TOP_UP) });
    expect(envelope.error.hint).toContain('credits_topup');
  });
});
