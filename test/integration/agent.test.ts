import { createServer, request as httpRequest } from 'node:http';
import { rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startAgent } from '../../src/agent/server.js';
import { profileHolder } from '../../src/agent/wallet-holder.js';
import { xnoToRaw } from '../../src/nano/index.js';
import { setSetting, unsetSetting } from '../../src/ops/profile/config.js';
import { Session } from '../../src/ops/session.js';
import { exportWallet } from '../../src/ops/profile/wallet.js';
import type { RunningSandbox } from '../../src/sandbox/index.js';
import { AgentClient, AgentError } from '../../src/sdk/agent-client.js';
import { TOOLS } from '../../src/toolset/tools.js';
import { DEV_THRESHOLDS, shutdownWorkers } from '../../src/work/index.js';
import { answerApproval } from '../../src/ops/spending/approvals.js';
import { Paywall } from '../../src/x402/paywall.js';
import { x402Middleware } from '../../src/x402/middleware.js';
import { sandboxSettler } from '../helpers/ledger/x402.js';
import {
  ScriptedModel,
  chat,
  says,
  startInProcessAgent,
  toolCalls,
  type InProcessAgent,
  type InProcessAgentOptions,
  type ModelRequest,
  type StreamEvent,
} from '../helpers/network/agent.js';
import { PASSWORD, userWithWallet } from '../helpers/processes/cli.js';
import { startFaultyProxy } from '../helpers/network/faulty-proxy.js';
import { startGateProxy, type GateProxy } from '../helpers/network/gate-proxy.js';
import { fund, sandbox } from '../helpers/ledger/sandbox.js';

// The agent's logic over HTTP, in this process: its server, its holders and its chat (plain grammar
// or a scripted stand-in for a language model), as `nanopay agent` builds them. Each test has an agent
// and a wallet of its own. test/e2e/agents/agent.test.ts starts the command itself: its first start at the
// key store's real cost, its flags, its environment (the model's too), its log and its shutdown.

let sb: RunningSandbox;
let proxy: GateProxy;
const running: { close(): Promise<void> }[] = [];
const other = 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj';
const shop = 'http://shop.example';
const MODEL_KEY = 'model-key-for-the-stand-in';

const types = (events: StreamEvent[]): string[] => events.map((e) => e.type);
const toolMessages = (r: ModelRequest): Record<string, any> =>
  Object.fromEntries(r.body.messages.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, JSON.parse(m.content ?? 'null')]));
const status = async (url: string): Promise<Record<string, any>> => ((await (await fetch(`${url}/status`)).json()) as { data: Record<string, any> }).data;

/** A strict agent of its own behind the gate proxy; with `funds`, that much XNO received on its account. */
/** An agent whose chat takes its user's confirmations (--chat-confirms), as these tests confirm held spends in the chat. */
async function agentWith(funds?: string, options: InProcessAgentOptions = {}): Promise<InProcessAgent> {
  const agent = await startInProcessAgent(proxy.url, { chatConfirms: true, ...options });
  running.push(agent);
  if (funds !== undefined) {
    await fund(sb.url, agent.address, funds);
    expect(await new AgentClient(agent.url).check_balance(true)).toEqual({ balance: funds, address: agent.address });
  }
  return agent;
}

/** A raw request, so the test sets every header (Host, Origin). */
function raw(url: string, method: string, path: string, headers: Record<string, string>, body?: string): Promise<{ status: number; headers: Record<string, unknown>; body: any }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(new URL(path, url), { method, headers }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text === '' ? null : JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

interface ModelAgent {
  agent: InProcessAgent;
  model: ScriptedModel;
  /** The service API key the agent's wallet uses (NANOPAY_API_KEY). */
  apiKey: string;
}

/** A strict agent of its own, with its own API key, reasoning with its own stand-in model; with `funds`, that much XNO received. */
/** An API that charges `price` XNO per request (x402) on the sandbox, in this process; `served` lists what it answered after payment. */
async function startSeller(price: string): Promise<{ url: string; served: string[] }> {
  const { settler, dir } = await sandboxSettler(sb.url);
  running.push({ close: () => rm(dir, { recursive: true, force: true }) });
  const charge = x402Middleware(new Paywall({ payTo: other, settler, workThreshold: DEV_THRESHOLDS.send }), () => price);
  const served: string[] = [];
  const server = createServer((req, res) => void charge(req, res, () => (served.push(req.url ?? ''), res.writeHead(200, { 'content-type': 'text/plain' }).end('the report'))));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  running.push({ close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))) });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, served };
}

async function modelAgent(funds?: string, confirmAboveRaw = xnoToRaw('1'), env: NodeJS.ProcessEnv = {}): Promise<ModelAgent> {
  const model = new ScriptedModel();
  await model.start();
  running.push(model);
  const apiKey = ((await (await fetch(`${sb.url}/wallet/create`, { method: 'POST' })).json()) as { data: { api_key: string } }).data.api_key;
  const agent = await startInProcessAgent(sb.url, {
    env: { NANOPAY_API_KEY: apiKey, ...env },
    confirmAboveRaw,
    model: { url: model.url, model: 'stand-in-1', key: MODEL_KEY },
    chatConfirms: true,
  });
  running.push(agent);
  if (funds !== undefined) {
    await fund(sb.url, agent.address, funds);
    expect(await new AgentClient(agent.url).check_balance(true)).toEqual({ balance: funds, address: agent.address });
  }
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
  proxy = await startGateProxy(sb.url);
});

afterEach(async () => {
  for (const server of running.splice(0)) await server.close();
});

afterAll(async () => {
  await proxy?.close();
  await sb?.close();
  await shutdownWorkers();
});

describe('the agent in strict mode', () => {
  it('answers the SDK\'s three calls and raises AgentError through AgentClient', async () => {
    const agent = await agentWith();
    await fund(sb.url, agent.address, '10');
    const client = new AgentClient(agent.url);
    expect(await client.check_balance(true)).toEqual({ balance: '10', address: agent.address });
    const { hash } = await client.pay(other, '0.5');
    expect(hash).toMatch(/^[0-9A-F]{64}$/);
    const requested = await client.request_payment('2.5');
    expect(requested.receive_address).toBe(agent.address);
    expect(requested.amount.startsWith('2.5')).toBe(true);
    expect(await client.check_balance(false)).toEqual({ balance: '9.5', address: agent.address });
    const refused = await client.pay('nano_bad', '1').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(AgentError);
    expect(refused).toMatchObject({ error_code: 'INVALID_ADDRESS' });
    await expect(client.pay(other, '1000')).rejects.toMatchObject({ error_code: 'INSUFFICIENT_FUNDS' });
  });

  it('holds no unlocked key store after a request, and one while a request runs', async () => {
    const agent = await agentWith();
    expect((await status(agent.url)).unlocked_sessions).toBe(0);
    const gate = proxy.hold('/credits/info');
    const answer = chat(agent.url, { message: 'credits' });
    await gate.reached;
    // The tool is inside its request to the service now: its session has unlocked the key store.
    expect((await status(agent.url)).unlocked_sessions).toBe(1);
    gate.release();
    expect(types(await (await answer).all())).toEqual(['tool_call', 'tool_result', 'text', 'done']);
    expect((await status(agent.url)).unlocked_sessions).toBe(0);
  });

  it('streams each event as it happens: the tool call arrives while the tool still runs', async () => {
    const agent = await agentWith();
    const gate = proxy.hold('/credits/info');
    const reader = await chat(agent.url, { message: 'credits' });
    expect(reader.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    await gate.reached;
    const first = await reader.next();
    // The service has not answered (the proxy still holds it), so the tool cannot have finished.
    expect(first).toMatchObject({ type: 'tool_call', name: 'credits.get', arguments: {} });
    gate.release();
    expect(await reader.next()).toMatchObject({ type: 'tool_result', name: 'credits.get', ok: true, data: { credits: expect.any(Number) } });
    expect(await reader.next()).toMatchObject({ type: 'text' });
    expect(await reader.next()).toEqual({ type: 'done' });
    expect(await reader.next()).toBeUndefined();
  });

  it('understands every sentence of its plain grammar', async () => {
    const agent = await agentWith('10');
    const turn = async (message: string, format: 'sse' | 'ndjson' = 'sse'): Promise<StreamEvent[]> => (await chat(agent.url, { message }, { format })).all();
    const tool = async (message: string, name: string, args: Record<string, unknown>): Promise<Record<string, any>> => {
      const events = await turn(message);
      expect(types(events), message).toEqual(['tool_call', 'tool_result', 'text', 'done']);
      expect(events[0]).toMatchObject({ name, arguments: args });
      expect(events[1], message).toMatchObject({ name, ok: true });
      expect(events[1]?.id).toBe(events[0]?.id);
      return events[1]?.data as Record<string, any>;
    };
    expect(await tool('balance', 'wallet.balance', {})).toMatchObject({ account: agent.address, balance: '10' });
    expect(await tool(`send 0.1 to ${other}`, 'wallet.send', { recipient_address: other, amount: '0.1' })).toMatchObject({ amount: '0.1', recipient: other });
    const requested = await tool('Request 2.5', 'payment.request', { amount: '2.5' });
    // Asking to receive an amount is asking to be paid it: a request, receiving nothing pending.
    expect(await tool('I want to receive 2.5 xno', 'payment.request', { amount: '2.5' })).toMatchObject({ receive_address: agent.address });
    expect(await tool(`status ${requested.transaction_id}`, 'payment.status', { transaction_id: requested.transaction_id })).toMatchObject({ is_paid: false });
    expect(await tool('credits', 'credits.get', {})).toHaveProperty('credits');
    expect(await tool('top up 100', 'credits.topup', { credits_amount: '100' })).toMatchObject({ topped_up_credits: 100 });
    expect(await tool('donate 0.01', 'donate.send', { amount: '0.01' })).toMatchObject({ success: true, amount: '0.01' });
    const help = await turn('help', 'ndjson');
    expect(types(help)).toEqual(['text', 'done']);
    expect(help[0]?.text).toMatch(/send 0\.1 to nano_/);
    const unknown = await turn('make me rich');
    expect(types(unknown)).toEqual(['text', 'done']);
    expect(unknown[0]?.text).toMatch(/did not understand[\s\S]*balance[\s\S]*top up 100/);
    // A question about sending, a negation, an amount without an address: the list, no tool call, no money moved.
    for (const sentence of [`can you send 0.1 to ${other}?`, `don't send 0.1 to ${other}`, 'send 0.1 please']) {
      const refused = await turn(sentence);
      expect(types(refused), sentence).toEqual(['text', 'done']);
      expect(refused[0]?.text, sentence).toMatch(/did not understand that as something to do: [\s\S]*nothing was[\s\S]*I understand:[\s\S]*top up 100/);
    }
    expect(await tool('how much do I have?', 'wallet.balance', {})).toMatchObject({ balance: '9.88' }); // 10 - 0.1 sent - 0.01 for 100 credits - 0.01 donated: nothing more left
    // A tool's refusal is an event of the stream, not a broken stream.
    const bad = await turn(`send 1.2.3 to ${other}`);
    expect(types(bad)).toEqual(['tool_call', 'tool_result', 'done']);
    expect(bad[1]).toMatchObject({ ok: false, error: { error: 'INVALID_NUMBER_FORMAT' } });
  });

  it('answers NDJSON when asked', async () => {
    const agent = await agentWith();
    const reader = await chat(agent.url, { message: 'balance' }, { format: 'ndjson' });
    expect(reader.response.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    expect(types(await reader.all())).toEqual(['tool_call', 'tool_result', 'text', 'done']);
  });

  it('holds a chat send above --confirm-above until a second request returns its single-use token', async () => {
    const agent = await agentWith('10', { confirmAboveRaw: xnoToRaw('1') });
    expect(await status(agent.url)).toMatchObject({ confirm_above: '1' });
    const client = new AgentClient(agent.url);
    const before = (await client.check_balance()).balance;
    const held = await (await chat(agent.url, { message: `send 1.5 to ${other}` })).all();
    expect(types(held)).toEqual(['tool_call', 'confirm', 'done']);
    expect(held[1]).toMatchObject({ name: 'wallet.send', arguments: { recipient_address: other, amount: '1.5' }, token: expect.any(String) });
    expect((await client.check_balance()).balance).toBe(before);
    const token = held[1]?.token as string;
    const done = await (await chat(agent.url, { confirm: token })).all();
    expect(types(done)).toEqual(['tool_call', 'tool_result', 'text', 'done']);
    expect(done[1]).toMatchObject({ name: 'wallet.send', ok: true, data: { amount: '1.5', recipient: other } });
    const again = await (await chat(agent.url, { message: `confirm ${token}` })).all();
    expect(types(again)).toEqual(['error', 'done']);
    expect(again[0]).toMatchObject({ error: { error: 'INVALID_REQUEST' } });
    expect(xnoToRaw((await client.check_balance()).balance)).toBe(xnoToRaw(before) - xnoToRaw('1.5'));
    // The SDK's pay is the agent too: --confirm-above is a rule of the policy for every spend of the agent.
    const heldPay = await client.pay(other, '1.2').catch((e: unknown) => e as AgentError);
    expect(heldPay).toMatchObject({ error_code: 'APPROVAL_REQUIRED', details: { approval: { id: expect.stringMatching(/^apr_/), amount: '1.2' } } });
    const approvalId = ((heldPay as AgentError).details.approval as { id: string }).id;
    await expect(client.pay(other, '1.2', { approval_id: approvalId })).rejects.toMatchObject({ error_code: 'APPROVAL_REQUIRED' });
    const person = new Session({ configDir: agent.dir, env: {}, password: async () => agent.password });
    await answerApproval(person, approvalId, 'approve', 'the test, as the person');
    await expect(client.pay(other, '1.3', { approval_id: approvalId })).rejects.toMatchObject({ error_code: 'APPROVAL_INVALID' });
    await expect(client.pay(other, '1.2', { approval_id: approvalId })).resolves.toHaveProperty('hash');
    await expect(client.pay(other, '1.2', { approval_id: approvalId })).rejects.toMatchObject({ error_code: 'APPROVAL_INVALID' });
  });

  it('applies the profile\'s spending limits to the chat and the SDK, read anew for each request', async () => {
    const agent = await agentWith('1');
    // What `nanopay config set limit-per-send` does to the agent's directory while the agent runs.
    const settings = new Session({ configDir: agent.dir, env: {}, password: async () => agent.password });
    await setSetting(settings, 'limit-per-send', '0.5');
    const events = await (await chat(agent.url, { message: `send 0.6 to ${other}` })).all();
    expect(types(events)).toEqual(['tool_call', 'tool_result', 'done']);
    expect(events[1]).toMatchObject({ ok: false, error: { error: 'POLICY_DENIED' } });
    const client = new AgentClient(agent.url);
    await expect(client.pay(other, '0.6')).rejects.toMatchObject({ error_code: 'POLICY_DENIED' });
    await unsetSetting(settings, 'limit-per-send');
    await expect(client.pay(other, '0.6')).resolves.toHaveProperty('hash');
  });

  it('keeps the guards of serve: Host, Origin, bounded bodies, one log line per request without secrets', async () => {
    const agent = await agentWith('1', { allowOrigins: [shop] });
    const host = new URL(agent.url).host;
    expect(await raw(agent.url, 'GET', '/status', { host: 'evil.example' })).toMatchObject({ status: 403, body: { success: false, error: { error: 'FORBIDDEN' } } });
    expect(await raw(agent.url, 'GET', '/status', { host, origin: 'http://evil.example' })).toMatchObject({ status: 403, body: { error: { error: 'FORBIDDEN' } } });
    const allowed = await raw(agent.url, 'GET', '/status', { host, origin: shop });
    expect(allowed).toMatchObject({ status: 200, body: { success: true } });
    expect(allowed.headers['access-control-allow-origin']).toBe(shop);
    const preflight = await raw(agent.url, 'OPTIONS', '/chat', { host, origin: shop, 'access-control-request-method': 'POST' });
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe(shop);
    const big = JSON.stringify({ message: 'x'.repeat(40 * 1024) });
    expect(await raw(agent.url, 'POST', '/chat', { host, 'content-type': 'application/json' }, big)).toMatchObject({ status: 413 });
    expect(await raw(agent.url, 'POST', '/chat', { host, 'content-type': 'application/json' }, '{"message": 3}')).toMatchObject({ status: 400, body: { error: { error: 'INVALID_REQUEST' } } });
    expect(await raw(agent.url, 'POST', '/chat', { host, 'content-type': 'application/json' }, '{"message": "hi", "seed": "x"}')).toMatchObject({ status: 400 });
    // A send by chat and one by the SDK: their answers carry block hashes, the log must not.
    const sent = await (await chat(agent.url, { message: `send 0.1 to ${other}` })).all();
    expect(sent[1]).toMatchObject({ ok: true, data: { hash: expect.stringMatching(/^[0-9A-F]{64}$/) } });
    await new AgentClient(agent.url).pay(other, '0.1');
    const log = agent.log.join('\n');
    expect(log).toMatch(/POST \/chat 200 \d+ms/);
    expect(log).toMatch(/GET \/wallet\/balance 200 \d+ms/);
    expect(log).toMatch(/POST \/wallet\/send 200 \d+ms/);
    expect(log).not.toContain(agent.password);
    expect(log).not.toMatch(/[0-9A-Fa-f]{64}/);
  });

  it('keeps its wallet across a restart: the same key store and password file, no new wallet', async () => {
    const agent = await agentWith('1');
    expect(agent.log.join('\n')).toMatch(/created the agent wallet nano_/);
    const before = await new AgentClient(agent.url).check_balance();
    await agent.close();
    const again = await startInProcessAgent(proxy.url, { dir: agent.dir, chatConfirms: true });
    running.push(again);
    expect(again.address).toBe(before.address);
    expect(await new AgentClient(again.url).check_balance()).toEqual(before);
    expect(again.log.join('\n')).not.toMatch(/created the agent wallet/);
  });
});

describe('--confirm-above holds every spend of the chat, counting its recent ones', () => {
  const THRESHOLD = xnoToRaw('0.1');
  const turn = async (url: string, message: string): Promise<StreamEvent[]> => (await chat(url, { message })).all();
  /** What each turn came to: 'ok', 'held', or the error code. */
  const outcome = (events: StreamEvent[]): string => {
    const last = events.find((e) => e.type === 'confirm' || e.type === 'tool_result');
    return last?.type === 'confirm' ? 'held' : last?.ok === true ? 'ok' : String(last?.error?.error);
  };
  const balanceOf = async (agent: InProcessAgent): Promise<bigint> => xnoToRaw((await new AgentClient(agent.url).check_balance()).balance);

  it('20 sends of 0.09 under a threshold of 0.1: the second and every later one is held; a confirmed one is carried out as issued', async () => {
    const agent = await agentWith('5', { confirmAboveRaw: THRESHOLD });
    const outcomes: string[] = [];
    const held: StreamEvent[] = [];
    for (let i = 0; i < 20; i++) {
      const events = await turn(agent.url, `send 0.09 to ${other}`);
      outcomes.push(outcome(events));
      const confirm = events.find((e) => e.type === 'confirm');
      if (confirm !== undefined) held.push(confirm);
    }
    expect(outcomes).toEqual(['ok', ...Array(19).fill('held')]);
    expect(held[0]?.text).toMatch(/0\.18 XNO, above the ask-above-hour amount of 0\.1 XNO: nothing was sent/);
    expect(await balanceOf(agent)).toBe(xnoToRaw('4.91'));
    // The token carries out its call, whatever the window holds.
    const confirmed = await (await chat(agent.url, { confirm: held[0]?.token })).all();
    expect(confirmed[1]).toMatchObject({ type: 'tool_result', ok: true, data: { amount: '0.09', recipient: other } });
    expect(await balanceOf(agent)).toBe(xnoToRaw('4.82'));
    // Each held call has its own approval, listed for the chat's user; one denied never runs.
    const waiting = (await (await chat(agent.url, { approvals: true })).all())[0] as StreamEvent;
    expect(waiting.type).toBe('approvals');
    expect(waiting.approvals).toHaveLength(18);
    expect(new Set(waiting.approvals.map((a: { id: string }) => a.id)).size).toBe(18);
    expect(waiting.approvals.every((a: { front_end: string }) => a.front_end === 'agent')).toBe(true);
    expect((await (await chat(agent.url, { deny: held[1]?.token })).all())[0]).toMatchObject({ type: 'text', text: expect.stringMatching(/^Denied a send of 0\.09 XNO/) });
    expect(types(await (await chat(agent.url, { confirm: held[1]?.token })).all())).toEqual(['error', 'done']);
    expect(await balanceOf(agent)).toBe(xnoToRaw('4.82'));
  });

  it('holds a top-up whose listed price is above the threshold, and counts a smaller one toward it', async () => {
    const agent = await agentWith('5', { confirmAboveRaw: THRESHOLD });
    const before = await balanceOf(agent);
    const big = await turn(agent.url, 'top up 10000');
    expect(outcome(big)).toBe('held');
    expect(big.find((e) => e.type === 'confirm')?.text).toMatch(/^The top-up of 0\.8 XNO to nano_\w+ is above the ask-above-hour amount of 0\.1 XNO/);
    expect(await balanceOf(agent)).toBe(before);
    // 1000 credits cost 0.09 XNO: it passes, and then a send of 0.02 would bring the chat to 0.11.
    expect(outcome(await turn(agent.url, 'top up 1000'))).toBe('ok');
    expect(outcome(await turn(agent.url, `send 0.02 to ${other}`))).toBe('held');
    expect(await balanceOf(agent)).toBe(before - xnoToRaw('0.09'));
  });

  it('holds a donation above the threshold, and the second of two that together exceed it', async () => {
    const agent = await agentWith('5', { confirmAboveRaw: THRESHOLD });
    const above = await turn(agent.url, 'donate 0.5');
    expect(outcome(above)).toBe('held');
    expect(above.find((e) => e.type === 'confirm')).toMatchObject({ name: 'donate.send', arguments: { amount: '0.5' } });
    expect(outcome(await turn(agent.url, 'donate 0.06'))).toBe('ok');
    expect(outcome(await turn(agent.url, 'donate 0.06'))).toBe('held');
    expect(await balanceOf(agent)).toBe(xnoToRaw('4.94'));
  });

  it('parallel turns never both slip under it: a spend under way counts, and is released only when it surely moved nothing', async () => {
    const agent = await agentWith('5', { confirmAboveRaw: THRESHOLD });
    // A call the tool refuses before signing moved nothing: it does not count.
    expect(outcome(await turn(agent.url, 'send 0.09 to nano_1111'))).toBe('INVALID_ADDRESS');
    // The first send is held at its publish, still under way, while two more turns arrive.
    const gate = proxy.hold('/block/publish');
    const first = turn(agent.url, `send 0.09 to ${other}`);
    await gate.reached;
    const during = await Promise.all([turn(agent.url, `send 0.05 to ${other}`), turn(agent.url, 'donate 0.02')]);
    expect(during.map(outcome)).toEqual(['held', 'held']);
    gate.release();
    expect(outcome(await first)).toBe('ok');
    // Turns that arrive at the same moment: the threshold admits one of them.
    const agent2 = await agentWith('5', { confirmAboveRaw: THRESHOLD });
    const burst = await Promise.all(Array.from({ length: 4 }, () => turn(agent2.url, `send 0.06 to ${other}`)));
    expect(burst.map(outcome).sort()).toEqual(['held', 'held', 'held', 'ok']);
    expect(await balanceOf(agent2)).toBe(xnoToRaw('4.94'));
  });

  it('a spend whose answer was lost keeps counting: its signed block may land', async () => {
    let dropPublish = false;
    const lossy = await startFaultyProxy(sb.url, (method, path) => (dropPublish && method === 'POST' && path === '/block/publish' ? 'drop' : 'pass'));
    running.push(lossy);
    const agent = await startInProcessAgent(lossy.url, { confirmAboveRaw: THRESHOLD, chatConfirms: true });
    running.push(agent);
    await fund(sb.url, agent.address, '1');
    await new AgentClient(agent.url).check_balance(true);
    dropPublish = true;
    expect(outcome(await turn(agent.url, `send 0.05 to ${other}`))).toBe('REQUEST_ERROR');
    dropPublish = false;
    expect(outcome(await turn(agent.url, `send 0.06 to ${other}`))).toBe('held');
  });
});

describe('the agent without strict mode', () => {
  it('uses the profile\'s wallet, unlocked once at start, for the SDK\'s calls and the chat', async () => {
    const { user, address } = await userWithWallet(proxy.url);
    await fund(sb.url, address, '1');
    const log: string[] = [];
    const holder = await profileHolder({ configDir: user.configDir, env: user.env, password: async () => PASSWORD }, (line) => log.push(line));
    const agent = await startAgent({ host: '127.0.0.1', port: 0, holder, log: (line) => log.push(line) });
    running.push(agent);
    expect(await status(agent.url)).toMatchObject({ address, strict: false, unlocked_sessions: 1 });
    expect(await new AgentClient(agent.url).check_balance(true)).toEqual({ balance: '1', address });
    const events = await (await chat(agent.url, { message: 'balance' })).all();
    expect(events[1]).toMatchObject({ type: 'tool_result', ok: true, data: { account: address } });
  });
});

describe('the agent with a language model', () => {
  it('lets the model send; tool calls with bad arguments come back to the model as tool errors', async () => {
    const f = await modelAgent('5');
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

  it('sees the tools, the same definitions as MCP and HTTP, and is called with its key', async () => {
    const f = await modelAgent();
    f.model.then(says('Hello.'));
    expect(types(await (await chat(f.agent.url, { message: 'hi' })).all())).toEqual(['text', 'done']);
    const first = f.model.received[0] as ModelRequest;
    expect(first.body.model).toBe('stand-in-1');
    expect(first.authorization).toBe(`Bearer ${MODEL_KEY}`);
    expect(first.body.tools.map((t) => t.function.name)).toEqual(['wallet_balance', 'wallet_send', 'payment_request', 'payment_status', 'credits_get', 'credits_topup', 'donate_send', 'spending_status', 'wallet_history', 'http_fetch_paid']);
    expect(first.body.tools.map((t) => t.function.parameters)).toEqual(TOOLS.map((t) => t.inputSchema));
    await expectNoSecretShown(f);
  });

  it('holds a paid fetch whose price is above --confirm-above at that price, nothing paid; the confirmation pays it once', async () => {
    const seller = await startSeller('1.5');
    const f = await modelAgent('5', xnoToRaw('1'), { NANOPAY_FETCH_ALLOW_HOSTS: new URL(seller.url).host });
    const { agent, model } = f;
    model.then(toolCalls(['f', 'http_fetch_paid', JSON.stringify({ url: `${seller.url}/report`, max_xno: '2' })]), says('Waiting for you.'));
    const events = await (await chat(agent.url, { message: 'Buy the report' })).all();
    const held = events.find((e) => e.type === 'confirm');
    expect(held).toMatchObject({ name: 'http_fetch_paid', arguments: { max_xno: '2' }, approval_id: expect.stringMatching(/^apr_/) });
    expect(held?.text).toMatch(/^The x402 payment of 1\.5 XNO to 127\.0\.0\.1:\d+ \(nano_\w+\) is above the ask-above-hour amount of 1 XNO/);
    expect(events.some((e) => e.type === 'tool_result')).toBe(false);
    expect(seller.served).toEqual([]);
    expect(await new AgentClient(agent.url).check_balance()).toMatchObject({ balance: '5' });
    const confirmed = await (await chat(agent.url, { confirm: held?.token })).all();
    expect(confirmed[1]).toMatchObject({ type: 'tool_result', ok: true, data: { status: 200, body: 'the report', payment: { amount: '1.5' } } });
    expect(seller.served).toEqual(['/report']);
    expect(await new AgentClient(agent.url).check_balance()).toMatchObject({ balance: '3.5' });
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
    const f = await modelAgent('5');
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

  it('holds the model\'s spends the same way: the sum of one turn\'s calls, and a top-up at its listed price', async () => {
    const f = await modelAgent('5', xnoToRaw('0.1'));
    const { agent, model } = f;
    model.then(
      toolCalls(
        ['s', 'wallet_send', JSON.stringify({ recipient_address: other, amount: '0.09' })],
        ['d', 'donate_send', JSON.stringify({ amount: '0.05' })],
        ['t', 'credits_topup', JSON.stringify({ credits_amount: '10000' })],
      ),
      says('The donation and the top-up wait for your confirmation.'),
    );
    const events = await (await chat(agent.url, { message: `send 0.09 to ${other}, donate 0.05 and buy 10000 credits` })).all();
    expect(types(events)).toEqual(['tool_call', 'tool_result', 'tool_call', 'confirm', 'tool_call', 'confirm', 'text', 'done']);
    expect(events.filter((e) => e.type === 'confirm').map((e) => e.name)).toEqual(['donate.send', 'credits.topup']);
    const told = toolMessages(model.received.at(-1) as ModelRequest);
    expect(told).toMatchObject({ s: { ok: true }, d: { ok: false, confirmation_required: expect.any(String) }, t: { ok: false, confirmation_required: expect.any(String) } });
    expect(await new AgentClient(agent.url).check_balance()).toMatchObject({ balance: '4.91' });
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
    const f = await modelAgent('5');
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
      (r) =>
        toolCalls(
          ['7', 'payment_status', JSON.stringify({ transaction_id: toolMessages(r)['3'].data.transaction_id })],
          // The agent's own address: refused, nothing fetched (a model reaches no server of this machine, which
          // would answer this user's process without asking for a confirmation).
          ['8', 'http_fetch_paid', JSON.stringify({ url: `${agent.url}/status`, max_xno: '0.01' })],
          ['9', 'spending_status', '{}'],
          ['10', 'wallet_history', '{}'],
        )(),
      says('Done.'),
    );
    const events = await (await chat(agent.url, { message: 'Use every tool once' })).all();
    const results = events.filter((e) => e.type === 'tool_result');
    expect(results.map((r) => (r.ok ? r.name : r.error.error))).toEqual(['wallet.balance', 'wallet.send', 'payment.request', 'credits.get', 'credits.topup', 'donate.send', 'payment.status', 'INVALID_REQUEST', 'spending.status', 'wallet.history']);
    expect(new Set(results.map((r) => r.name))).toEqual(new Set(TOOLS.map((t) => t.name)));
    expect(model.received).toHaveLength(3);
    await expectNoSecretShown(f);
  });
});
