import { mkdtemp, readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { xnoToRaw } from '../../src/nano/index.js';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import { AgentClient } from '../../src/sdk/agent-client.js';
import { chat, startAgentProcess, type AgentProcess, type StreamEvent } from '../helpers/agent.js';
import { runCli } from '../helpers/cli.js';
import { fund, sandbox } from '../helpers/sandbox.js';

const other = 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj';
const MODEL_KEY = 'model-key-for-the-stand-in';

type Message = { role: string; content?: string | null; tool_call_id?: string; tool_calls?: unknown[] };
interface Received {
  text: string;
  body: { model: string; messages: Message[]; tools: { type: string; function: { name: string; parameters: unknown } }[] };
  authorization: string | undefined;
}

/** A stand-in for an OpenAI-compatible endpoint: answers each request with the next scripted reply. */
class ScriptedModel {
  readonly received: Received[] = [];
  private script: ((r: Received) => { status?: number; message?: unknown; raw?: string })[] = [];
  private server: Server | undefined;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let text = '';
      req.on('data', (d: Buffer) => (text += d.toString()));
      req.on('end', () => {
        const received: Received = { text, body: JSON.parse(text) as Received['body'], authorization: req.headers.authorization };
        this.received.push(received);
        const step = this.script.shift();
        const reply = step === undefined ? { status: 500, raw: 'unscripted request' } : step(received);
        res.writeHead(reply.status ?? 200, { 'content-type': 'application/json' });
        res.end(reply.raw ?? JSON.stringify({ id: 'x', object: 'chat.completion', choices: [{ index: 0, message: reply.message, finish_reason: 'stop' }] }));
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server?.address() as AddressInfo).port}/v1`;
  }

  then(...steps: ((r: Received) => { status?: number; message?: unknown; raw?: string })[]): void {
    this.script.push(...steps);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}

const toolCalls = (...calls: [string, string, string][]) => () => ({
  message: { role: 'assistant', content: null, tool_calls: calls.map(([id, name, args]) => ({ id, type: 'function', function: { name, arguments: args } })) },
});
const says = (content: string) => () => ({ message: { role: 'assistant', content } });
const toolMessages = (r: Received): Record<string, any> =>
  Object.fromEntries(r.body.messages.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, JSON.parse(m.content ?? 'null')]));
const types = (events: StreamEvent[]): string[] => events.map((e) => e.type);

let sb: RunningSandbox;
let model: ScriptedModel;
let agent: AgentProcess;
let dir: string;
let apiKey: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  sb = await sandbox();
  model = new ScriptedModel();
  await model.start();
  apiKey = ((await (await fetch(`${sb.url}/wallet/create`, { method: 'POST' })).json()) as { data: { api_key: string } }).data.api_key;
  dir = await mkdtemp(join(tmpdir(), 'nanopay-agent-model-'));
  env = {
    PATH: process.env.PATH,
    HOME: dir,
    NANOPAY_CONFIG_DIR: dir,
    NANOPAY_API_URL: sb.url,
    NANOPAY_API_KEY: apiKey,
    AGENT_MODE: 'production',
    NANOPAY_AGENT_MODEL_URL: model.url,
    NANOPAY_AGENT_MODEL: 'stand-in-1',
    NANOPAY_AGENT_MODEL_KEY: MODEL_KEY,
    NO_COLOR: '1',
  };
  agent = await startAgentProcess(env, ['--confirm-above', '1']);
  await fund(sb.url, agent.address, '5');
  await new AgentClient(agent.url).check_balance(true);
});

afterAll(async () => {
  await agent?.stop();
  await model?.close();
  await sb?.close();
});

describe('the agent with a language model', () => {
  it('lets the model send; tool calls with bad arguments come back to the model as tool errors', async () => {
    expect(agent.started).toMatchObject({ strict: true, model: 'stand-in-1' });
    model.then(
      toolCalls(
        ['a', 'wallet_send', JSON.stringify({ recipient_address: other, amount: 0.2 })],
        ['b', 'wallet_steal', '{}'],
        ['c', 'wallet_send', '{"recipient_address": '],
        ['d', 'wallet_send', JSON.stringify({ recipient_address: other, amount: '0.2', memo: 'x' })],
      ),
      toolCalls(['e', 'wallet_send', JSON.stringify({ recipient_address: other, amount: '0.2' })]),
      says('Sent 0.2 XNO.'),
    );
    const events = await (await chat(agent.url, { message: `Please pay 0.2 XNO to ${other}` })).all();
    expect(types(events)).toEqual([...Array(5).fill(['tool_call', 'tool_result']).flat(), 'text', 'done']);
    const results = events.filter((e) => e.type === 'tool_result');
    expect(results.map((r) => r.ok ? 'ok' : r.error.error)).toEqual(['INVALID_NUMBER_FORMAT', 'NOT_FOUND', 'INVALID_JSON', 'INVALID_REQUEST', 'ok']);
    expect(results[4]).toMatchObject({ name: 'wallet.send', data: { amount: '0.2', recipient: other, hash: expect.stringMatching(/^[0-9A-F]{64}$/) } });
    expect(events.at(-2)).toEqual({ type: 'text', text: 'Sent 0.2 XNO.' });

    // What the model was told of its mistakes: tool errors, in the conversation.
    const second = model.received.at(-2) as Received;
    expect(toolMessages(second)).toMatchObject({
      a: { ok: false, error: { error: 'INVALID_NUMBER_FORMAT' } },
      b: { ok: false, error: { error: 'NOT_FOUND' } },
      c: { ok: false, error: { error: 'INVALID_JSON' } },
      d: { ok: false, error: { error: 'INVALID_REQUEST' } },
    });
    expect(toolMessages(model.received.at(-1) as Received).e).toMatchObject({ ok: true, data: { amount: '0.2' } });
    expect(await new AgentClient(agent.url).check_balance()).toMatchObject({ balance: '4.8' });
  });

  it('sees the seven tools, the same definitions as MCP and HTTP, and is called with its key', async () => {
    const first = model.received[0] as Received;
    expect(first.body.model).toBe('stand-in-1');
    expect(first.authorization).toBe(`Bearer ${MODEL_KEY}`);
    expect(first.body.tools.map((t) => t.function.name)).toEqual(['wallet_balance', 'wallet_send', 'payment_request', 'payment_status', 'credits_get', 'credits_topup', 'donate_send']);
    const { TOOLS } = await import('../../src/toolset/tools.js');
    expect(first.body.tools.map((t) => t.function.parameters)).toEqual(TOOLS.map((t) => t.inputSchema));
  });

  it('lets the model request a payment', async () => {
    model.then(toolCalls(['r', 'payment_request', JSON.stringify({ amount: '1.25' })]), says('Ask the payer for the exact amount.'));
    const events = await (await chat(agent.url, { message: 'I need 1.25 XNO from a customer' }, { format: 'ndjson' })).all();
    expect(types(events)).toEqual(['tool_call', 'tool_result', 'text', 'done']);
    expect(events[1]).toMatchObject({ name: 'payment.request', ok: true, data: { receive_address: agent.address } });
    expect(xnoToRaw(events[1]?.data.amount as string) >= xnoToRaw('1.25')).toBe(true);
    expect((await fetch(`${agent.url}/status`).then((r) => r.json()) as { data: { unlocked_sessions: number } }).data.unlocked_sessions).toBe(0);
  });

  it('holds a send above --confirm-above without showing the model the token', async () => {
    model.then(toolCalls(['s', 'wallet_send', JSON.stringify({ recipient_address: other, amount: '2' })]), says('Please confirm.'));
    const events = await (await chat(agent.url, { message: `send 2 to ${other}` })).all();
    expect(types(events)).toEqual(['tool_call', 'confirm', 'text', 'done']);
    const token = events[1]?.token as string;
    const last = model.received.at(-1) as Received;
    expect(toolMessages(last).s).toMatchObject({ ok: false, confirmation_required: expect.any(String) });
    expect(last.text).not.toContain(token);
    expect(await new AgentClient(agent.url).check_balance()).toMatchObject({ balance: '4.8' });
    const confirmed = await (await chat(agent.url, { confirm: token })).all();
    expect(confirmed[1]).toMatchObject({ type: 'tool_result', ok: true, data: { amount: '2' } });
  });

  it('reports a failing model as an error event, without the answer it sent', async () => {
    model.then(() => ({ status: 500, raw: '{"error": "echo of everything"}' }));
    const events = await (await chat(agent.url, { message: 'balance' })).all();
    expect(types(events)).toEqual(['error', 'done']);
    expect(events[0]).toMatchObject({ error: { error: 'REQUEST_ERROR' } });
    expect(JSON.stringify(events)).not.toContain('echo of everything');
  });

  it('never showed the model a seed, private key, password or API key', async () => {
    const password = (await readFile(join(dir, 'agent', 'agent-password'), 'utf8')).trim();
    const exported = await runCli(['wallet', 'export', '--yes', '--json'], { ...env, NANOPAY_CONFIG_DIR: join(dir, 'agent'), NANOPAY_PASSWORD: password });
    const wallet = JSON.parse(exported.stdout) as { secret: string; accounts: { address: string; private_key: string }[] };
    expect(wallet.accounts[0]?.address).toBe(agent.address);
    const secrets = [wallet.secret, wallet.accounts[0]?.private_key as string, password, apiKey];
    for (const secret of secrets) expect(secret.length).toBeGreaterThanOrEqual(16);
    expect(model.received.length).toBeGreaterThanOrEqual(6);
    for (const received of model.received) {
      for (const secret of secrets) expect(received.text.toLowerCase()).not.toContain(secret.toLowerCase());
    }
  });
});
