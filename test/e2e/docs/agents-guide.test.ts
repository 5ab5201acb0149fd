import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeClient } from '../../../src/api/node-client.js';
import { addressToPublicKey, xnoToRaw } from '../../../src/nano/index.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { startAgentProcess, type AgentProcess } from '../../helpers/network/agent.js';
import { runCommand, userWithWallet } from '../../helpers/processes/cli.js';
import { programProject, typecheck } from '../../helpers/processes/doc-programs.js';
import { docBlocks } from '../../helpers/processes/docs.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { stateBlockOf } from '../../helpers/ledger/chain.js';

/**
 * docs/agents.md's program (its block marked test=agents-guide): the agent client against a running `nanopay agent`
 * whose wallet holds 1 XNO, saved as client.mts in a project with nanopay-cli installed, typechecked and run with
 * node. The agent listens on a free port where the guide writes its default 127.0.0.1:7860, and the recipient's
 * address stands where the guide writes nano_1….
 */
const GUIDE = 'docs/agents.md';
const RECIPIENT = 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj';

let sb: RunningSandbox;
let agent: AgentProcess;

beforeAll(async () => {
  sb = await sandbox();
  const { user } = await userWithWallet(sb.url, '1');
  agent = await startAgentProcess(user.env);
});

afterAll(async () => {
  await agent?.stop();
  await sb?.close();
});

describe(`the agent client of ${GUIDE}`, () => {
  it('typechecks, and pays 0.01 XNO through the agent', async () => {
    const [client, ...more] = docBlocks(GUIDE, 'agents-guide');
    expect([client?.lang, more.length]).toEqual(['ts', 0]);
    const code = (client?.code as string).replace('http://127.0.0.1:7860', agent.url);
    expect(code).toContain(`'nano_1…'`);
    const dir = await programProject({ client: code.replace('nano_1…', RECIPIENT) });

    const checked = await typecheck(dir);
    expect(checked.stdout + checked.stderr).toBe('');
    expect(checked.code).toBe(0);

    const ran = await runCommand(process.execPath, [join(dir, 'client.mts')], { cwd: dir, env: { PATH: process.env.PATH }, timeoutMs: 60_000 });
    expect(ran.code, ran.stderr).toBe(0);
    const [, hash] = /^paid in block ([0-9A-F]{64})$/m.exec(ran.stdout) ?? [];
    expect(ran.stdout).toBe(`${agent.address} holds 1 XNO\npaid in block ${hash}\n`);
    const block = await new NodeClient({ url: sb.url }).blockInfo(hash as string);
    expect([block.confirmed, block.account, block.amountRaw, stateBlockOf(block).link]).toEqual([true, agent.address, xnoToRaw('0.01'), addressToPublicKey(RECIPIENT)]);
  }, 120_000);
});
