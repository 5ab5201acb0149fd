import { execFile, spawn } from 'node:child_process';
import { chmod, chown } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeClient } from '../../../src/api/node-client.js';
import { xnoToRaw } from '../../../src/nano/index.js';
import { receive } from '../../../src/ops/account/receive.js';
import { createRemoteWallet } from '../../../src/ops/profile/wallet.js';
import { Session } from '../../../src/ops/session.js';
import { setPolicyRule } from '../../../src/ops/spending/policy-edit.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { KeyStore } from '../../../src/wallet/keystore.js';
import { keystorePath } from '../../../src/wallet/paths.js';
import { BIN, PASSWORD } from '../../helpers/processes/cli.js';
import { addGroup, addOtherUser, otherUserUnavailable, type OtherUser } from '../../helpers/processes/other-user.js';
import { fund, sandbox } from '../../helpers/ledger/sandbox.js';
import { tempDir } from '../../helpers/processes/temp.js';

/**
 * The agent boundary where it needs other users of the machine (root makes
 * them; CI runs as root): the unlocked session's memory cannot be read by
 * another process of its own user, and the strongest mode, where the keys, the
 * policy and its records belong to one user and the agent runs as another,
 * reaching them through the shared session's socket only.
 */

const run = promisify(execFile);
const OTHER = 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj';
let sb: RunningSandbox;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await sb?.close();
});

async function user(): Promise<OtherUser> {
  const made = await addOtherUser();
  cleanups.push(() => made.remove());
  return made;
}

/** A config dir of `owner` with a wallet made by the sandbox's service, funded with `xno` (and `setup` done with the password), then handed over to them. */
async function walletOf(owner: OtherUser, xno: string, setup: (session: Session) => Promise<void> = async () => undefined): Promise<{ dir: string; env: NodeJS.ProcessEnv; address: string }> {
  const dir = await tempDir('nanopay-owner-');
  await KeyStore.create(keystorePath(dir), PASSWORD, 2 ** 10);
  const env = { NANOPAY_CONFIG_DIR: dir, HOME: dir, NANOPAY_API_URL: sb.url, NANOPAY_PASSWORD: PASSWORD, NO_COLOR: '1' };
  const session = new Session({ password: async () => PASSWORD, configDir: dir, env });
  const { address } = await createRemoteWallet(session);
  await fund(sb.url, address, xno);
  await receive(session);
  await setup(session);
  await session.close();
  await run('chown', ['-R', owner.name, dir]);
  return { dir, env, address };
}

/** What a process of `reader` gets opening another process's /proc files: 'read' or the error code. */
async function readProc(reader: OtherUser, pid: number): Promise<Record<string, string>> {
  const script = `
    const fs = require('fs');
    const out = {};
    for (const file of ['maps', 'environ', 'mem']) {
      try { const fd = fs.openSync('/proc/${pid}/' + file, 'r'); if (file !== 'mem') fs.readSync(fd, Buffer.alloc(64)); fs.closeSync(fd); out[file] = 'read'; }
      catch (error) { out[file] = error.code; }
    }
    process.stdout.write(JSON.stringify(out));`;
  const result = await reader.node(['-e', script]);
  return JSON.parse(result.stdout) as Record<string, string>;
}

describe.skipIf(otherUserUnavailable !== undefined)('the unlocked session and the other processes of its user', () => {
  it("cannot be read by another process of the same user (no /proc/PID/mem, maps or environ), while an ordinary process of that user can", async () => {
    const owner = await user();
    const { dir, env } = await walletOf(owner, '1');
    await chmod(dir, 0o700);
    const unlocked = await owner.node([BIN, 'unlock', '--for', '60s', '--json'], env);
    expect(unlocked.code, unlocked.stdout + unlocked.stderr).toBe(0);
    const { pid, undumpable } = JSON.parse(unlocked.stdout) as { pid: number; undumpable: boolean };
    cleanups.push(() => owner.node([BIN, 'lock'], env));
    expect(undumpable).toBe(true);

    // An ordinary process of the same user, which the same reader can read: the check can fail.
    const control = spawn('runuser', ['-u', owner.name, '--', process.execPath, '-e', 'process.stdout.write(String(process.pid)); setTimeout(() => {}, 60000)'], { stdio: ['ignore', 'pipe', 'ignore'] });
    cleanups.push(async () => control.kill('SIGKILL'));
    const controlPid = await new Promise<number>((resolve) => control.stdout.once('data', (d: Buffer) => resolve(Number(d.toString()))));
    expect(await readProc(owner, controlPid)).toEqual({ maps: 'read', environ: 'read', mem: 'read' });
    expect(await readProc(owner, pid)).toEqual({ maps: 'EACCES', environ: 'EACCES', mem: 'EACCES' });
  });
});

describe.skipIf(otherUserUnavailable !== undefined)('the strongest mode: the keys and the policy belong to another user', () => {
  it("the agent's user spends only through the shared session, within its owner's sealed policy, recorded in its owner's store; it reads and changes none of it; a user outside the group cannot connect", async () => {
    const owner = await user();
    const agent = await user();
    const stranger = await user();
    const group = await addGroup([owner, agent]);
    cleanups.push(() => group.remove());
    const { dir: ownerDir, env: ownerEnv, address } = await walletOf(owner, '3', async (session) => {
      await setPolicyRule(session, 'per-send', '1', {});
      await setPolicyRule(session, 'day', '2', {});
    });
    // The socket's directory: the owner's, the group may pass through it, nobody may write in it.
    const shared = await tempDir('nanopay-shared-');
    await chown(shared, owner.uid, group.gid);
    await chmod(shared, 0o710);
    const socket = join(shared, 'agent.sock');
    const unlocked = await owner.node([BIN, 'unlock', '--for', '2m', '--scope', 'agent', '--socket', socket, '--group', group.name, '--json'], ownerEnv);
    expect(unlocked.code, unlocked.stdout + unlocked.stderr).toBe(0);
    expect(JSON.parse(unlocked.stdout)).toMatchObject({ scope: 'agent', group: group.name, socket });
    cleanups.push(() => owner.node([BIN, 'lock', '--socket', socket], ownerEnv));

    // The agent's own user, config dir and no password of the owner's.
    const agentDir = await tempDir('nanopay-agent-user-');
    await run('chown', [agent.name, agentDir]);
    await chmod(agentDir, 0o700);
    const agentEnv = { NANOPAY_CONFIG_DIR: agentDir, HOME: agentDir, NANOPAY_API_URL: sb.url, NO_COLOR: '1' };
    const as = async (who: OtherUser, args: string[], env: NodeJS.ProcessEnv = agentEnv): Promise<Record<string, any>> => {
      const result = await who.node([BIN, ...args, '--json'], env);
      return { ...(JSON.parse(result.stdout) as Record<string, any>), _code: result.code };
    };
    const attached = await as(agent, ['wallet', 'attach', socket]);
    expect(attached).toMatchObject({ _code: 0, scope: 'agent', wallets: [expect.objectContaining({ name: 'default' })] });
    expect(await as(agent, ['balance'])).toMatchObject({ _code: 0, account: address, balance: '3' });

    const node = new NodeClient({ url: sb.url });
    const before = (await node.accountInfo(address))?.balanceRaw as bigint;
    expect(await as(agent, ['send', OTHER, '0.2', '--yes'])).toMatchObject({ _code: 0, hash: expect.stringMatching(/^[0-9A-F]{64}$/) });
    expect(await as(agent, ['send', OTHER, '1.5', '--yes'])).toMatchObject({ _code: 7, error: { code: 'POLICY_DENIED', rule: 'per-send' } });
    // Its profile has no policy of its own to loosen: the owner's session judges by the owner's.
    expect(await as(agent, ['policy', 'set', 'per-send', '100'], { ...agentEnv, NANOPAY_PASSWORD: 'the agent user password' })).toMatchObject({ _code: 2, error: { code: 'USAGE' } });
    expect(await as(agent, ['send', OTHER, '1.5', '--yes'])).toMatchObject({ _code: 7, error: { code: 'POLICY_DENIED', rule: 'per-send' } });
    expect((await node.accountInfo(address))?.balanceRaw).toBe(before - xnoToRaw('0.2'));

    // Nothing of the owner's is the agent's to read or change.
    const reads = await agent.node(['-e', `for (const f of ['config.json', 'keystore.json', 'store/default.sqlite']) { try { require('fs').readFileSync(${JSON.stringify(ownerDir)} + '/' + f); console.log(f, 'read'); } catch (e) { console.log(f, e.code); } }`]);
    expect(reads.stdout.trim().split('\n')).toEqual(['config.json EACCES', 'keystore.json EACCES', 'store/default.sqlite EACCES']);
    // A user outside the group cannot even connect.
    const strangerDir = await tempDir('nanopay-stranger-');
    await run('chown', [stranger.name, strangerDir]);
    expect(await as(stranger, ['wallet', 'attach', socket], { ...agentEnv, NANOPAY_CONFIG_DIR: strangerDir, HOME: strangerDir })).toMatchObject({ _code: 9, error: { code: 'NOT_FOUND' } });

    // The owner's trail has every decision, judged as the scope it granted.
    const trail = (await owner.node([BIN, 'audit', '--json'], ownerEnv)).stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, string>).filter((r) => r.kind !== 'policy');
    expect(trail.map((r) => `${r.front_end} ${r.decision} ${r.amount} ${r.session}`)).toEqual(['agent allowed 0.2 agent', 'agent denied 1.5 agent', 'agent denied 1.5 agent']);
  });
});
