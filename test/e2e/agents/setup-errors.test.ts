import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { BIN, newUser, type CliUser } from '../../helpers/processes/cli.js';
import { fund, sandbox } from '../../helpers/ledger/sandbox.js';
import { startServe } from '../../helpers/processes/serve.js';
import { tempDir } from '../../helpers/processes/temp.js';

/**
 * `nanopay mcp` and `nanopay serve` that cannot serve yet (no wallet, no
 * password source, a wrong password) still start: the MCP handshake completes
 * and every call answers the setup failure and its hint (what to run), so the
 * agent can tell its user; once it is fixed (a wallet made, a session
 * unlocked), the next call works, without a restart.
 */
let sb: RunningSandbox;
const stops: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  await sb?.close();
});

type Envelope = { success: boolean; data: Record<string, unknown> | null; error: { error: string; message: string; hint?: string } | null };

async function mcpOf(user: CliUser, env: NodeJS.ProcessEnv, args: string[] = []): Promise<(name: string, input?: Record<string, unknown>) => Promise<Envelope>> {
  const client = new Client({ name: 'nanopay-setup-test', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp', ...args], env: { ...user.env, ...env } as Record<string, string>, stderr: 'pipe' }));
  stops.push(() => client.close());
  expect(client.getServerVersion()?.name).toBe('nanopay');
  expect((await client.listTools()).tools.map((t) => t.name)).toContain('wallet_balance');
  return async (name, input = {}) => JSON.parse(((await client.callTool({ name, arguments: input })).content as { text: string }[])[0]?.text ?? 'null') as Envelope;
}

describe('a server that cannot serve yet', () => {
  it('nanopay mcp without a wallet completes the handshake; each call says why and what to run; once a wallet and a session are there, it serves', async () => {
    const user = await newUser(sb.url);
    const call = await mcpOf(user, { NANOPAY_PASSWORD: '' });
    const first = await call('wallet_balance');
    expect(first).toMatchObject({ success: false, error: { error: 'NOT_FOUND', message: expect.stringContaining('nanopay mcp cannot serve'), hint: expect.stringContaining('nanopay wallet create') } });
    expect((await call('wallet_send', { recipient_address: 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj', amount: '0.1' })).error).toMatchObject({ error: 'NOT_FOUND' });
    // The person makes the wallet and unlocks a session for it: the next call works, without a restart.
    expect((await user.run(['wallet', 'create', '--remote'])).code).toBe(0);
    const noPassword = await call('wallet_balance');
    expect(noPassword).toMatchObject({ success: false, error: { error: 'PASSWORD_REQUIRED', hint: expect.stringContaining('NANOPAY_PASSWORD') } });
    expect((await user.run(['unlock', '--for', '2m', '--scope', 'mcp'])).code).toBe(0);
    stops.push(() => user.run(['lock']));
    expect(await call('wallet_balance')).toMatchObject({ success: true, data: { balance: '0' } });
  });

  it('nanopay mcp with a wrong password file, and nanopay serve without a wallet, answer the failure on every call', async () => {
    const user = await newUser(sb.url);
    expect((await user.run(['wallet', 'create', '--remote'])).code).toBe(0);
    const wrong = join(await tempDir('nanopay-setup-'), 'wrong.pass');
    await writeFile(wrong, 'not the password\n', { mode: 0o600 });
    const call = await mcpOf(user, { NANOPAY_PASSWORD: '' }, ['--password-file', wrong]);
    expect(await call('credits_get')).toMatchObject({ success: false, error: { error: 'WRONG_PASSWORD' } });

    const empty = await newUser(sb.url);
    const serve = await startServe(empty, [], { NANOPAY_PASSWORD: '' });
    stops.push(() => serve.stop());
    const answer = await fetch(`${serve.url}/wallet/balance`);
    expect(answer.status).toBe(404);
    expect(((await answer.json()) as Envelope).error).toMatchObject({ error: 'NOT_FOUND', message: expect.stringContaining('nanopay serve cannot serve'), hint: expect.stringContaining('nanopay wallet create') });
    expect(serve.stderr()).toContain('nanopay serve cannot serve');
    // A wallet, but no password for it yet; then a session: it serves.
    const { address } = (await empty.json<{ address: string }>(['wallet', 'create', '--remote'])) as { address: string };
    await fund(sb.url, address, '1');
    const balance = async (): Promise<Envelope> => (await (await fetch(`${serve.url}/wallet/balance?auto_receive_pending_blocks=true`)).json()) as Envelope;
    expect(await balance()).toMatchObject({ success: false, error: { error: 'PASSWORD_REQUIRED' } });
    expect((await empty.run(['unlock', '--for', '2m', '--scope', 'toolset'])).code).toBe(0);
    stops.push(() => empty.run(['lock']));
    expect(await balance()).toMatchObject({ success: true, data: { balance: '1' } });
  });
});
