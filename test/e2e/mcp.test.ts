import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import { BIN, newUser, type CliUser } from '../helpers/cli.js';
import { fund, sandbox } from '../helpers/sandbox.js';

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
  it('lists the tools with their input schemas', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['credits.get', 'credits.topup', 'donate.send', 'http_fetch_paid', 'payment.request', 'payment.status', 'wallet.balance', 'wallet.send']);
    const send = tools.find((t) => t.name === 'wallet.send');
    expect(send?.inputSchema).toMatchObject({ type: 'object', required: ['recipient_address', 'amount'] });
    expect(Object.keys(send?.inputSchema.properties ?? {})).toEqual(['recipient_address', 'amount']);
  });

  it('calls wallet.balance and payment.request', async () => {
    const balance = envelopeOf(await client.callTool({ name: 'wallet.balance', arguments: { auto_receive_pending_blocks: true } }));
    expect(balance).toMatchObject({ success: true, error: null, data: { account: address, balance: '3', pending: '0' } });
    const request = envelopeOf(await client.callTool({ name: 'payment.request', arguments: { receive_address: address, amount: '1' } }));
    expect(request.success).toBe(true);
    expect(request.data).toMatchObject({ receive_address: address, transaction_id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
  });

  it('a failing call is a tool error with the code, not a protocol crash', async () => {
    const result = await client.callTool({ name: 'wallet.send', arguments: { recipient_address: 'nano_bad', amount: '1' } });
    expect(result.isError).toBe(true);
    expect(envelopeOf(result)).toMatchObject({ success: false, data: null, error: { error: 'INVALID_ADDRESS' } });
    // The session goes on.
    const credits = envelopeOf(await client.callTool({ name: 'credits.get', arguments: {} }));
    expect(credits.success).toBe(true);
    expect(stderr).toContain('tool wallet.send INVALID_ADDRESS');
  });
});
