import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeClient } from '../../../src/api/node-client.js';
import { NanoPayError } from '../../../src/errors.js';
import { deriveAccount } from '../../../src/nano/index.js';

/** A stand-in node: answers each request with what the test scripted for its action, and records what it was sent. */
interface Scripted {
  status?: number;
  body: string | Record<string, unknown>;
  type?: string;
}
let script: (body: Record<string, unknown>) => Scripted | 'hang';
const seen: { headers: IncomingMessage['headers']; body: Record<string, unknown> }[] = [];
let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      const body = JSON.parse(text) as Record<string, unknown>;
      seen.push({ headers: req.headers, body });
      const answer = script(body);
      if (answer === 'hang') return;
      res.writeHead(answer.status ?? 200, { 'content-type': answer.type ?? 'application/json' });
      res.end(typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const account = deriveAccount({ seed: '0'.repeat(64), index: 0 });
const block = { type: 'state' as const, account: account.address, previous: '0'.repeat(64), representative: account.address, balance: '1', link: '1'.repeat(64), signature: 'A'.repeat(128), work: '0'.repeat(16) };
const client = (options: Partial<ConstructorParameters<typeof NodeClient>[0]> = {}): NodeClient => new NodeClient({ url, retries: 0, timeoutMs: 2_000, ...options });

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof NanoPayError) return error.code;
    throw error;
  }
  return 'no error';
}

describe('NodeClient against a stand-in node', () => {
  it.each([
    ['Fork', 'BLOCK_FORK', 10],
    ['Old block', 'BLOCK_EXISTS', 10],
    ['Gap previous block', 'BLOCK_GAP_PREVIOUS', 10],
    ['Gap source block', 'BLOCK_GAP_SOURCE', 10],
    ['Bad signature', 'BLOCK_BAD_SIGNATURE', 3],
    ['Block work is less than threshold', 'BLOCK_INSUFFICIENT_WORK', 3],
    ['Block work is insufficient', 'BLOCK_INSUFFICIENT_WORK', 3],
    ['Negative spend', 'BLOCK_NEGATIVE_SPEND', 3],
    ['Unreceivable', 'BLOCK_UNRECEIVABLE', 10],
    ['Balance and amount delta do not match', 'BLOCK_BALANCE_MISMATCH', 3],
    ['Block is invalid', 'INVALID_BLOCK', 3],
  ])('process "%s" is %s', async (words, code, exit) => {
    script = () => ({ body: { error: words } });
    const error = await client().publish(block, 'send', 'F'.repeat(64)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NanoPayError);
    expect(error).toMatchObject({ code, exitCode: exit });
    expect((error as Error).message).toContain(words);
  });

  it('a process answer that names another block is not taken as landed', async () => {
    script = () => ({ body: { hash: 'E'.repeat(64) } });
    expect(await codeOf(client().publish(block, 'send', 'F'.repeat(64)))).toBe('INVALID_DATA');
  });

  it('"Account not found" is an unopened account, not an error; its balance is what waits for it', async () => {
    script = (b) =>
      b.action === 'account_info' ? { body: { error: 'Account not found' } } : { body: { blocks: { ['C'.repeat(64)]: { amount: '5', source: account.address } } } };
    expect(await client().accountInfo(account.address)).toBeNull();
    expect(await client().balance(account.address)).toMatchObject({ balanceRaw: 0n, pendingRaw: 5n });
  });

  it('no receivables as "blocks": "" (and as []); hashes alone; hash → amount', async () => {
    for (const blocks of ['', [], {}]) {
      script = () => ({ body: { blocks } });
      expect(await client().pending(account.address)).toEqual([]);
    }
    script = () => ({ body: { blocks: ['ab'.repeat(32)] } });
    expect(await client().receivable(account.address)).toEqual([{ hash: 'AB'.repeat(32) }]);
    script = () => ({ body: { blocks: { ['cd'.repeat(32)]: '7' } } });
    expect(await client().receivable(account.address)).toEqual([{ hash: 'CD'.repeat(32), amountRaw: 7n }]);
  });

  it('falls back to "pending" where "receivable" is unknown or not allowed', async () => {
    for (const refusal of ['Unknown command', 'Action receivable not allowed']) {
      seen.length = 0;
      script = (b) => (b.action === 'receivable' ? { body: { error: refusal } } : { body: { blocks: { ['ef'.repeat(32)]: { amount: '9', source: account.address } } } });
      expect(await client().receivable(account.address)).toEqual([{ hash: 'EF'.repeat(32), amountRaw: 9n }]);
      expect(seen.map((s) => s.body.action)).toEqual(['receivable', 'pending']);
      expect(seen[0]?.body).toMatchObject({ count: expect.any(String), threshold: '1', source: 'true' });
    }
  });

  it('an error as a number, 429 and 500 with text bodies, a bad shape, a hang', async () => {
    script = () => ({ body: { error: 3, message: 'Internal' } });
    expect(await codeOf(client().accountInfo(account.address))).toBe('REQUEST_ERROR');
    script = () => ({ status: 429, body: 'Too Many Requests', type: 'text/plain' });
    expect(await codeOf(client().accountInfo(account.address))).toBe('RATE_LIMIT_EXCEEDED');
    script = () => ({ status: 500, body: '<html>oops</html>', type: 'text/html' });
    expect(await codeOf(client().accountInfo(account.address))).toBe('REQUEST_ERROR');
    script = () => ({ body: { frontier: 'nope', balance: '1', representative: account.address } });
    expect(await codeOf(client().accountInfo(account.address))).toBe('INVALID_DATA');
    script = () => 'hang';
    expect(await codeOf(client({ timeoutMs: 300 }).accountInfo(account.address))).toBe('REQUEST_ERROR');
  });

  it('"Block not found" is a 404 (the frontier check reports it as inconsistent)', async () => {
    script = () => ({ body: { error: 'Block not found' } });
    const error = await client().blockInfo('A'.repeat(64)).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'BLOCK_NOT_FOUND', status: 404 });
  });

  it('thresholds are the network\'s fixed ones, epoch 1\'s included: live unless the node runs the dev or beta network', async () => {
    const live = { send: 'fffffff800000000', receive: 'fffffe0000000000', epoch1: 'ffffffc000000000' };
    script = () => ({ body: { network: 'live' } });
    expect(await client().activeDifficulty()).toEqual(live);
    script = () => ({ body: { error: 'Unknown command' } });
    expect(await client().activeDifficulty()).toEqual(live);
    script = () => ({ body: { network: 'dev' } });
    expect(await client().activeDifficulty()).toEqual({ send: 'ffc0000000000000', receive: 'f000000000000000', epoch1: 'fe00000000000000' });
    script = () => ({ body: { network: 'beta' } });
    expect(await client().activeDifficulty()).toEqual({ send: 'fffff00000000000', receive: 'ffffe00000000000', epoch1: 'fffff00000000000' });
  });

  it('provider auth: Bearer, Basic or a key in the body, and never in a message', async () => {
    const secret = 'provider-secret-123';
    script = () => ({ status: 401, body: 'unauthorized', type: 'text/plain' });
    for (const scheme of ['bearer', 'basic', 'key'] as const) {
      seen.length = 0;
      const error = await client({ auth: { scheme, secret: scheme === 'basic' ? `me:${secret}` : secret } }).accountInfo(account.address).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'UNAUTHORIZED' });
      expect(JSON.stringify(error)).not.toContain(secret);
      expect((error as Error).message).not.toContain(secret);
      const sent = seen[0];
      if (scheme === 'bearer') expect(sent?.headers.authorization).toBe(`Bearer ${secret}`);
      if (scheme === 'basic') expect(sent?.headers.authorization).toBe(`Basic ${Buffer.from(`me:${secret}`).toString('base64')}`);
      if (scheme === 'key') expect(sent?.body.key).toBe(secret);
    }
  });

  it('work_generate: the node as a work server, refused when disabled', async () => {
    script = () => ({ body: { error: 'Work generation is disabled' } });
    expect(await codeOf(client().workGenerate('A'.repeat(64), 'fffffff800000000'))).toBe('REQUEST_ERROR');
  });
});
