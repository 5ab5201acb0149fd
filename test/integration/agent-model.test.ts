import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { xnoToRaw } from '../../src/nano/index.js';
import { Session } from '../../src/ops/session.js';
import { exportWallet } from '../../src/ops/wallet.js';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import { AgentClient } from '../../src/sdk/agent-client.js';
import { TOOLS } from '../../src/toolset/tools.js';
import { ScriptedModel, chat, says, startInProcessAgent, toolCalls, type InProcessAgent, type ModelRequest, type StreamEvent } from '../helpers/agent.js';
import { fund, sandbox } from '../helpers/sandbox.js';

// The chat with a language model (a scripted stand-in), in this process: the agent's server and
// strict holder as `nanopay agent --strict` builds them; test/e2e/agent.test.ts checks that the
// command takes the model from NANOPAY_AGENT_MODEL_URL, NANOPAY_AGENT_MODEL and NANOPAY_AGENT_MODEL_KEY.

const other = 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj';
const MODEL_KEY = 'model-key-for-the-stand-in';

const toolMessages = (r: ModelRequest): Record<string, any> =>
  Object.fromEntries(r.body.messages.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, JSON.parse(m.content ?? 'null')]));
const types = (events: StreamEvent[]): string[] => events.map((e) => e.type);

let sb: RunningSandbox;
const running: { close(): Promise<void> }[] = [];

interface ModelAgent {
  agent: InProcessAgent;
  model: ScriptedModel;
  /** The service API key the agent's wallet uses (NANOPAY_API_KEY). */
  apiKey: string;
}

/** A strict agent of its own, with its own API key, reasoning with its own stand-in model; 5 XNO received. */
async function modelAgent(): Promise<ModelAgent> {
  const model = new ScriptedModel();
  await model.start();
  running.push(model);
  const apiKey = ((await (await fetch(`${sb.url}/wallet/create`, { method: 'POST' })).json()) as { data: { api_key: string } }).data.api_key;
  const agent = await startInProcessAgent(sb.url, {
    env: { NANOPAY_API_KEY: apiKey },
    confirmAboveRaw: xnoToRaw('1'),
    model: { url: model.url, model: 'stand-in-1', key: MODEL_KEY },
  });
  running.push(agent);
  await fund(sb.url, agent.address, '5');
  await new AgentClient(agent.url).check_balance(true);
  return { agent, model, apiKey };
}

/** The wallet's seed and private key (as `wallet export` shows them), its password and its API key. */
async function secretsOf({ agent, apiKey }: ModelAgent): Promise<string[]> {
  const wallet = await exportWallet(new Session({ configDir: agent.dir, env: { NANOPAY_API_KEY: apiKey }, password: async () => agent.password }));
  expect(wallet.accounts[0]?.address).toBe(agent.address);
  const secrets = [wallet.secret, wallet.accounts[0]?.private_key as string, agent.password, apiKey];
  for (const secret of secrets) expect(secret.length).toBeGreaterThanOrEqual(16);
  return secrets;
}

/** Every test's conversation is checked: the model never saw a secret. */
async function expectNoSecretShown(f: ModelAgent): Promise<void> {
  const secrets = await secretsOf(f);
  for (const received of f.model.received) {
    for (const secret of secrets) expect(received.text.toLowerCase()).not.toContain(secret.toLowerCase());
  }
}

beforeAll(async () => {
  sb = await sandbox();
});

afterEach(async () => {
  for (const server of running.splice(0)) await server.close();
});

afterAll(async () => {
  await sb?.close();
});

describe('the agent with a language model', () => {
  it('lets the model send; tool calls with bad arguments come back to the model as tool errors', async () => {
    const f = await modelAgent();
    const { agent, model } = f;
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
    expect(results.map((r) => (r.ok ? 'ok' : r.error.error))).toEqual(['INVALID_NUMBER_FORMAT', 'NOT_FOUND', 'INVALID_JSON', 'INVALID_REQUEST', 'ok']);
    expect(results[4]).toMatchObject({ name: 'wallet.send', data: { amount: '0.2', recipient: other, hash: expect.stringMatching(/^[0-9A-F]{64}$/) } });
    expect(events.at(-2)).toEqual({ type: 'text', text: 'Sent 0.2 XNO.' });

    // What the model was told of its mistakes: tool errors, in the conversation.
    expect(model.received).toHaveLength(3);
    expect(toolMessages(model.received[1] as ModelRequest)).toMatchObject({
      a: { ok: false, error: { error: 'INVALID_NUMBER_FORMAT' } },
      b: { ok: false, error: { error: 'NOT_FOUND' } },
      c: { ok: false, error: { error: 'INVALID_JSON' } },
      d: { ok: false, error: { error: 'INVALID_REQUEST' } },
    });
    expect(toolMessages(model.received[2] as ModelRequest).e).toMatchObject({ ok: true, data: { amount: '0.2' } });
    expect(await new AgentClient(agent.url).check_balance()).toMatchObject({ balance: '4.8' });
    await expectNoSecretShown(f);
  });

  it('sees the seven tools, the same definitions as MCP and HTTP, and is called with its key', async () => {
    const f = await modelAgent();
    f.model.then(says('Hello.'));
    expect(types(await (await chat(f.agent.url, { message: 'hi' })).all())).toEqual(['text', 'done']);
    const first = f.model.received[0] as ModelRequest;
    expect(first.body.model).toBe('stand-in-1');
    expect(first.authorization).toBe(`Bearer ${MODEL_KEY}`);
    expect(first.body.tools.map((t) => t.function.name)).toEqual(['wallet_balance', 'wallet_send', 'payment_request', 'payment_status', 'credits_get', 'credits_topup', 'donate_send']);
    expect(first.body.tools.map((t) => t.function.parameters)).toEqual(TOOLS.map((t) => t.inputSchema));
    await expectNoSecretShown(f);
  });

  it('lets the model request a payment', async () => {
    const f = await modelAgent();
    const { agent, model } = f;
    model.then(toolCalls(['r', 'payment_request', JSON.stringify({ amount: '1.25' })]), says('Ask the payer for the exact amount.'));
    const events = await (await chat(agent.url, { message: 'I need 1.25 XNO from a customer' }, { format: 'ndjson' })).all();
    expect(types(events)).toEqual(['tool_call', 'tool_result', 'text', 'done']);
    expect(events[1]).toMatchObject({ name: 'payment.request', ok: true, data: { receive_address: agent.address } });
    expect(xnoToRaw(events[1]?.data.amount as string) >= xnoToRaw('1.25')).toBe(true);
    expect(((await fetch(`${agent.url}/status`).then((r) => r.json())) as { data: { unlocked_sessions: number } }).data.unlocked_sessions).toBe(0);
    await expectNoSecretShown(f);
  });

  it('holds a send above --confirm-above without showing the model the token', async () => {
    const f = await modelAgent();
    const { agent, model } = f;
    model.then(toolCalls(['s', 'wallet_send', JSON.stringify({ recipient_address: other, amount: '2' })]), says('Please confirm.'));
    const events = await (await chat(agent.url, { message: `send 2 to ${other}` })).all();
    expect(types(events)).toEqual(['tool_call', 'confirm', 'text', 'done']);
    const token = events[1]?.token as string;
    const last = model.received.at(-1) as ModelRequest;
    expect(toolMessages(last).s).toMatchObject({ ok: false, confirmation_required: expect.any(String) });
    expect(last.text).not.toContain(token);
    expect(await new AgentClient(agent.url).check_balance()).toMatchObject({ balance: '5' });
    const confirmed = await (await chat(agent.url, { confirm: token })).all();
    expect(confirmed[1]).toMatchObject({ type: 'tool_result', ok: true, data: { amount: '2' } });
    await expectNoSecretShown(f);
  });

  it('reports a failing model as an error event, without the answer it sent', async () => {
    const f = await modelAgent();
    f.model.then(() => ({ status: 500, raw: '{"error": "echo of everything"}' }));
    const events = await (await chat(f.agent.url, { message: 'balance' })).all();
    expect(types(events)).toEqual(['error', 'done']);
    expect(events[0]).toMatchObject({ error: { error: 'REQUEST_ERROR' } });
    expect(JSON.stringify(events)).not.toContain('echo of everything');
    await expectNoSecretShown(f);
  });

  it('never shows the model a seed, private key, password or API key, whichever tools it calls', async () => {
    const f = await modelAgent();
    const { agent, model } = f;
    model.then(
      toolCalls(
        ['1', 'wallet_balance', '{}'],
        ['2', 'wallet_send', JSON.stringify({ recipient_address: other, amount: '0.2' })],
        ['3', 'payment_request', JSON.stringify({ amount: '0.3' })],
        ['4', 'credits_get', '{}'],
        ['5', 'credits_topup', JSON.stringify({ credits_amount: '100' })],
        ['6', 'donate_send', JSON.stringify({ amount: '0.01' })],
      ),
      (r) => toolCalls(['7', 'payment_status', JSON.stringify({ transaction_id: toolMessages(r)['3'].data.transaction_id })])(),
      says('Done.'),
    );
    const events = await (await chat(agent.url, { message: 'Use every tool once' })).all();
    const results = events.filter((e) => e.type === 'tool_result');
    expect(results.map((r) => (r.ok ? r.name : r.error.error))).toEqual(['wallet.balance', 'wallet.send', 'payment.request', 'credits.get', 'credits.topup', 'donate.send', 'payment.status']);
    expect(new Set(results.map((r) => r.name))).toEqual(new Set(TOOLS.map((t) => t.name)));
    expect(model.received).toHaveLength(3);
    await expectNoSecretShown(f);
  });
});
