import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { BIN, userWithWallet, type CliUser } from '../../helpers/processes/cli.js';
import { ledger, sandbox } from '../../helpers/ledger/sandbox.js';
import { startServe, type ServeProcess } from '../../helpers/processes/serve.js';

/**
 * An agent's client that retries (it timed out, its answer was lost) never
 * pays twice: every spending tool and route takes an idempotency key (`id`,
 * or the Idempotency-Key header over HTTP), and a retry with it returns the
 * first result. Against the built CLI's `mcp` (the official MCP client) and
 * `serve`, on the sandbox.
 */
let sb: RunningSandbox;
let user: CliUser;
let address: string;
let serve: ServeProcess;
let mcp: Client;
const OTHER = 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj';

type Envelope = { success: boolean; data: Record<string, any> | null; error: { error: string; message: string } | null };

/** Blocks of the wallet's account on the ledger: what was paid. */
const blocksOf = async (): Promise<number> => (await ledger(sb.url)).blocks.filter((b) => b.account === address).length;

async function tool(name: string, args: Record<string, unknown>, timeout?: number): Promise<Envelope> {
  const result = await mcp.callTool({ name, arguments: args }, undefined, timeout === undefined ? {} : { timeout });
  return JSON.parse((result.content as { text: string }[])[0]?.text ?? 'null') as Envelope;
}

async function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: Envelope }> {
  const response = await fetch(new URL(path, serve.url), { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as Envelope };
}

beforeAll(async () => {
  sb = await sandbox();
  ({ user, address } = await userWithWallet(sb.url, '5'));
  serve = await startServe(user);
  mcp = new Client({ name: 'nanopay-retries-test', version: '1.0.0' });
  await mcp.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'], env: user.env as Record<string, string>, stderr: 'pipe' }));
});

afterAll(async () => {
  await mcp?.close();
  await serve?.stop();
  await sb?.close();
});

describe('a retried spend', () => {
  it('over MCP: a client that gave up waiting retries wallet_send with its id, and gets the first send back; nothing is paid twice', async () => {
    const before = await blocksOf();
    // The client's own timeout fires long before the send is done; the server carries it out anyway.
    await expect(tool('wallet_send', { recipient_address: OTHER, amount: '0.1', id: 'mcp-retry-1' }, 1)).rejects.toThrow(/timed out/i);
    const retried = await tool('wallet_send', { recipient_address: OTHER, amount: '0.1', id: 'mcp-retry-1' });
    expect(retried).toMatchObject({ success: true, data: { amount: '0.1', hash: expect.stringMatching(/^[0-9A-F]{64}$/) } });
    const again = await tool('wallet_send', { recipient_address: OTHER, amount: '0.1', id: 'mcp-retry-1' });
    expect(again.data).toMatchObject({ hash: retried.data?.hash, repeated: true });
    expect(await blocksOf()).toBe(before + 1);
    // The same key for another payment is refused, naming what differs.
    expect((await tool('wallet_send', { recipient_address: OTHER, amount: '0.2', id: 'mcp-retry-1' })).error).toMatchObject({ error: 'IDEMPOTENCY_MISMATCH' });
    const schema = (await mcp.listTools()).tools.find((t) => t.name === 'wallet_send')?.inputSchema as { properties: Record<string, { description: string }> };
    expect(schema.properties.id?.description).toMatch(/retry/);
  });

  it('over HTTP: the Idempotency-Key header (or "id") makes a POST of a spending route safe to send again', async () => {
    const before = await blocksOf();
    const first = await post('/wallet/send', { recipient_address: OTHER, amount: '0.05' }, { 'idempotency-key': 'http-retry-1' });
    expect(first).toMatchObject({ status: 200, body: { data: { repeated: false } } });
    const second = await post('/wallet/send', { recipient_address: OTHER, amount: '0.05' }, { 'idempotency-key': 'http-retry-1' });
    expect(second).toMatchObject({ status: 200, body: { data: { hash: first.body.data?.hash, repeated: true } } });
    expect((await post('/wallet/send', { recipient_address: OTHER, amount: '0.05', id: 'http-retry-1' })).body.data).toMatchObject({ hash: first.body.data?.hash, repeated: true });
    expect(await post('/wallet/send', { recipient_address: OTHER, amount: '0.05', id: 'another key' }, { 'idempotency-key': 'http-retry-1' })).toMatchObject({ status: 400, body: { error: { error: 'INVALID_REQUEST' } } });
    // A donation: the key in the body of a route whose amount is in its path, and in the header.
    const donated = await post('/donate/0.01', { id: 'http-donation-1' });
    expect(donated).toMatchObject({ status: 200, body: { data: { repeated: false } } });
    expect((await post('/donate/0.01', {}, { 'idempotency-key': 'http-donation-1' })).body.data).toMatchObject({ hash: donated.body.data?.hash, repeated: true });
    expect(await blocksOf()).toBe(before + 2);
  });

  it('a top-up bought under a key is bought once: the retry answers its credits, and another tier under the key is refused', async () => {
    const credits = async (): Promise<number> => (await tool('credits_get', {})).data?.credits as number;
    const before = await blocksOf();
    const bought = await tool('credits_topup', { credits_amount: '10', id: 'topup-retry-1' });
    expect(bought).toMatchObject({ success: true, data: { topped_up_credits: 10, repeated: false } });
    const balance = await credits();
    const retried = await tool('credits_topup', { credits_amount: '10', id: 'topup-retry-1' });
    expect(retried.data).toMatchObject({ topped_up_credits: 10, new_credits_balance: bought.data?.new_credits_balance, hash: bought.data?.hash, repeated: true });
    expect(await credits()).toBeLessThanOrEqual(balance);
    expect((await tool('credits_topup', { credits_amount: '50', id: 'topup-retry-1' })).error).toMatchObject({ error: 'IDEMPOTENCY_MISMATCH' });
    expect((await post('/credits/topup/10', {}, { 'idempotency-key': 'topup-retry-1' })).body.data).toMatchObject({ repeated: true, hash: bought.data?.hash });
    expect(await blocksOf()).toBe(before + 1);
  });
});
