import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { chat, startAgentProcess } from '../../helpers/network/agent.js';
import { BIN, userWithWallet, type CliUser } from '../../helpers/processes/cli.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { startServe } from '../../helpers/processes/serve.js';

/**
 * An agent can read its budget: what each rule that judges its spends leaves,
 * when room comes back, what waits for a person, and its history, over MCP
 * (through an unlocked session scoped for it), the HTTP toolset and the
 * agent's chat, in ordinary words.
 */
let sb: RunningSandbox;
let user: CliUser;
const stops: (() => Promise<unknown>)[] = [];
const OTHER = 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj';
const AGENT = { NANOPAY_PASSWORD: '' };

type Envelope = { success: boolean; data: Record<string, any> | null; error: { error: string } | null };

beforeAll(async () => {
  sb = await sandbox();
  ({ user } = await userWithWallet(sb.url, '5'));
  for (const rule of [['day', '1'], ['per-send', '0.5', '--front-end', 'mcp'], ['ask-above', '0.3'], ['deny', '--recipient', 'nano_1111111111111111111111111111111111111111111111111111hifc8npp']]) {
    expect((await user.run(['policy', 'set', ...rule])).code).toBe(0);
  }
  expect((await user.run(['unlock', '--for', '5m', '--scope', 'mcp'])).code).toBe(0);
  stops.push(() => user.run(['lock']));
});

afterAll(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  await sb?.close();
});

describe('what an agent may still spend', () => {
  it('over MCP, judged as the session grants: each rule with what it leaves and when room comes back, what waits, the history', async () => {
    const client = new Client({ name: 'nanopay-status-test', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'], env: { ...user.env, ...AGENT } as Record<string, string>, stderr: 'pipe' }));
    stops.push(() => client.close());
    const call = async (name: string, args: Record<string, unknown> = {}): Promise<Envelope> =>
      JSON.parse(((await client.callTool({ name, arguments: args })).content as { text: string }[])[0]?.text ?? 'null') as Envelope;
    const tools = (await client.listTools()).tools;
    expect(tools.find((t) => t.name === 'spending_status')?.annotations).toMatchObject({ readOnlyHint: true });
    expect(tools.find((t) => t.name === 'wallet_history')?.annotations).toMatchObject({ readOnlyHint: true });

    expect(await call('wallet_send', { recipient_address: OTHER, amount: '0.2' })).toMatchObject({ success: true });
    expect(await call('wallet_send', { recipient_address: OTHER, amount: '0.4' })).toMatchObject({ success: false, error: { error: 'APPROVAL_REQUIRED' } });
    const status = await call('spending_status');
    expect(status).toMatchObject({ success: true, data: { judged_as: 'mcp', sealed: true, spent: { last_24_hours: '0.2' } } });
    const rules = status.data?.rules as { rule: string; limit: string; remaining?: string; room_back_at?: string }[];
    const day = rules.find((r) => r.rule === 'day');
    expect(day).toMatchObject({ limit: '1', spent: '0.2', remaining: '0.8' });
    // The 0.2 leaves the 24-hour window a day after it was made: room comes back then.
    expect(Date.parse(day?.room_back_at as string) - Date.now()).toBeGreaterThan(23 * 3600_000);
    expect(rules.map((r) => r.rule)).toEqual(expect.arrayContaining(['per-send --front-end mcp', 'ask-above', 'day']));
    expect(status.data?.lists).toMatchObject({ deny_recipients: ['nano_1111111111111111111111111111111111111111111111111111hifc8npp'] });
    expect(status.data?.pending_approvals).toEqual([expect.objectContaining({ amount: '0.4', recipient: OTHER, rule: 'ask-above' })]);

    const history = await call('wallet_history', { limit: '2' });
    expect(history).toMatchObject({ success: true, data: { more: false } });
    expect(history.data?.history).toEqual([expect.objectContaining({ type: 'send', amount: '0.2', counterparty: OTHER }), expect.objectContaining({ type: 'open', amount: '5' })]);
    expect((await call('wallet_history', { limit: '1000' })).error).toMatchObject({ error: 'INVALID_REQUEST' });
  });

  it('over the HTTP toolset and in the chat of the agent, in ordinary words', async () => {
    const serve = await startServe(user, [], AGENT);
    stops.push(() => serve.stop());
    const status = (await (await fetch(`${serve.url}/spending/status`)).json()) as Envelope;
    // The toolset through the same session is judged as the session's scope, mcp.
    expect(status).toMatchObject({ success: true, data: { judged_as: 'mcp', spent: { last_24_hours: '0.2' } } });
    expect(((await (await fetch(`${serve.url}/wallet/history?limit=1`)).json()) as Envelope).data?.history).toHaveLength(1);

    const agent = await startAgentProcess({ ...user.env, ...AGENT });
    stops.push(() => agent.stop());
    const said = async (message: string): Promise<string> =>
      (await (await chat(agent.url, { message })).all())
        .filter((e) => e.type === 'text')
        .map((e) => e.text as string)
        .join('\n');
    expect(await said('how much did I spend today?')).toMatch(/Spent 0 XNO in the last hour|Spent 0\.2 XNO in the last hour/);
    expect(await said('what is my spending limit?')).toMatch(/- day 1 XNO: 0\.8 XNO left, more from \d{4}-/);
    expect(await said('list pending approvals')).toMatch(/Waiting for a person's approval: 0\.4 XNO to nano_3iy8/);
    expect(await said('show my last 3 payments')).toMatch(/send 0\.2 XNO to nano_3iy8/);
    expect(await said(`send 1,5 to ${OTHER}`)).toMatch(/Did you mean 1\.5\?/);
  });
});
