import { readFile, stat } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isValidAddress } from '../../../src/nano/index.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { AgentClient } from '../../../src/sdk/agent-client.js';
import { ScriptedModel, chat, says, startAgentProcess, toolCalls, type AgentProcess, type StreamEvent } from '../../helpers/network/agent.js';
import { runCli, userWithWallet } from '../../helpers/processes/cli.js';
import { fund, sandbox } from '../../helpers/ledger/sandbox.js';
import { waitUntil } from '../../helpers/processes/unlocked.js';
import { tempDir } from '../../helpers/processes/temp.js';

// `nanopay agent` itself: its start-up (strict mode's first start at the key store's real cost),
// flags, environment, log and shutdown. What the agent does with requests is tested in-process:
// test/integration/agent.test.ts.

let sb: RunningSandbox;
const shop = 'http://shop.example';
const types = (events: StreamEvent[]): string[] => events.map((e) => e.type);

/** A raw request, so the test sets every header (Origin). */
function raw(url: string, path: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(new URL(path, url), { headers }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Stops the agent with SIGTERM and expects a clean exit. */
async function stopCleanly(agent: AgentProcess): Promise<void> {
  await agent.stop();
  expect(agent.child.exitCode).toBe(0);
}

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  await sb?.close();
});

// Each test has its own directories and processes: they run side by side.
describe.concurrent('the agent command', () => {
  it('in strict mode sets its wallet up at first start, serves with its flags, logs without secrets and stops on SIGTERM', async () => {
    const dir = await tempDir('nanopay-agent-');
    const agentDir = join(dir, 'agent');
    // No wallet, no password: strict mode must set itself up.
    const env = { PATH: process.env.PATH, HOME: dir, NANOPAY_CONFIG_DIR: dir, NANOPAY_API_URL: sb.url, AGENT_MODE: 'production', NO_COLOR: '1' };
    const agent = await startAgentProcess(env, ['--confirm-above', '1', '--allow-origin', shop]);
    try {
      expect(agent.started).toMatchObject({ strict: true, model: null, token_required: false });
      expect(agent.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(isValidAddress(agent.address)).toBe(true);
      expect((await stat(join(agentDir, 'agent-password'))).mode & 0o777).toBe(0o600);
      expect((await stat(join(agentDir, 'keystore.json'))).isFile()).toBe(true);
      expect(((await (await fetch(`${agent.url}/status`)).json()) as { data: unknown }).data).toMatchObject({ address: agent.address, strict: true, confirm_above: '1', unlocked_sessions: 0 });
      // --allow-origin reached the server: that origin's page gets its CORS header.
      const allowed = await raw(agent.url, '/status', { origin: shop });
      expect(allowed.status).toBe(200);
      expect(allowed.headers['access-control-allow-origin']).toBe(shop);
      expect(types(await (await chat(agent.url, { message: 'help' })).all())).toEqual(['text', 'done']);
      // A request that unlocks the key store made at its real cost, with the password the agent made.
      expect(await new AgentClient(agent.url).check_balance()).toEqual({ balance: '0', address: agent.address });

      const password = (await readFile(join(agentDir, 'agent-password'), 'utf8')).trim();
      // A request's line is logged once its answer is out, so it may reach us just after the answer.
      await waitUntil('the log line of the balance request', () => /GET \/wallet\/balance 200 \d+ms/.test(agent.stderr()));
      const log = agent.stderr();
      expect(log).toMatch(/made a random wallet password in /);
      expect(log).toMatch(/created the agent wallet nano_/);
      expect(log).toMatch(/POST \/chat 200 \d+ms/);
      expect(log).toMatch(/GET \/wallet\/balance 200 \d+ms/);
      expect(log).not.toContain(password);
      expect(log).not.toMatch(/[0-9A-Fa-f]{64}/);

      await stopCleanly(agent);
    } finally {
      await agent.stop();
    }
  });

  it('listens on 7860 by default, where AgentClient looks', async () => {
    const help = await runCli(['agent', '--help'], { PATH: process.env.PATH, NO_COLOR: '1' });
    expect(help.stdout).toMatch(/127\.0\.0\.1:7860/);
    expect(help.stdout).toMatch(/port \(default 7860/);
    expect(new AgentClient().agent_url).toBe('http://127.0.0.1:7860');
  });

  it('refuses a non-loopback address without a token, before making a wallet', async () => {
    const empty = await tempDir('nanopay-agent-');
    const env = { PATH: process.env.PATH, HOME: empty, NANOPAY_CONFIG_DIR: empty, NANOPAY_API_URL: sb.url, AGENT_MODE: 'production', NO_COLOR: '1' };
    const result = await runCli(['agent', '--host', '0.0.0.0', '--port', '0', '--json'], env);
    expect(result.code).toBe(2);
    expect(JSON.parse(result.stdout)).toMatchObject({ error: { code: 'USAGE' } });
    await expect(stat(join(empty, 'agent'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('without strict mode, uses the profile\'s wallet and password sources, like serve, and the model its environment names', async () => {
    const { user, address } = await userWithWallet(sb.url);
    // Received by the agent below: its child makes the work, not this process.
    await fund(sb.url, address, '1');
    const model = new ScriptedModel();
    await model.start();
    const modelKey = 'model-key-for-the-stand-in';
    const profileAgent = await startAgentProcess({ ...user.env, NANOPAY_AGENT_MODEL_URL: model.url, NANOPAY_AGENT_MODEL: 'stand-in-1', NANOPAY_AGENT_MODEL_KEY: modelKey });
    try {
      expect(profileAgent.started).toMatchObject({ strict: false, address, model: 'stand-in-1' });
      expect(await new AgentClient(profileAgent.url).check_balance(true)).toEqual({ balance: '1', address });
      model.then(toolCalls(['b', 'wallet_balance', '{}']), says('You have 1 XNO.'));
      const events = await (await chat(profileAgent.url, { message: 'balance' })).all();
      expect(events[1]).toMatchObject({ type: 'tool_result', ok: true, data: { account: address } });
      expect(model.received[0]).toMatchObject({ authorization: `Bearer ${modelKey}`, body: { model: 'stand-in-1' } });
      await stopCleanly(profileAgent);
    } finally {
      await profileAgent.stop();
      await model.close();
    }
  });
});
