import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FREE_CREDITS, type RunningSandbox } from '../../../src/sandbox/index.js';
import { findTool } from '../../../src/toolset/tools.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { commandSession, newUser, type CliUser } from '../../helpers/processes/cli.js';
import { docText } from '../../helpers/processes/docs.js';
import { fund, sandbox } from '../../helpers/ledger/sandbox.js';
import { paywallShop } from '../../helpers/ledger/x402.js';
import { startServe, type RunningCommand, type ServeProcess } from '../../helpers/processes/serve.js';

/**
 * What each command and tool costs in credits on the service, measured on the
 * sandbox (its prices: ../../../src/sandbox/pricing.ts): docs/agents.md's table
 * "What each call costs in credits" must be exactly what this measures, and
 * its sentence on how long the free credits last must follow from it.
 */
const DOC = 'docs/agents.md';
const HEADING = '## What each call costs in credits';

let sb: RunningSandbox;
let upstream: Server;
let paywall: RunningCommand<{ url: string }>;
let serve: ServeProcess | undefined;
let payer: Wallet;
let payee: Wallet;

interface Wallet {
  user: CliUser;
  address: string;
  apiKey: string;
}

async function remoteWallet(user: CliUser): Promise<Wallet> {
  const created = await user.json<{ address: string }>(['wallet', 'create', '--remote']);
  expect(created._code).toBe(0);
  return { user, address: created.address, apiKey: (await commandSession(user).apiKey()) as string };
}

const creditsOf = (wallet: Wallet): number => sb.service.snapshot().apiKeys[wallet.apiKey]?.credits as number;

beforeAll(async () => {
  sb = await sandbox();
  upstream = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('report'));
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  ({ paywall } = await paywallShop(sb, `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, '0.001'));
  payee = await remoteWallet(await newUser(sb.url));
  payer = await remoteWallet(await newUser(sb.url, { NANOPAY_FETCH_ALLOW_HOSTS: new URL(paywall.printed.url).host }));
  await fund(sb.url, payer.address, '10');
  expect((await payer.user.run(['receive'])).code).toBe(0);
});

afterAll(async () => {
  await serve?.stop();
  await paywall?.stop();
  upstream?.closeAllConnections();
  await new Promise((resolve) => upstream?.close(resolve));
  await sb?.close();
  await shutdownWorkers();
});

/** Credits `run` costs `wallet`'s key: what it had, plus what it bought, less what it has after. */
async function costOf(wallet: Wallet, run: () => Promise<unknown>, bought = 0): Promise<number> {
  const before = creditsOf(wallet);
  await run();
  return before + bought - creditsOf(wallet);
}

/** Runs `nanopay ARGS` as the payer (or `as`), which must succeed; its JSON document. */
async function command(args: string[], as: Wallet = payer): Promise<Record<string, any>> {
  const result = await as.user.json(args);
  expect(result._code, `nanopay ${args.join(' ')}`).toBe(0);
  return result;
}

const cli = (args: string[], bought = 0): Promise<number> => costOf(payer, () => command(args), bought);

/** Lines of serve's log that end a refresh of the work made ahead. */
const refreshes = (): number => (serve?.stderr().match(/work ready for the next block|could not precompute work/g) ?? []).length;

async function waitForRefresh(after: number): Promise<void> {
  for (let i = 0; i < 400 && refreshes() <= after; i++) await new Promise((resolve) => setTimeout(resolve, 50));
  expect(refreshes(), 'a refresh of the work made ahead').toBeGreaterThan(after);
}

/**
 * Calls the tool `name` through `nanopay serve` (the tools MCP offers) at `path`. A tool that writes (as
 * src/toolset/tools.ts declares it) costs, with it, the refresh of the work made ahead that follows it.
 */
async function tool(name: string, method: 'GET' | 'POST', path: string, body?: Record<string, unknown>, bought = 0): Promise<{ cost: number; data: Record<string, any> }> {
  let data: Record<string, any> = {};
  const cost = await costOf(
    payer,
    async () => {
      const seen = refreshes();
      const answer = await fetch(`${serve?.url}${path}`, { method, ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }) });
      const envelope = (await answer.json()) as { success: boolean; data: Record<string, any>; error: unknown };
      expect(envelope, `${name}: ${method} ${path}`).toMatchObject({ success: true });
      data = envelope.data;
      if (findTool(name).writes) await waitForRefresh(seen);
    },
    bought,
  );
  return { cost, data };
}

type Row = [command: string, credits: string, tool: string, toolCredits: string];

/** Measures every row of the table, in its order. */
async function measure(): Promise<Row[]> {
  const rows: Row[] = [];
  const row = (label: string, cost: number | undefined, toolLabel = '', toolCost?: number): void => {
    rows.push([label, cost === undefined ? '' : String(cost), toolLabel, toolCost === undefined ? '' : String(toolCost)]);
  };
  const paid = `${paywall.printed.url}/report`;

  // The commands, each in a process of its own.
  const fresh = await newUser(sb.url);
  const created = await remoteWallet(fresh);
  const cost = {
    create: FREE_CREDITS - creditsOf(created),
    balance: await cli(['balance']),
    pending: await cli(['pending']),
    receiveNothing: await cli(['receive']),
    receiveOne: await (async () => {
      await fund(sb.url, payer.address, '1');
      return cli(['receive']);
    })(),
    receiveTwo: await (async () => {
      await fund(sb.url, payer.address, '1');
      await fund(sb.url, payer.address, '1');
      return cli(['receive']);
    })(),
    send: await cli(['send', payee.address, '0.01', '--yes']),
    fetch: await cli(['fetch', paid, '--max', '0.01', '--yes']),
    fetchDry: await cli(['fetch', '--dry-run', paid, '--max', '0.01']),
    request: await cli(['request', '0.01']),
    status: 0,
    credits: await cli(['credits']),
    topup: await cli(['credits', 'topup', '10', '--yes'], 10),
    topupAtZero: await (async () => {
      sb.service.setCredits(payer.apiKey, 0);
      return cli(['credits', 'topup', '1000', '--yes'], 1000);
    })(),
    donate: await cli(['donate', '0.01', '--yes']),
    history: await cli(['history']),
    representative: await cli(['representative', 'set', payee.address, '--yes']),
  };
  const request = await command(['request', '0.01']);
  cost.status = await cli(['status', request.transaction_id]);

  // The tools, through one long-running server, as an agent calls them.
  serve = await startServe(payer.user);
  await waitForRefresh(0);
  await fund(sb.url, payer.address, '1');
  const tools = {
    balance: (await tool('wallet_balance', 'GET', '/wallet/balance')).cost,
    balanceReceiving: (await tool('wallet_balance', 'GET', '/wallet/balance?auto_receive_pending_blocks=true')).cost,
    send: (await tool('wallet_send', 'POST', '/wallet/send', { recipient_address: payee.address, amount: '0.01' })).cost,
    fetch: (await tool('http_fetch_paid', 'POST', '/http/fetch-paid', { url: paid, max_xno: '0.01' })).cost,
    fetchDry: (await tool('http_fetch_paid', 'POST', '/http/fetch-paid', { url: paid, max_xno: '0.01', dry_run: true })).cost,
    request: await tool('payment_request', 'POST', '/payment/request', { amount: '0.01' }),
    status: 0,
    credits: (await tool('credits_get', 'GET', '/credits')).cost,
    topup: (await tool('credits_topup', 'POST', '/credits/topup/10', undefined, 10)).cost,
    topupAtZero: await (async () => {
      sb.service.setCredits(payer.apiKey, 0);
      return (await tool('credits_topup', 'POST', '/credits/topup/1000', undefined, 1000)).cost;
    })(),
    donate: (await tool('donate_send', 'POST', '/donate/0.01')).cost,
    history: (await tool('wallet_history', 'GET', '/wallet/history')).cost,
    spending: (await tool('spending_status', 'GET', '/spending/status')).cost,
  };
  tools.status = (await tool('payment_status', 'GET', `/payment/status/${tools.request.data.transaction_id}`)).cost;

  row('`nanopay wallet create --remote`', cost.create);
  row('`nanopay balance`', cost.balance, '`wallet_balance`', tools.balance);
  row('`nanopay pending`', cost.pending);
  row('`nanopay receive`, nothing pending', cost.receiveNothing);
  row('`nanopay receive`, one block', cost.receiveOne, '`wallet_balance` with `auto_receive_pending_blocks`, one block', tools.balanceReceiving);
  row('`nanopay receive`, two blocks', cost.receiveTwo);
  row('`nanopay send`', cost.send, '`wallet_send`', tools.send);
  row('`nanopay fetch`, paid', cost.fetch, '`http_fetch_paid`', tools.fetch);
  row('`nanopay fetch --dry-run`', cost.fetchDry, '`http_fetch_paid` with `dry_run`', tools.fetchDry);
  row('`nanopay request`', cost.request, '`payment_request`', tools.request.cost);
  row('`nanopay status`', cost.status, '`payment_status`', tools.status);
  row('`nanopay credits`', cost.credits, '`credits_get`', tools.credits);
  row('`nanopay credits topup`', cost.topup, '`credits_topup`', tools.topup);
  row('`nanopay credits topup` at 0 credits', cost.topupAtZero, '`credits_topup` at 0 credits', tools.topupAtZero);
  row('`nanopay donate`', cost.donate, '`donate_send`', tools.donate);
  row('`nanopay history`', cost.history, '`wallet_history`', tools.history);
  row('`nanopay representative set`', cost.representative);
  row('', undefined, '`spending_status`', tools.spending);
  return rows;
}

/** The doc's section on credits: its table's rows (the header and rule left out), and its text. */
function documented(): { rows: Row[]; text: string } {
  const doc = docText(DOC);
  const start = doc.indexOf(`\n${HEADING}\n`);
  expect(start, `${DOC} has a section "${HEADING}"`).toBeGreaterThan(0);
  const end = doc.indexOf('\n## ', start + 1);
  const text = doc.slice(start, end === -1 ? undefined : end);
  const lines = text.split('\n').filter((line) => line.startsWith('|'));
  const rows = lines.slice(2).map((line) => line.slice(1, -1).split('|').map((cell) => cell.trim()) as Row);
  return { rows, text };
}

describe('credits: what each command and tool costs on the service', () => {
  it(`${DOC} lists what the sandbox measures, and how long the free credits last`, { timeout: 180_000 }, async () => {
    const measured = await measure();
    const { rows, text } = documented();
    expect(rows).toEqual(measured);

    const costOfRow = (label: string, column: 1 | 3): number => Number(measured.find((r) => r[column === 1 ? 0 : 2] === label)?.[column]);
    const lasting = (credits: number): string => String(Math.floor(FREE_CREDITS / credits));
    const sentence = `The free ${FREE_CREDITS.toLocaleString('en')} credits pay for ${lasting(costOfRow('`nanopay send`', 1))} sends or ${lasting(costOfRow('`nanopay fetch`, paid', 1))} paid fetches from the command line, and for ${lasting(costOfRow('`wallet_send`', 3))} sends or ${lasting(costOfRow('`http_fetch_paid`', 3))} paid fetches through the tools.`;
    expect(text.replace(/\s+/g, ' ')).toContain(sentence);
  });
});
