import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { startAgentProcess } from '../../helpers/network/agent.js';
import { runCli, userWithWallet, type CliUser } from '../../helpers/processes/cli.js';
import { addOtherUser, otherUserUnavailable, type AsRequest, type OtherUser } from '../../helpers/processes/other-user.js';
import { expectEnvelopeError, httpCall } from '../../helpers/network/raw-http.js';
import { ledger, sandbox } from '../../helpers/ledger/sandbox.js';
import { startServe } from '../../helpers/processes/serve.js';
import { tempDir } from '../../helpers/processes/temp.js';

// `serve` and `agent` on loopback answer only their own user: other users of the machine are refused (Linux, from
// the kernel's socket tables), or, where the system cannot tell who connects, need a token nanopay makes. And the
// agent's --allow-origin takes only real origins. The peer lookup itself: test/integration/backends/peer-check.test.ts.

let sb: RunningSandbox;
let user: CliUser;
let address: string;
const RECIPIENT = 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj';
const SEND: AsRequest = {
  method: 'POST',
  path: '/wallet/send',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ recipient_address: RECIPIENT, amount: '0.1' }),
};
/** Where the socket tables are not: the user check is unavailable, as on a system that cannot tell who connects. */
const NO_TABLES = { NANOPAY_SOCKET_TABLES: '/nonexistent-socket-tables' };

const balanceOf = async (account: string): Promise<string | undefined> => (await ledger(sb.url)).accounts.find((a) => a.address === account)?.balance;

beforeAll(async () => {
  sb = await sandbox();
  ({ user, address } = await userWithWallet(sb.url, '2'));
});

afterAll(async () => {
  await sb?.close();
});

describe.skipIf(otherUserUnavailable !== undefined)('another user of this machine', () => {
  let other: OtherUser;
  beforeAll(async () => {
    other = await addOtherUser();
  });
  afterAll(async () => {
    await other?.remove();
  });

  it('is refused by serve (403, nothing spent, one log line) while the user\'s own clients need no token', async () => {
    const serve = await startServe(user);
    try {
      expect(serve.printed).toMatchObject({ token_required: false, token_file: null });
      const before = await balanceOf(address);
      const replies = await other.fetch(serve.url, [SEND, { path: '/wallet/balance' }]);
      for (const reply of replies) {
        expect(reply.status).toBe(403);
        expect(reply.body.error).toMatchObject({ error: 'FORBIDDEN', message: expect.stringContaining(`another user (uid ${other.uid})`) });
      }
      expect(await balanceOf(address)).toBe(before);
      // The same send from this user's own process.
      const own = await httpCall(serve.url, 'POST', '/wallet/send', { headers: SEND.headers as Record<string, string>, body: SEND.body as string });
      expect(own.status).toBe(200);
      expect(await balanceOf(address)).not.toBe(before);
      expect(serve.stderr()).toMatch(new RegExp(`refused the connection from 127\\.0\\.0\\.1:\\d+: another user \\(uid ${other.uid}\\)`));
    } finally {
      await serve.stop();
    }
  });

  it('is refused by the agent, on its SDK routes and its chat, before anything runs', async () => {
    const agent = await startAgentProcess(user.env);
    try {
      const before = await balanceOf(address);
      const chatTurn: AsRequest = { method: 'POST', path: '/chat', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: `send 0.1 to ${RECIPIENT}` }) };
      const replies = await other.fetch(agent.url, [SEND, chatTurn, { path: '/status' }]);
      expect(replies.map((r) => [r.status, r.body.error?.error])).toEqual([
        [403, 'FORBIDDEN'],
        [403, 'FORBIDDEN'],
        [403, 'FORBIDDEN'],
      ]);
      expect(await balanceOf(address)).toBe(before);
      expect((await httpCall(agent.url, 'GET', '/status')).status).toBe(200);
    } finally {
      await agent.stop();
    }
  });

  it('is let in by --allow-other-users, with the token the user gave', async () => {
    const tokenFile = join(user.configDir, 'shared.token');
    const token = 'a-token-shared-with-another-user';
    await writeFile(tokenFile, `${token}\n`, { mode: 0o600 });
    const serve = await startServe(user, ['--allow-other-users', '--token-file', tokenFile]);
    try {
      const [withToken, without] = await other.fetch(serve.url, [{ path: '/wallet/balance', headers: { authorization: `Bearer ${token}` } }, { path: '/wallet/balance' }]);
      expect(withToken?.status).toBe(200);
      expect([without?.status, without?.body.error?.error]).toEqual([401, 'UNAUTHORIZED']);
    } finally {
      await serve.stop();
    }
  });
});

describe('where the system cannot tell who connects', () => {
  it('serve requires a token it makes: a 0600 file in the config dir, named at start; without it 401, with it 200', async () => {
    const serve = await startServe(user, [], NO_TABLES);
    try {
      const tokenFile = join(user.configDir, 'serve.token');
      expect(serve.printed).toMatchObject({ token_required: true, token_file: tokenFile });
      expect(serve.stderr()).toContain(tokenFile);
      expect((await stat(tokenFile)).mode & 0o777).toBe(0o600);
      const token = (await readFile(tokenFile, 'utf8')).trim();
      expect(token.length).toBeGreaterThanOrEqual(32);
      expectEnvelopeError(await httpCall(serve.url, 'GET', '/wallet/balance'), 401, 'UNAUTHORIZED');
      expect((await httpCall(serve.url, 'GET', '/wallet/balance', { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    } finally {
      await serve.stop();
    }
  });

  it('the agent too (agent.token), and an allowed origin is matched as browsers send it', async () => {
    const agent = await startAgentProcess({ ...user.env, ...NO_TABLES }, ['--allow-origin', 'HTTPS://Shop.Example:443']);
    try {
      const tokenFile = join(user.configDir, 'agent.token');
      expect(agent.started).toMatchObject({ token_required: true, token_file: tokenFile });
      expect((await stat(tokenFile)).mode & 0o777).toBe(0o600);
      const token = (await readFile(tokenFile, 'utf8')).trim();
      expectEnvelopeError(await httpCall(agent.url, 'GET', '/status'), 401, 'UNAUTHORIZED');
      const allowed = await httpCall(agent.url, 'GET', '/status', { headers: { authorization: `Bearer ${token}`, origin: 'https://shop.example' } });
      expect(allowed.status).toBe(200);
      expect(allowed.headers['access-control-allow-origin']).toBe('https://shop.example');
    } finally {
      await agent.stop();
    }
  });
});

describe('agent --allow-origin', () => {
  it.each([
    ['null', /sandboxed iframes/, undefined],
    ['https://shop.example/', /is not an origin/, 'Did you mean --allow-origin https://shop.example?'],
    ['https://user@shop.example', /is not an origin/, undefined],
    ['file:///home/me/page.html', /is not an origin/, undefined],
  ])('refuses %s at start (USAGE, exit 2), before anything is made', async (origin, message, hint) => {
    const dir = await tempDir('nanopay-origin-');
    const env = { PATH: process.env.PATH, HOME: dir, NANOPAY_CONFIG_DIR: dir, NANOPAY_API_URL: sb.url, AGENT_MODE: 'production', NO_COLOR: '1' };
    // A start that is not refused would serve until killed.
    try {
      const result = await runCli(['agent', '--port', '0', '--allow-origin', 'https://fine.example', '--allow-origin', origin, '--json'], env, { timeoutMs: 20_000 });
      expect(result.code).toBe(2);
      const { error } = JSON.parse(result.stdout) as { error: { code: string; message: string; hint?: string } };
      expect(error).toMatchObject({ code: 'USAGE', message: expect.stringMatching(message) });
      if (hint !== undefined) expect(error.hint).toBe(hint);
      await expect(stat(join(dir, 'agent'))).rejects.toMatchObject({ code: 'ENOENT' });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
