import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { BIN, newUser, type CliUser } from '../../helpers/processes/cli.js';
import { fund, sandbox } from '../../helpers/ledger/sandbox.js';

let sb: RunningSandbox;
let user: CliUser;
let address: string;
let client: Client;
let stderr = '';

interface Envelope {
  success: boolean;
  data: Record<string, unknown> | null;
  error: { error: string; message: string } | null;
}

function envelopeOf(result: Awaited<ReturnType<Client['callTool']>>): Envelope {
  const content = result.content as { type: string; text: string }[];
  const fromText = JSON.parse(content[0]?.text ?? 'null') as Envelope;
  expect(result.structuredContent).toEqual(fromText);
  return fromText;
}

beforeAll(async () => {
  sb = await sandbox();
  user = await newUser(sb.url);
  address = (await user.json<{ address: string }>(['wallet', 'create', '--remote'])).address;
  await fund(sb.url, address, '3');
  const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'], env: user.env as Record<string, string>, stderr: 'pipe' });
  transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  client = new Client({ name: 'nanopay-test', version: '1.0.0' });
  await client.connect(transport);
});

afterAll(async () => {
  await client?.close();
  await sb?.close();
});

describe('nanopay mcp over stdio', () => {
  it('lists the tools under names every main client accepts, each with a title and annotations', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['credits_get', 'credits_topup', 'donate_send', 'http_fetch_paid', 'payment_request', 'payment_status', 'spending_status', 'wallet_balance', 'wallet_history', 'wallet_send']);
    for (const tool of tools) {
      expect(tool.name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
      expect(tool.title).toMatch(/\w/);
      expect(tool.annotations).toMatchObject({ title: tool.title, openWorldHint: true });
      for (const hint of ['readOnlyHint', 'destructiveHint', 'idempotentHint'] as const) expect(typeof tool.annotations?.[hint]).toBe('boolean');
    }
    const hints = Object.fromEntries(tools.map((t) => [t.name, [t.annotations?.readOnlyHint, t.annotations?.destructiveHint, t.annotations?.idempotentHint]]));
    // [readOnly, destructive, idempotent]: spends are destructive, reads read-only; balance may sign receive blocks.
    expect(hints).toEqual({
      wallet_balance: [false, false, true],
      wallet_send: [false, true, false],
      payment_request: [false, false, false],
      payment_status: [true, false, true],
      credits_get: [true, false, true],
      credits_topup: [false, true, false],
      donate_send: [false, true, false],
      http_fetch_paid: [false, true, false],
      spending_status: [true, false, true],
      wallet_history: [true, false, true],
    });
    const send = tools.find((t) => t.name === 'wallet_send');
    expect(send?.inputSchema).toMatchObject({ type: 'object', required: ['recipient_address', 'amount'] });
    // id: the idempotency key a retry repeats; approval_id: the id of an approval a person gave for this very send.
    expect(Object.keys(send?.inputSchema.properties ?? {})).toEqual(['recipient_address', 'amount', 'id', 'approval_id']);
  });

  it('calls wallet_balance and payment_request by their listed names', async () => {
    const balance = envelopeOf(await client.callTool({ name: 'wallet_balance', arguments: { auto_receive_pending_blocks: true } }));
    expect(balance).toMatchObject({ success: true, error: null, data: { account: address, balance: '3', pending: '0' } });
    const request = envelopeOf(await client.callTool({ name: 'payment_request', arguments: { receive_address: address, amount: '1' } }));
    expect(request.success).toBe(true);
    expect(request.data).toMatchObject({ receive_address: address, transaction_id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
  });

  it("still answers the spec's dotted names on tools/call, and both names reach the same tool", async () => {
    const dotted = envelopeOf(await client.callTool({ name: 'wallet.balance', arguments: {} }));
    const listed = envelopeOf(await client.callTool({ name: 'wallet_balance', arguments: {} }));
    expect(dotted).toEqual(listed);
    expect(dotted).toMatchObject({ success: true, data: { account: address } });
    const unknown = await client.callTool({ name: 'wallet_steal', arguments: {} });
    expect(unknown.isError).toBe(true);
    expect(envelopeOf(unknown).error).toMatchObject({ error: 'NOT_FOUND', message: 'No tool named "wallet_steal"' });
  });

  it('a failing call is a tool error with the code, not a protocol crash', async () => {
    const result = await client.callTool({ name: 'wallet_send', arguments: { recipient_address: 'nano_bad', amount: '1' } });
    expect(result.isError).toBe(true);
    expect(envelopeOf(result)).toMatchObject({ success: false, data: null, error: { error: 'INVALID_ADDRESS' } });
    // The session goes on.
    const credits = envelopeOf(await client.callTool({ name: 'credits_get', arguments: {} }));
    expect(credits.success).toBe(true);
    expect(stderr).toContain('tool wallet_send INVALID_ADDRESS');
  });
});
