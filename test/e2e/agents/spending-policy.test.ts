import { writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeClient } from '../../../src/api/node-client.js';
import { rawToXno, xnoToRaw } from '../../../src/nano/index.js';
import { receive } from '../../../src/ops/account/receive.js';
import { createWallet } from '../../../src/ops/profile/wallet.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { SqliteStore } from '../../../src/store/sqlite.js';
import { auditColumns } from '../../../src/store/spending.js';
import { userSession } from '../../helpers/ledger/backend-users.js';
import { BIN, newUser, type CliUser } from '../../helpers/processes/cli.js';
import { fund, sandbox } from '../../helpers/ledger/sandbox.js';
import { startCommand, type RunningCommand } from '../../helpers/processes/serve.js';
import { runWithCappedHeap } from '../../helpers/processes/capped-heap.js';

/**
 * The spending policy holds whoever spends: the built CLI in child processes,
 * the HTTP toolset (`serve`), MCP (the official client) and `fetch` against a
 * `paywall`, all on one profile, on the sandbox.
 */

interface Envelope {
  success: boolean;
  data: Record<string, unknown> | null;
  error: ({ error: string; message: string } & Record<string, unknown>) | null;
}

let sb: RunningSandbox;
let up: Server;
let upUrl: string;
let merchant: CliUser;
let merchantAddress: string;
let node: NodeClient;
const stops: (() => Promise<void>)[] = [];
const other = 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj';

beforeAll(async () => {
  sb = await sandbox();
  node = new NodeClient({ url: sb.url });
  up = createServer((req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end(`report ${req.url}`));
  await new Promise<void>((resolve) => up.listen(0, '127.0.0.1', resolve));
  upUrl = `http://127.0.0.1:${(up.address() as AddressInfo).port}`;
  merchant = await newUser(sb.url, { NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: sb.url });
  merchantAddress = (await createWallet(userSession(merchant))).address;
});

afterAll(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  up.closeAllConnections();
  await new Promise((resolve) => up.close(resolve));
  await sb.close();
});

/** A customer on the sandbox's node side with accounts 0..n-1, each funded with `xno` and received. */
async function customer(accounts: number, xno: string): Promise<{ user: CliUser; addresses: string[] }> {
  const user = await newUser(sb.url, { NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: sb.url });
  const session = userSession(user);
  await createWallet(session);
  const addresses: string[] = [];
  for (let i = 0; i < accounts; i++) {
    const address = await session.address(undefined, i);
    await fund(sb.url, address, xno);
    await receive(session, { index: i });
    addresses.push(address);
  }
  return { user, addresses };
}

async function startPaywall(price: string): Promise<string> {
  const paywall = await startCommand<{ url: string }>(['paywall', '--upstream', upUrl, '--price', price, '--to', merchantAddress, '--json'], merchant.env);
  stops.push(() => paywall.stop());
  return paywall.printed.url;
}

async function startMcp(user: CliUser): Promise<Client> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'], env: user.env as Record<string, string>, stderr: 'pipe' });
  const client = new Client({ name: 'nanopay-policy-test', version: '1.0.0' });
  await client.connect(transport);
  stops.push(() => client.close());
  return client;
}

async function mcpCall(client: Client, name: string, args: Record<string, unknown>): Promise<Envelope> {
  const result = await client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });
  return JSON.parse((result.content as { text: string }[])[0]?.text ?? 'null') as Envelope;
}

async function startServe(user: CliUser): Promise<RunningCommand<{ url: string }>> {
  const serve = await startCommand<{ url: string }>(['serve', '--port', '0', '--json'], user.env);
  stops.push(() => serve.stop());
  return serve;
}

async function post(url: string, body: unknown): Promise<Envelope> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return (await response.json()) as Envelope;
}

async function balanceOf(address: string): Promise<bigint> {
  return (await node.accountInfo(address))?.balanceRaw ?? 0n;
}

/** What one spend came to: 'paid', or its error code (and the rule of a refusal). */
type Outcome = { front: string; code: string; rule?: string };

describe('one budget, every front end', () => {
  it('20 spends at once through the CLI, the HTTP toolset, MCP and fetch stop exactly at the day budget; every refusal is POLICY_DENIED naming it', async () => {
    // Accounts 0 (serve, MCP), 1 (CLI sends) and 2 (fetch): the budget is the profile's, all accounts together.
    const { user, addresses } = await customer(3, '1');
    const paywall = await startPaywall('0.001');
    expect((await user.json(['policy', 'set', 'day', '0.01']))._code).toBe(0);
    const serve = await startServe(user);
    const mcp = await startMcp(user);
    const before = (await Promise.all(addresses.map(balanceOf))).reduce((a, b) => a + b, 0n);

    const cliSend = async (): Promise<Outcome> => {
      const r = await user.json<{ hash?: string; error?: { code: string; rule?: string } }>(['send', other, '0.001', '--yes', '--account', '1']);
      return { front: 'cli', code: r.error === undefined ? 'paid' : r.error.code, ...(r.error?.rule === undefined ? {} : { rule: r.error.rule }) };
    };
    const fetched = async (): Promise<Outcome> => {
      const r = await user.json<{ status?: number; payment?: unknown; error?: { code: string; rule?: string } }>(['fetch', `${paywall}/report`, '--max', '0.01', '--yes', '--account', '2']);
      return { front: 'fetch', code: r.error === undefined ? (r.status === 200 && r.payment !== null ? 'paid' : `HTTP ${r.status}`) : r.error.code, ...(r.error?.rule === undefined ? {} : { rule: r.error.rule }) };
    };
    const toolset = async (): Promise<Outcome> => {
      const r = await post(`${serve.printed.url}/wallet/send`, { recipient_address: other, amount: '0.001' });
      return { front: 'toolset', code: r.success ? 'paid' : (r.error?.error as string), ...(r.error?.rule === undefined ? {} : { rule: r.error.rule as string }) };
    };
    const viaMcp = async (): Promise<Outcome> => {
      const r = await mcpCall(mcp, 'wallet_send', { recipient_address: other, amount: '0.001' });
      return { front: 'mcp', code: r.success ? 'paid' : (r.error?.error as string), ...(r.error?.rule === undefined ? {} : { rule: r.error.rule as string }) };
    };
    const spends = [...Array(6).fill(cliSend), ...Array(5).fill(fetched), ...Array(5).fill(toolset), ...Array(4).fill(viaMcp)] as (() => Promise<Outcome>)[];
    const outcomes = await Promise.all(spends.map((spend) => spend()));

    const paid = outcomes.filter((o) => o.code === 'paid');
    const refused = outcomes.filter((o) => o.code !== 'paid');
    expect(paid.length, JSON.stringify(outcomes)).toBe(10);
    expect(refused.every((o) => o.code === 'POLICY_DENIED' && o.rule === 'day'), JSON.stringify(refused)).toBe(true);
    // The ledger: exactly the budget left the profile's accounts, no more.
    const after = (await Promise.all(addresses.map(balanceOf))).reduce((a, b) => a + b, 0n);
    expect(rawToXno(before - after)).toBe('0.01');
    // The trail: every decision, with the front end that asked.
    const trail = (await user.run(['audit', '--json'])).stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, string>);
    expect(trail.filter((r) => r.decision === 'allowed' && r.status === 'paid')).toHaveLength(10);
    expect(trail.filter((r) => r.decision === 'denied' && r.rule === 'day')).toHaveLength(10);
    expect(new Set(trail.map((r) => r.front_end))).toEqual(new Set(['cli', 'toolset', 'mcp']));
    expect(trail.filter((r) => r.kind === 'x402').every((r) => r.host === new URL(paywall).host)).toBe(true);
    // A refusal says what is left of the budget.
    const over = await user.json<{ error: { code: string; rule: string; remaining: string } }>(['send', other, '0.001', '--yes']);
    expect(over).toMatchObject({ _code: 7, error: { code: 'POLICY_DENIED', rule: 'day', remaining: '0' } });
  });
});

describe('approvals', () => {
  it('a spend above ask-above waits under an id; only a person approves it (the password); it then runs once, exactly as asked, across processes', async () => {
    const { user } = await customer(1, '1');
    await user.run(['policy', 'set', 'ask-above', '0.1']);
    // No terminal: the CLI holds it too (--yes skips a question, never a rule).
    const held = await user.json<{ error: { code: string; approval: { id: string; amount: string } } }>(['send', other, '0.2', '--yes']);
    expect(held).toMatchObject({ _code: 14, error: { code: 'APPROVAL_REQUIRED', approval: { amount: '0.2', rule: 'ask-above' } } });
    const id = held.error.approval.id;
    expect(id).toMatch(/^apr_[A-Za-z0-9_-]{22}$/);
    // Asking again for the same spend names the same approval.
    expect((await user.json<{ error: { approval: { id: string } } }>(['send', other, '0.2', '--yes'])).error.approval.id).toBe(id);
    const listed = await user.json<{ approvals: { id: string; state: string; front_end: string }[] }>(['approvals', 'list']);
    expect(listed.approvals).toEqual([expect.objectContaining({ id, state: 'pending', front_end: 'cli' })]);

    // An agent through MCP can neither approve (there is no such tool), nor use the CLI's approval, nor say it is the CLI.
    const mcp = await startMcp(user);
    const { tools } = await mcp.listTools();
    expect(tools.map((t) => t.name).some((n) => /approv/.test(n))).toBe(false);
    expect((await mcpCall(mcp, 'wallet_send', { recipient_address: other, amount: '0.2', approval_id: id })).error).toMatchObject({ error: 'APPROVAL_INVALID' });
    expect((await mcpCall(mcp, 'wallet_send', { recipient_address: other, amount: '0.2', front_end: 'cli' })).error).toMatchObject({ error: 'INVALID_REQUEST' });
    // While it waits, the id pays nothing.
    expect(await user.json(['send', other, '0.2', '--yes', '--approval', id])).toMatchObject({ _code: 14, error: { code: 'APPROVAL_REQUIRED', approval: { id } } });

    // The person: a wrong password answers nothing; the right one approves.
    const wrong = await user.json(['approvals', 'approve', id, '--yes'], { env: { NANOPAY_PASSWORD: 'not the password' } });
    expect(wrong).toMatchObject({ _code: 6, error: { code: 'WRONG_PASSWORD' } });
    expect(await user.json(['approvals', 'approve', id, '--yes'])).toMatchObject({ _code: 0, state: 'approved', decided_by: 'the key store password from the environment' });

    // Bound to exactly that spend: not another amount, not another front end.
    expect(await user.json(['send', other, '0.3', '--yes', '--approval', id])).toMatchObject({ _code: 10, error: { code: 'APPROVAL_INVALID' } });
    expect((await mcpCall(mcp, 'wallet_send', { recipient_address: other, amount: '0.2', approval_id: id })).error).toMatchObject({ error: 'APPROVAL_INVALID' });
    const sent = await user.json<{ hash: string }>(['send', other, '0.2', '--yes', '--approval', id]);
    expect(sent).toMatchObject({ _code: 0, hash: expect.stringMatching(/^[0-9A-F]{64}$/) });
    // Used once: an approval of 0.2 XNO pays 0.2 XNO once.
    expect(await user.json(['send', other, '0.2', '--yes', '--approval', id])).toMatchObject({ _code: 10, error: { code: 'APPROVAL_INVALID', message: expect.stringContaining('used already') } });
    const trail = (await user.run(['audit', '--json'])).stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, string>);
    expect(trail.map((r) => `${r.front_end} ${r.decision}`)).toEqual([
      'cli policy_changed',
      'cli approval_required',
      'cli approval_required',
      'mcp denied',
      'cli approval_required',
      'cli denied',
      'cli denied',
      'mcp denied',
      'cli approved',
      'cli denied',
    ]);
    // The wrong password's attempt to approve, recorded; every other refusal is the approval's.
    expect(trail[5]).toMatchObject({ kind: 'approval', rule: `approve ${id}`, approval_id: id, message: expect.stringContaining('WRONG_PASSWORD') });
    expect(trail.filter((r) => r.decision === 'denied' && r.kind !== 'approval').every((r) => r.rule === 'approval' && r.approval_id === id)).toBe(true);
    expect(trail[8]).toMatchObject({ approval_id: id, hash: sent.hash, status: 'paid', rule: 'ask-above', via: 'the key store password from the environment' });
  });

  it('an approval expires: after its time it can be neither approved nor used; deny refuses it for good', async () => {
    const { user } = await customer(1, '1');
    await user.run(['policy', 'set', 'ask-above', '0.1']);
    await user.run(['policy', 'set', 'approval-ttl', '1s']);
    const first = (await user.json<{ error: { approval: { id: string; expires_at: string } } }>(['send', other, '0.2', '--yes'])).error.approval;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(first.expires_at) - Date.now()) + 50));
    expect(await user.json(['approvals', 'approve', first.id, '--yes'])).toMatchObject({ _code: 10, error: { code: 'APPROVAL_INVALID', message: expect.stringContaining('expired') } });
    await user.run(['policy', 'set', 'approval-ttl', '1h']);
    const second = (await user.json<{ error: { approval: { id: string } } }>(['send', other, '0.2', '--yes'])).error.approval;
    expect(second.id).not.toBe(first.id);
    expect(await user.json(['approvals', 'deny', second.id, '--yes'])).toMatchObject({ _code: 0, state: 'denied' });
    expect(await user.json(['send', other, '0.2', '--yes', '--approval', second.id])).toMatchObject({ _code: 10, error: { code: 'APPROVAL_INVALID', message: expect.stringContaining('denied') } });
    expect(await user.json(['approvals', 'approve', second.id, '--yes'])).toMatchObject({ _code: 10, error: { code: 'APPROVAL_INVALID' } });
  });

  it('an x402 payment above ask-above waits bound to its host and requirement; approved, fetch --approval pays it once', async () => {
    const { user, addresses } = await customer(1, '1');
    const paywall = await startPaywall('0.2');
    await user.run(['policy', 'set', 'ask-above', '0.1']);
    const held = await user.json<{ error: { code: string; approval: { id: string; host: string } } }>(['fetch', `${paywall}/report`, '--max', '1', '--yes']);
    expect(held).toMatchObject({ _code: 14, error: { code: 'APPROVAL_REQUIRED', approval: { host: new URL(paywall).host, amount: '0.2' } } });
    const before = await balanceOf(addresses[0] as string);
    await user.run(['approvals', 'approve', held.error.approval.id, '--yes']);
    const paid = await user.json<{ status: number; body: string; payment: { amount: string } }>(['fetch', `${paywall}/report`, '--max', '1', '--yes', '--approval', held.error.approval.id]);
    expect(paid).toMatchObject({ _code: 0, status: 200, body: 'report /report', payment: { amount: '0.2' } });
    expect(before - (await balanceOf(addresses[0] as string))).toBe(xnoToRaw('0.2'));
    expect(await user.json(['fetch', `${paywall}/report`, '--max', '1', '--yes', '--approval', held.error.approval.id])).toMatchObject({ _code: 10, error: { code: 'APPROVAL_INVALID' } });
  });
});

describe('the settings of earlier versions', () => {
  it('limit-per-send, limit-per-day and x402-max written by an earlier version keep their meaning as rules of the policy', async () => {
    const { user } = await customer(1, '1');
    const paywall = await startPaywall('0.002');
    // What an earlier version kept in config.json.
    const config = JSON.parse(await (await import('node:fs/promises')).readFile(join(user.configDir, 'config.json'), 'utf8')) as { profiles: Record<string, Record<string, unknown>> };
    Object.assign(config.profiles.default as object, { limits: { perSend: xnoToRaw('0.5').toString(), perDay: xnoToRaw('0.6').toString() }, x402Max: xnoToRaw('0.001').toString() });
    await writeFile(join(user.configDir, 'config.json'), JSON.stringify(config));
    expect(await user.json(['policy', 'show'])).toMatchObject({ 'per-send': '0.5', day: '0.6', 'front-ends': { x402: { 'per-send': '0.001' } } });
    // Written behind the seal (here, as a version before seals wrote it), it holds once a person seals it; the upgrade
    // itself seals at the key store's first unlock (test/integration/policy-seal.test.ts).
    expect(await user.json(['send', other, '0.1', '--yes'])).toMatchObject({ _code: 7, error: { code: 'POLICY_TAMPERED' } });
    expect(await user.json(['policy', 'seal'])).toMatchObject({ _code: 0, 'per-send': '0.5' });
    expect(await user.json(['config', 'get', 'x402-max'])).toMatchObject({ value: '0.001', source: 'profile' });
    expect(await user.json(['send', other, '0.51', '--yes'])).toMatchObject({ _code: 7, error: { code: 'POLICY_DENIED', rule: 'per-send' } });
    expect(await user.json(['send', other, '0.4', '--yes'])).toMatchObject({ _code: 0 });
    expect(await user.json(['send', other, '0.4', '--yes'])).toMatchObject({ _code: 7, error: { code: 'POLICY_DENIED', rule: 'day', remaining: '0.2' } });
    // x402-max holds whatever --max says: it is a rule of the policy, not a default of the command.
    expect(await user.json(['fetch', `${paywall}/report`, '--max', '1', '--yes'])).toMatchObject({ _code: 7, error: { code: 'POLICY_DENIED', rule: 'per-send --front-end x402' } });
    // Changed through config set, it is written as the policy's rule.
    await user.run(['config', 'set', 'x402-max', '0.01']);
    expect(await user.json(['fetch', `${paywall}/report`, '--yes'])).toMatchObject({ _code: 0, status: 200 });
    const list = await user.json<{ policy: Record<string, unknown> }>(['config', 'list']);
    expect(list.policy).toMatchObject({ 'per-send': '0.5', day: '0.6', 'front-ends': { x402: { 'per-send': '0.01' } } });
  });
});

/** Runs `nanopay audit ARGS` and returns its output and the process's peak resident memory (kB). */
describe('the audit trail', () => {
  it('streams 100,000 decisions in constant memory (--json), and writes CSV as RFC 4180', async () => {
    const small = await newUser(sb.url);
    const large = await newUser(sb.url);
    const fill = async (user: CliUser, count: number): Promise<void> => {
      const store = await SqliteStore.open(join(user.configDir, 'store', 'default.sqlite'), join(user.configDir, 'locks'), 'store-default');
      const insert = store.db.prepare('INSERT INTO spend_audit (id, profile, at_ms, account, counts, hash, status, settled_at, doc) VALUES (@id, @profile, @at_ms, @account, @counts, @hash, @status, @settled_at, @doc)');
      store.db.transaction(() => {
        for (let i = 0; i < count; i++) {
          insert.run(
            auditColumns({
              id: `rec-${i}`,
              at: new Date(Date.parse('2026-01-01T00:00:00Z') + i * 1000).toISOString(),
              profile: 'default',
              front_end: ['cli', 'mcp', 'toolset'][i % 3] as string,
              kind: 'send',
              account: other,
              recipient: other,
              amount_raw: String(1000 + i),
              decision: i % 2 === 0 ? 'allowed' : 'denied',
              rule: i % 2 === 0 ? null : 'day',
              message: `The send of ${i} raw, to "someone", was judged\nhere`,
            }),
          );
        }
      })();
      await store.close();
    };
    await fill(small, 10_000);
    await fill(large, 100_000);
    // The same small heap for ten times the trail: a page at a time, never the whole of it.
    const a = await runWithCappedHeap(['audit', '--json'], small.env, 32);
    const b = await runWithCappedHeap(['audit', '--json'], large.env, 32);
    expect([a.code, a.lines], a.stderr).toEqual([0, 10_000]);
    expect([b.code, b.lines], b.stderr).toEqual([0, 100_000]);
    expect(JSON.parse(b.head.split('\n')[0] as string)).toMatchObject({ id: 'rec-0', front_end: 'cli', decision: 'allowed', amount_raw: '1000' });

    const csv = await small.run(['audit', '--csv', '--since', '2026-01-01T02:46:38Z']);
    const records = csv.stdout.split('\r\n');
    expect(records[0]).toBe('at,front_end,kind,decision,rule,amount,amount_raw,recipient,contact,host,account,hash,status,approval_id,via,session,before,after,message,id');
    // 9998 s after the first: records 9998 and 9999 (a message with a comma, quotes and a line break is quoted, its quotes doubled).
    expect(records[1]).toBe(`2026-01-01T02:46:38.000Z,toolset,send,allowed,,0.000000000000000000000000010998,10998,${other},,,${other},,,,,,,,"The send of 9998 raw, to ""someone"", was judged\nhere",rec-9998`);
    expect(records.length).toBe(4);
    expect(records[3]).toBe('');
  });
});
