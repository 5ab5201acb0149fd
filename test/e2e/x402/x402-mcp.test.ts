import { existsSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { HTTPFacilitatorClient, x402ResourceServer } from '@x402/core/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeClient } from '../../../src/api/node-client.js';
import { hashBlock, xnoToRaw, type StateBlock } from '../../../src/nano/index.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { NanoPay } from '../../../src/sdk/nanopay.js';
import { nanoRequirement } from '../../../src/x402/nano-exact.js';
import { signCheque } from '../../../src/x402/client.js';
import type { PaymentRequirements } from '../../../src/x402/protocol.js';
import { nanoExactClientScheme, nanoExactServerScheme } from '../../../src/x402/schemes.js';
import { nodeMerchantAndCustomer } from '../../helpers/ledger/node-users.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { BIN, PASSWORD, type CliUser } from '../../helpers/processes/cli.js';
import { startCommand, type RunningCommand } from '../../helpers/processes/serve.js';
import { tempDir } from '../../helpers/processes/temp.js';
import { fund } from '../../helpers/ledger/sandbox.js';

const FIXTURE = fileURLToPath(new URL('../../fixtures/mcp/weather-server.mjs', import.meta.url));

/** The reference @x402/mcp (coinbase/x402), which the registry here does not serve: .ci/run installs it from the tools beside the repository. */
const referenceName = '@x402/mcp';
const reference = (await import(referenceName).catch(() => undefined)) as Record<string, any> | undefined;
const missing = reference === undefined ? '@x402/mcp is not installed (.ci/run installs it with npm install --no-save from the tools beside the repository)' : undefined;
if (missing !== undefined && process.env.CI !== undefined) throw new Error(`CI installs the reference @x402/mcp, and it is missing: ${missing}`);

let sb: RunningSandbox;
let merchant: CliUser;
let customer: CliUser;
let merchantAddress: string;
let node: NodeClient;
let runsDir: string;

beforeAll(async () => {
  sb = await sandbox();
  ({ merchant, customer, merchantAddress } = await nodeMerchantAndCustomer(sb, {}));
  node = new NodeClient({ url: sb.url });
  runsDir = await tempDir('nanopay-mcp-runs-');
});
afterAll(async () => {
  await sb.close();
  for (const u of [merchant, customer]) await rm(u.configDir, { recursive: true, force: true });
});

const runs = (file: string): string[] => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);
const textOf = (result: { content: unknown }): string => ((result.content as { text?: string }[])[0]?.text ?? '') as string;

/**
 * The seller's nanopay variables, given to the inner paywall on its command line (`env`): mcp connect passes the server
 * it fronts none of its own (the buyer's password never reaches it).
 */
const sellerEnv = (user: CliUser): string[] => [`HOME=${user.configDir}`, ...Object.entries(user.env).filter(([name]) => name.startsWith('NANOPAY_')).map(([name, value]) => `${name}=${value ?? ''}`)];

/** `nanopay paywall --mcp` selling the fixture's forecast and broken tools at 0.001 XNO, as the merchant, as a client's transport. */
function sellingTransport(runsFile: string): StdioClientTransport {
  return new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'paywall', '--mcp', '--tool', 'forecast=0.001', '--tool', 'broken=0.001', '--', process.execPath, FIXTURE],
    env: { ...(merchant.env as Record<string, string>), RUNS_FILE: runsFile },
    stderr: 'ignore',
  });
}

describe('nanopay sells and buys MCP tools (x402 over MCP, Nano exact)', () => {
  it('mcp connect pays a tool of paywall --mcp once; free tools pass; a failed tool costs nothing; a per-tool deny rule refuses before anything is signed', async () => {
    const runsFile = join(runsDir, 'connect.txt');
    const inner = ['env', ...sellerEnv(merchant), `RUNS_FILE=${runsFile}`, process.execPath, BIN, 'paywall', '--mcp', '--tool', 'forecast=0.001', '--tool', 'broken=0.001', '--', process.execPath, FIXTURE];
    const client = new Client({ name: 'agent', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp', 'connect', 'weather', '--max', '0.01', '--', ...inner], env: customer.env as Record<string, string>, stderr: 'ignore' }));
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['forecast', 'broken', 'slow', 'echo', 'environment']);
      // The fronted server sees none of nanopay's variables (the seller's password among them).
      expect(JSON.parse(textOf((await client.callTool({ name: 'environment', arguments: {} })) as CallToolResult))).toEqual([]);
      const paid = (await client.callTool({ name: 'forecast', arguments: { city: 'Lisbon' } })) as CallToolResult;
      expect(textOf(paid)).toBe('sunny in Lisbon');
      const settlement = (paid._meta as Record<string, any>)['x402/payment-response'];
      expect(settlement).toMatchObject({ success: true, network: 'nano:dev', amount: xnoToRaw('0.001').toString() });
      const info = await node.blockInfo(settlement.transaction);
      expect([info.confirmed, info.amountRaw]).toEqual([true, xnoToRaw('0.001')]);
      expect(runs(runsFile)).toEqual(['Lisbon']);
      expect(textOf((await client.callTool({ name: 'echo', arguments: { city: 'x' } })) as CallToolResult)).toBe('echo {"city":"x"}');
      const broken = (await client.callTool({ name: 'broken', arguments: {} })) as CallToolResult;
      expect([broken.isError, textOf(broken)]).toEqual([true, 'the forecast service is down']);

      expect((await customer.json(['policy', 'set', 'deny', '--host', 'mcp:weather/forecast']))._code).toBe(0);
      const denied = (await client.callTool({ name: 'forecast', arguments: { city: 'Porto' } })) as CallToolResult;
      expect(denied.isError).toBe(true);
      expect(JSON.parse(textOf(denied))).toMatchObject({ error: 'POLICY_DENIED', rule: 'deny --host' });
      expect(runs(runsFile)).toEqual(['Lisbon']);
    } finally {
      await client.close();
    }
  });
});

describe('a tool whose settlement fails', () => {
  it('returns no tool output: the payer spent its previous while the tool ran, so the block can never land', async () => {
    const runsFile = join(runsDir, 'failed-settlement.txt');
    const users = await nodeMerchantAndCustomer(sb, {});
    const sdk = new NanoPay({ password: PASSWORD, env: users.customer.env });
    const client = new Client({ name: 'agent', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [BIN, 'paywall', '--mcp', '--tool', 'slow=0.001', '--', process.execPath, FIXTURE],
        env: { ...(users.merchant.env as Record<string, string>), RUNS_FILE: runsFile },
        stderr: 'ignore',
      }),
    );
    try {
      const asked = (await client.callTool({ name: 'slow', arguments: { city: 'Evora' } })) as CallToolResult;
      const required = asked.structuredContent as { resource: unknown; accepts: PaymentRequirements[] };
      const chosen = required.accepts[0] as PaymentRequirements;
      const block = await signCheque(sdk.session, chosen, { maxXno: '0.01', chequeFor: 'mcp:weather/slow' });
      const call = client.callTool({ name: 'slow', arguments: { city: 'Evora' }, _meta: { 'x402/payment': { x402Version: 2, resource: required.resource, accepted: chosen, payload: { block } } } });
      while (runs(runsFile).length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
      // The tool runs: the payer's account moves on (another receive), on the previous the payment was built on.
      await fund(sb.url, await sdk.session.address(), '0.1');
      await sdk.receive();
      const failed = (await call) as CallToolResult;
      expect(failed.isError).toBe(true);
      expect(JSON.stringify(failed.content)).not.toContain('slowly sunny');
      expect((failed._meta as Record<string, any>)['x402/payment-response']).toMatchObject({ success: false });
      expect(failed.structuredContent).toMatchObject({ x402Version: 2, error: expect.stringMatching(/settlement failed/) });
      await expect(node.blockInfo(hashBlock(block))).rejects.toMatchObject({ code: 'BLOCK_NOT_FOUND' });
      expect(runs(runsFile)).toEqual(['slow Evora']);
    } finally {
      await client.close();
      await sdk.session.close();
      for (const u of [users.merchant, users.customer]) await rm(u.configDir, { recursive: true, force: true });
    }
  });
});

describe('MCP tools paid in a Nano session', () => {
  it('mcp connect --session pays paywall --mcp --sessions by voucher: one deposit for many calls, a failed tool charged nothing, the rest refunded at close', async () => {
    const users = await nodeMerchantAndCustomer(sb, {});
    const runsFile = join(runsDir, 'session.txt');
    const inner = ['env', ...sellerEnv(users.merchant), `RUNS_FILE=${runsFile}`, process.execPath, BIN, 'paywall', '--mcp', '--sessions', '--session-deposit', '0.01', '--tool', 'forecast=0.001', '--tool', 'broken=0.001', '--', process.execPath, FIXTURE];
    const client = new Client({ name: 'agent', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp', 'connect', 'weather', '--max', '0.01', '--session', '--', ...inner], env: users.customer.env as Record<string, string>, stderr: 'ignore' }));
    try {
      const start = BigInt((await users.customer.json<{ balance_raw: string }>(['balance'])).balance_raw);
      for (const city of ['Lisbon', 'Porto', 'Faro']) {
        const paid = (await client.callTool({ name: 'forecast', arguments: { city } })) as CallToolResult;
        expect(textOf(paid)).toBe(`sunny in ${city}`);
        expect((paid._meta as Record<string, any>)['x402/payment-response']).toMatchObject({ success: true, session: { spent_raw: expect.any(String) } });
      }
      const broken = (await client.callTool({ name: 'broken', arguments: {} })) as CallToolResult;
      expect([broken.isError, textOf(broken)]).toEqual([true, 'the forecast service is down']);
      expect(runs(runsFile)).toEqual(['Lisbon', 'Porto', 'Faro']);
      const listed = await users.customer.json<{ sessions: Record<string, any>[] }>(['sessions']);
      expect(listed.sessions).toHaveLength(1);
      expect(listed.sessions[0]).toMatchObject({ state: 'open', deposit: '0.01', spent: '0.003' });
      const closed = await users.customer.json<Record<string, any>>(['sessions', 'close', listed.sessions[0]?.session]);
      expect(closed).toMatchObject({ spent: '0.003', refunded: '0.007', refund_confirmed: true });
      await users.customer.json(['receive']);
      expect(start - BigInt((await users.customer.json<{ balance_raw: string }>(['balance'])).balance_raw)).toBe(xnoToRaw('0.003'));
    } finally {
      await client.close();
      for (const u of [users.merchant, users.customer]) await rm(u.configDir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(missing !== undefined)(`interoperability with the reference @x402/mcp${missing === undefined ? '' : ` (skipped: ${missing})`}`, () => {
  let nanopay: NanoPay;
  let facilitator: RunningCommand<{ url: string }>;
  beforeAll(async () => {
    expect((await customer.json(['policy', 'unset', 'deny', '--host', 'mcp:weather/forecast']))._code).toBe(0);
    nanopay = new NanoPay({ password: PASSWORD, env: customer.env });
    facilitator = await startCommand(['facilitator', '--json'], merchant.env);
  });
  afterAll(async () => {
    await facilitator?.stop();
    await nanopay?.session.close();
  });

  it("the reference client (wrapMCPClientWithPayment with nanopay's Nano scheme) pays a priced tool of nanopay paywall --mcp; a replay and a failed tool are not paid", async () => {
    const runsFile = join(runsDir, 'reference-client.txt');
    const payloads: { payload: { block: StateBlock } }[] = [];
    const client = reference?.wrapMCPClientWithPaymentFromConfig(new Client({ name: 'reference-agent', version: '1.0.0' }), {
      schemes: [{ network: 'nano:dev', client: nanoExactClientScheme(nanopay, { maxXno: '0.01' }) }],
      spendControls: { allowedAssets: [{ network: 'nano:dev', asset: 'XNO', maxAmountPerPayment: xnoToRaw('0.01').toString() }] },
    });
    client.onAfterPayment(async (context: { paymentPayload: { payload: { block: StateBlock } } }) => void payloads.push(context.paymentPayload));
    await client.connect(sellingTransport(runsFile));
    try {
      const unpaid = (await client.client.callTool({ name: 'forecast', arguments: { city: 'Faro' } })) as CallToolResult;
      expect(unpaid).toMatchObject({ isError: true, structuredContent: { x402Version: 2, accepts: [{ scheme: 'exact', network: 'nano:dev', payTo: merchantAddress, amount: xnoToRaw('0.001').toString() }] } });
      expect(runs(runsFile)).toEqual([]);

      const paid = await client.callTool('forecast', { city: 'Lisbon' });
      expect(paid).toMatchObject({ paymentMade: true, content: [{ text: 'sunny in Lisbon' }], paymentResponse: { success: true, network: 'nano:dev' } });
      const hash = paid.paymentResponse.transaction as string;
      expect(hash).toBe(hashBlock(payloads[0]?.payload.block as StateBlock));
      const info = await node.blockInfo(hash);
      expect([info.confirmed, info.amountRaw]).toEqual([true, xnoToRaw('0.001')]);

      // The same payment again: refused, and the tool does not run again.
      const replay = await client.callToolWithPayment('forecast', { city: 'Lisbon' }, payloads[0]);
      expect(replay.isError).toBe(true);
      expect(runs(runsFile)).toEqual(['Lisbon']);

      // A tool that fails: its payment is never published.
      const broken = await client.callTool('broken', {});
      expect([broken.isError, broken.content[0].text, broken.paymentResponse]).toEqual([true, 'the forecast service is down', undefined]);
      await expect(node.blockInfo(hashBlock(payloads[2]?.payload.block as StateBlock))).rejects.toMatchObject({ code: 'BLOCK_NOT_FOUND' });
      // The cheque of the failed call is cancelled by the account's next block.
      await nanopay.receive();
    } finally {
      await client.close();
    }
  });

  it('nanopay (the SDK) pays a tool of a server built with the reference createPaymentWrapper and a nanopay facilitator', async () => {
    const resourceServer = new x402ResourceServer(new HTTPFacilitatorClient({ url: facilitator.printed.url })).register('nano:dev', nanoExactServerScheme as never);
    await resourceServer.initialize();
    const threshold = String((await new HTTPFacilitatorClient({ url: facilitator.printed.url }).getSupported()).kinds[0]?.extra?.workThreshold);
    const accepts = [nanoRequirement(merchantAddress, xnoToRaw('0.002'), 'nano:dev', threshold)];
    const paidTool = reference?.createPaymentWrapper(resourceServer, { accepts, resource: { url: 'mcp://tool/forecast' } });
    let ran = 0;
    const handler = paidTool(async (args: { city: string }) => {
      ran++;
      return { content: [{ type: 'text', text: `cloudy in ${args.city}` }] };
    });
    const server = new Server({ name: 'weather', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [{ name: 'forecast', inputSchema: { type: 'object' as const } }] }));
    server.setRequestHandler(CallToolRequestSchema, (request) => handler(request.params.arguments ?? {}, { _meta: request.params._meta }));
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: 'nanopay-agent', version: '1.0.0' });
    await client.connect(clientSide);
    try {
      const { result, payment } = await nanopay.callToolPaying(client, 'weather', 'forecast', { city: 'Porto' }, { maxXno: '0.01' });
      expect(textOf(result)).toBe('cloudy in Porto');
      expect(payment).toMatchObject({ pay_to: merchantAddress, amount: '0.002', settlement: { success: true } });
      expect(ran).toBe(1);
      const info = await node.blockInfo(payment?.hash as string);
      expect([info.confirmed, info.amountRaw]).toEqual([true, xnoToRaw('0.002')]);
      // Over the maximum: refused before anything is signed, and the tool does not run.
      await expect(nanopay.callToolPaying(client, 'weather', 'forecast', { city: 'Braga' }, { maxXno: '0.001' })).rejects.toMatchObject({ code: 'X402_UNPAYABLE' });
      expect(ran).toBe(1);
    } finally {
      await client.close();
    }
  });
});
