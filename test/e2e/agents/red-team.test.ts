import { spawnSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeClient } from '../../../src/api/node-client.js';
import { buildReceiveBlock, buildSendBlock, deriveAccount, hashBlock, rawToXno, xnoToRaw, type StateBlock } from '../../../src/nano/index.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { NanoPay } from '../../../src/sdk/nanopay.js';
import { chat, startAgentProcess } from '../../helpers/network/agent.js';
import { BIN, runCommand, userWithWallet, type CliUser } from '../../helpers/processes/cli.js';
import { onTerminal, ptyMissing } from '../../helpers/processes/pty.js';
import { fund, sandbox } from '../../helpers/ledger/sandbox.js';
import { startCommand, type RunningCommand } from '../../helpers/processes/serve.js';
import { tempDir } from '../../helpers/processes/temp.js';
import { stateBlockOf } from '../../helpers/ledger/chain.js';

/**
 * The red team: an agent running as the user, as Codex, Claude Code or
 * Copilot's agent mode run, with a shell, the user's files and the unlocked
 * session the guide gives it (`nanopay unlock --scope mcp`), and no key store
 * password. Every way it tries to spend above the person's policy, change
 * that policy or approve its own spend is refused, with the ledger unchanged
 * and a record in the audit trail. The same acts with the password succeed.
 * (What the docs promise of this boundary: docs/agents.md#what-an-agent-can-and-cannot-do.
 * The session's memory, read by another process of the user, and the mode where keys belong to another
 * user: test/e2e/agents/other-users.test.ts.)
 */

let sb: RunningSandbox;
let node: NodeClient;
let person: CliUser;
let address: string;
const stops: (() => Promise<void>)[] = [];
const OTHER = 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj';
const THIRD = 'nano_1111111111111111111111111111111111111111111111111111hifc8npp';
const DENIED = 'nano_3uzu9nxf8ywo61mws76fcpoeq865o59jri487fnjk14gthyoysqn7h8bft7m';
const FOURTH = deriveAccount({ seed: '2'.repeat(64), index: 0 }).address;
/** Tracing the person's commands needs strace (Debian's; .ci/run installs it). */
const straceMissing = spawnSync('strace', ['-V']).status === 0 ? undefined : 'strace is not installed';
if (straceMissing !== undefined && process.env.CI === 'true') throw new Error(`The red-team test needs strace in CI: ${straceMissing}`);
if (straceMissing !== undefined) console.warn(`the red-team test of tracing is skipped: ${straceMissing}`);
/** The agent's shell: the person's environment without the password. */
const AGENT = { NANOPAY_PASSWORD: '' };

interface Row {
  kind: string;
  decision: string;
  rule: string | null;
  front_end: string;
  approval_id: string | null;
  session: string | null;
  status: string | null;
  amount: string;
}

const balance = async (): Promise<bigint> => (await node.accountInfo(address))?.balanceRaw ?? 0n;
const audit = async (): Promise<Row[]> => {
  const out = (await person.run(['audit', '--json'])).stdout.trim();
  return out === '' ? [] : out.split('\n').map((line) => JSON.parse(line) as Row);
};
const agent = <T = Record<string, unknown>>(args: string[]) => person.json<T & { error?: { code: string; message: string; hint?: string; rule?: string } }>(args, { env: AGENT });

/**
 * One attempt of the agent: `act` must be refused (it asserts how); then the
 * ledger must not have moved, and the trail must have grown by records of
 * refusals (denied, or held for a person), none of them a spend that counts.
 */
async function attempt(act: () => Promise<void>): Promise<Row[]> {
  const before = await balance();
  const rows = (await audit()).length;
  await act();
  expect(await balance(), 'the ledger moved').toBe(before);
  const added = (await audit()).slice(rows);
  expect(added.length, 'no audit record of the attempt').toBeGreaterThan(0);
  for (const row of added) expect(['denied', 'approval_required']).toContain(row.decision);
  return added;
}

beforeAll(async () => {
  sb = await sandbox();
  node = new NodeClient({ url: sb.url });
  ({ user: person, address } = await userWithWallet(sb.url, '10'));
  // The person's policy, with the password, and the session the guide tells them to give an agent.
  for (const rule of [
    ['ask-above', '0.5'],
    ['per-send', '1', '--front-end', 'mcp'],
    ['day', '3'],
    ['deny', '--recipient', DENIED],
  ]) {
    expect((await person.run(['policy', 'set', ...rule])).code).toBe(0);
  }
  const unlocked = await person.json<{ pid: number; scope: string; undumpable: boolean }>(['unlock', '--for', '10m', '--scope', 'mcp']);
  expect(unlocked).toMatchObject({ _code: 0, scope: 'mcp', undumpable: true });
  stops.push(async () => void (await person.run(['lock'])));
});

afterAll(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  await sb?.close();
});

describe('an agent with a shell and the unlocked session, without the password', () => {
  it('cannot change the policy, seal it, or unlock a wider session: each is PASSWORD_REQUIRED, recorded', async () => {
    const loose = join(await tempDir('nanopay-red-'), 'loose.json');
    await writeFile(loose, '{}');
    for (const args of [
      ['policy', 'set', 'ask-above', '1000', '--front-end', 'mcp'],
      ['policy', 'unset', 'ask-above'],
      ['policy', 'set', 'day', '1000'],
      ['policy', 'set', '--from', loose],
      ['config', 'set', 'limit-per-send', '1000'],
      ['policy', 'seal'],
      ['unlock', '--for', '1h', '--scope', 'cli'],
    ]) {
      const rows = await attempt(async () => expect(await agent(args), args.join(' ')).toMatchObject({ _code: 6, error: { code: 'PASSWORD_REQUIRED' } }));
      expect(rows.at(-1), args.join(' ')).toMatchObject({ decision: 'denied', kind: args[0] === 'unlock' ? 'session' : 'policy' });
    }
    expect((await person.json(['policy', 'show'])).day).toBe('3');
  });

  it('cannot loosen the policy by editing config.json: every spend is then POLICY_TAMPERED until a person reseals it', async () => {
    const file = join(person.configDir, 'config.json');
    const original = await readFile(file, 'utf8');
    const edits: ((profile: Record<string, unknown>) => void)[] = [
      (p) => delete p.policy,
      (p) => (p.policy = { day: xnoToRaw('1000').toString() }),
      (p) => {
        delete p.policy;
        delete p.policySeal;
      },
      (p) => (p.limits = { perSend: xnoToRaw('1000').toString() }),
    ];
    try {
      for (const edit of edits) {
        const config = JSON.parse(original) as { profiles: { default: Record<string, unknown> } };
        edit(config.profiles.default);
        await writeFile(file, JSON.stringify(config));
        const rows = await attempt(async () => {
          const refused = await agent(['send', OTHER, '0.1', '--yes']);
          expect(refused).toMatchObject({ _code: 7, error: { code: 'POLICY_TAMPERED', hint: expect.stringContaining('policy seal') } });
        });
        expect(rows).toEqual([expect.objectContaining({ decision: 'denied', rule: 'seal', session: 'mcp' })]);
      }
    } finally {
      await writeFile(file, original);
    }
  });

  it('is judged by the scope granted at unlock whatever it calls itself: the CLI, the toolset and the SDK through the session meet the MCP rules and the deny list', async () => {
    const over = await attempt(async () => expect(await agent(['send', OTHER, '1.5', '--yes'])).toMatchObject({ _code: 7, error: { code: 'POLICY_DENIED', rule: 'per-send --front-end mcp' } }));
    expect(over).toEqual([expect.objectContaining({ decision: 'denied', front_end: 'mcp', session: 'mcp' })]);
    await attempt(async () => expect(await agent(['send', DENIED, '0.1', '--yes'])).toMatchObject({ _code: 7, error: { code: 'POLICY_DENIED', rule: 'deny --recipient' } }));
    // The HTTP toolset it starts on the session, and the SDK in a program of its own: judged as the scope too.
    const serve = await startCommand<{ url: string }>(['serve', '--port', '0', '--json'], { ...person.env, ...AGENT });
    stops.push(() => serve.stop());
    await attempt(async () => {
      const answer = await fetch(`${serve.printed.url}/wallet/send`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ recipient_address: OTHER, amount: '1.5' }) });
      expect(((await answer.json()) as { error: unknown }).error).toMatchObject({ error: 'POLICY_DENIED', rule: 'per-send --front-end mcp' });
    });
    const sdk = new NanoPay({ configDir: person.configDir, env: { ...person.env, ...AGENT } });
    await attempt(async () => expect(sdk.send(OTHER, '1.5')).rejects.toMatchObject({ code: 'POLICY_DENIED', details: { rule: 'per-send --front-end mcp' } }));
    await sdk.session.close();
    // A refusal tells what is left, never how to loosen the rule.
    const hint = (await agent(['send', OTHER, '1.5', '--yes'])).error?.hint ?? '';
    expect(hint).not.toMatch(/policy (set|unset|seal)|config set/);
  });

  it('cannot sign outside the scope by talking to the socket itself: a bare hash, a send over the scope, a forged previous block', async () => {
    const socket = join(person.configDir, 'sessions', 'default.sock');
    const ask = (request: unknown): Promise<{ ok: boolean; error?: { code: string; message: string } }> =>
      new Promise((resolve, reject) => {
        const client = connect(socket);
        let text = '';
        client.on('data', (d: Buffer) => (text += d.toString()));
        client.on('end', () => resolve(JSON.parse(text) as { ok: boolean; error?: { code: string; message: string } }));
        client.on('error', reject);
        client.on('connect', () => client.write(`${JSON.stringify(request)}\n`));
      });
    const info = await node.accountInfo(address);
    const previous = stateBlockOf(await node.blockInfo(info?.frontier as string));
    const head = { address, frontier: hashBlock(previous), balance: BigInt(previous.balance), representative: previous.representative };
    const { signature: _s, work: _w, ...shown } = previous;
    expect(await ask({ op: 'sign', wallet: 'default', index: 0, hash: hashBlock(buildSendBlock(head, { to: OTHER, amount: xnoToRaw('2') })) })).toMatchObject({ ok: false, error: { code: 'BAD_REQUEST' } });
    // The whole balance out, called nothing in particular: the session reads the amount from the balances.
    const all = buildSendBlock(head, { to: OTHER, amount: head.balance });
    const rows = await attempt(async () => expect(await ask({ op: 'sign', wallet: 'default', index: 0, block: all, previous: shown })).toMatchObject({ ok: false, error: { code: 'POLICY_DENIED' } }));
    expect(rows).toEqual([expect.objectContaining({ decision: 'denied', rule: 'per-send --front-end mcp', amount: rawToXno(head.balance) })]);
    // A previous block made up with a larger balance, so the send looks small: it does not hash to the block's previous.
    const madeUp: StateBlock = buildReceiveBlock({ ...head, frontier: previous.previous }, { sourceHash: 'A'.repeat(64), amount: head.balance * 2n });
    const small = buildSendBlock({ ...head, frontier: hashBlock(previous), balance: head.balance * 2n }, { to: OTHER, amount: head.balance + 1n });
    await attempt(async () => expect(await ask({ op: 'sign', wallet: 'default', index: 0, block: small, previous: madeUp })).toMatchObject({ ok: false, error: { code: 'INVALID_REQUEST', message: expect.stringContaining('does not hash') } }));
  });

  it.skipIf(ptyMissing !== undefined)("cannot approve its own held spend with a keystroke on a pseudo-terminal, nor without the password, nor by forging the store's row", async () => {
    // On a terminal the held spend is asked about: a y is typed, then the password is asked, which the agent has not.
    let id = '';
    await attempt(async () => {
      const terminal = onTerminal(['send', OTHER, '0.6', '--yes'], { ...person.env, ...AGENT }, { columns: 120 });
      await terminal.waitFor('Pay it?');
      terminal.type('y\r');
      for (const asked of ['Key store password:', '2 tries left', '1 try left']) {
        await terminal.waitFor(asked);
        terminal.type('y\r');
      }
      expect(await terminal.exited).toBe(6);
      expect(terminal.output).toContain('WRONG_PASSWORD');
    });
    const waiting = (await person.json<{ approvals: { id: string; amount: string; state: string }[] }>(['approvals', 'list'])).approvals;
    expect(waiting).toEqual([expect.objectContaining({ amount: '0.6', state: 'pending' })]);
    id = (waiting[0] as { id: string }).id;

    // approvals approve without the password, or with a wrong one.
    const wrong = join(await tempDir('nanopay-red-'), 'guess.txt');
    await writeFile(wrong, 'a guess\n', { mode: 0o600 });
    await attempt(async () => expect(await agent(['approvals', 'approve', id, '--yes'])).toMatchObject({ _code: 6, error: { code: 'PASSWORD_REQUIRED' } }));
    await attempt(async () => expect(await agent(['approvals', 'approve', id, '--yes', '--password-file', wrong])).toMatchObject({ _code: 6, error: { code: 'WRONG_PASSWORD' } }));

    // The row set to approved in the store itself (as sqlite3 would): it carries no person's seal.
    const db = new Database(join(person.configDir, 'store', 'default.sqlite'));
    const forge = (state: string): void => void db.prepare("UPDATE approvals SET state = ?, doc = json_set(doc, '$.state', ?, '$.decided_by', 'the password') WHERE id = ?").run(state, state, id);
    forge('approved');
    try {
      const rows = await attempt(async () => expect(await agent(['send', OTHER, '0.6', '--yes', '--approval', id])).toMatchObject({ _code: 10, error: { code: 'APPROVAL_INVALID', message: expect.stringContaining('seal') } }));
      expect(rows).toEqual([expect.objectContaining({ decision: 'denied', rule: 'approval', approval_id: id })]);
    } finally {
      forge('pending');
      db.close();
    }
  });

  it('cannot pay twice with one approval or split a held spend: an approval_id must fit the spend on any front end; smaller spends to the same recipient add up to the held rule', async () => {
    const held = await agent<{ error: { approval: { id: string } } }>(['send', OTHER, '0.6', '--yes']);
    expect(held).toMatchObject({ _code: 14, error: { code: 'APPROVAL_REQUIRED' } });
    const id = held.error.approval.id;
    // MCP's rules need no approval for 0.1: the id of another spend is still refused, not ignored.
    const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'], env: { ...person.env, ...AGENT } as Record<string, string>, stderr: 'pipe' });
    const mcp = new Client({ name: 'red-team', version: '1.0.0' });
    await mcp.connect(transport);
    stops.push(() => mcp.close());
    const call = async (args: Record<string, unknown>): Promise<{ success: boolean; error: { error: string; rule?: string } | null }> =>
      JSON.parse(((await mcp.callTool({ name: 'wallet_send', arguments: args })).content as { text: string }[])[0]?.text ?? 'null') as { success: boolean; error: { error: string; rule?: string } | null };
    await attempt(async () => expect((await call({ recipient_address: OTHER, amount: '0.1', approval_id: id })).error).toMatchObject({ error: 'APPROVAL_INVALID' }));
    // While 0.6 to OTHER waits, smaller spends there stop at the ask-above amount together.
    expect(await call({ recipient_address: OTHER, amount: '0.3' })).toMatchObject({ success: true });
    const split = await attempt(async () => expect((await call({ recipient_address: OTHER, amount: '0.3' })).error).toMatchObject({ error: 'APPROVAL_REQUIRED' }));
    expect(split).toEqual([expect.objectContaining({ decision: 'approval_required', rule: 'ask-above' })]);
  });

  it("gets no confirmation from the agent's chat: a held spend waits for a person's password there too", async () => {
    const running: RunningCommand = await startAgentProcess({ ...person.env, ...AGENT });
    stops.push(() => running.stop());
    const { url } = running.printed as { url: string };
    await attempt(async () => {
      const routed = (await (await fetch(`${url}/wallet/send`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ recipient_address: THIRD, amount: '0.7' }) })).json()) as {
        error: { error: string };
      };
      expect(routed.error).toMatchObject({ error: 'APPROVAL_REQUIRED' });
    });
    await attempt(async () => {
      const events = await (await chat(url, { message: `send 0.7 to ${THIRD}` })).all();
      expect(events.some((e) => e.type === 'confirm')).toBe(false);
      expect(events.find((e) => e.type === 'tool_result')).toMatchObject({ ok: false, error: { error: 'APPROVAL_REQUIRED' } });
    });
    const confirmed = await (await chat(url, { confirm: 'whatever-the-agent-guesses' })).all();
    expect(confirmed.find((e) => e.type === 'error')).toMatchObject({ error: { error: 'FORBIDDEN' } });
  });

  it("gets no room back by emptying the store: the session counts what it signed itself", async () => {
    // 0.3 to OTHER so far today; 2.5 more in spends of 0.5 (not above ask-above) brings the day to 2.8 of 3.
    for (let i = 0; i < 5; i++) expect(await agent(['send', FOURTH, '0.5', '--yes'])).toMatchObject({ _code: 0 });
    const db = new Database(join(person.configDir, 'store', 'default.sqlite'));
    db.prepare('DELETE FROM spend_audit').run();
    db.close();
    await attempt(async () => expect(await agent(['send', FOURTH, '0.5', '--yes'])).toMatchObject({ _code: 7, error: { code: 'POLICY_DENIED', rule: 'day' } }));
  });
});

describe('an agent that traces the person\'s commands', () => {
  it.skipIf(straceMissing !== undefined)('reads no password from them: a traced nanopay refuses to read one (UNSAFE_PROCESS), recorded; its memory is closed before it reads', async () => {
    for (const args of [['unlock', '--for', '1m', '--scope', 'cli'], ['policy', 'set', 'day', '1000']]) {
      await attempt(async () => {
        const traced = await runCommand('strace', ['-f', '-o', '/dev/null', process.execPath, BIN, ...args, '--json'], { env: person.env });
        expect(JSON.parse(traced.stdout), traced.stderr).toMatchObject({ error: { code: 'UNSAFE_PROCESS', message: expect.stringContaining('traces this one') } });
      });
    }
  });
});

describe('the same acts with the password', () => {
  it('succeed: the policy changes (recorded, before and after), a person approves, the approved spend is paid once', async () => {
    const set = await person.json(['policy', 'set', 'day', '10']);
    expect(set).toMatchObject({ _code: 0, day: '10' });
    const change = (await audit()).at(-1) as Row & { before: string; after: string; via: string };
    expect(change).toMatchObject({ kind: 'policy', decision: 'policy_changed', rule: 'set day 10', via: 'the key store password from the environment' });
    expect(JSON.parse(change.before)).toMatchObject({ day: '3' });
    expect(JSON.parse(change.after)).toMatchObject({ day: '10' });
    // The session was granted the day of 3: a later loosening waits for the next unlock; a person unlocks anew.
    expect(await person.json(['unlock', '--for', '10m', '--scope', 'mcp'])).toMatchObject({ _code: 0 });
    const held = await agent<{ error: { approval: { id: string } } }>(['send', THIRD, '0.8', '--yes']);
    expect(held).toMatchObject({ _code: 14 });
    const id = held.error.approval.id;
    expect(await person.json(['approvals', 'approve', id, '--yes'])).toMatchObject({ _code: 0, state: 'approved', decided_by: 'the key store password from the environment' });
    const before = await balance();
    expect(await agent(['send', THIRD, '0.8', '--yes', '--approval', id])).toMatchObject({ _code: 0 });
    expect(before - (await balance())).toBe(xnoToRaw('0.8'));
    expect((await audit()).at(-1)).toMatchObject({ decision: 'approved', approval_id: id, via: 'the key store password from the environment', session: 'mcp' });
    expect(await agent(['send', THIRD, '0.8', '--yes', '--approval', id])).toMatchObject({ _code: 10, error: { code: 'APPROVAL_INVALID' } });
  });

  it.skipIf(ptyMissing !== undefined)('a person at the terminal approves a held spend by typing the password', async () => {
    await fund(sb.url, address, '1');
    expect(await person.json(['receive'])).toMatchObject({ _code: 0 });
    const before = await balance();
    const terminal = onTerminal(['send', THIRD, '0.9', '--yes'], { ...person.env, ...AGENT }, { columns: 120 });
    await terminal.waitFor('Pay it?');
    terminal.type('y\r');
    await terminal.waitFor('Key store password:');
    terminal.type(`${person.env.NANOPAY_PASSWORD as string}\r`);
    expect(await terminal.exited, terminal.output).toBe(0);
    expect(before - (await balance())).toBe(xnoToRaw('0.9'));
    expect((await audit()).at(-1)).toMatchObject({ decision: 'approved', front_end: 'mcp', via: 'terminal, the key store password typed for it' });
  });
});
