import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { backendUser, fundedUser } from '../../helpers/ledger/backend-users.js';
import type { CliUser, RunResult } from '../../helpers/processes/cli.js';
import { fillDisk, mountUnavailable, onSmallDisk, readOnly } from '../../helpers/processes/mounts.js';
import { ledger, sandbox } from '../../helpers/ledger/sandbox.js';

/**
 * Issue 31, point 11: what the machine or the network refuses is not a bug (INTERNAL_ERROR, exit 1):
 * each is a coded error with its own exit code, and nothing is lost.
 */
let sb: RunningSandbox;

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

const outputs = (r: RunResult): string => r.stdout + r.stderr;

/** The command's error, human and --json: its code and exit code, and a hint in both. */
async function refusal(user: CliUser, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: string; exit: number | null; message: string }> {
  const human = await user.run(args, { env });
  const json = await user.run([...args, '--json'], { env });
  const error = (JSON.parse(json.stdout) as { error: { code: string; message: string; hint?: string } }).error;
  expect(human.code, outputs(human)).toBe(json.code);
  expect(human.stderr).toContain(`[${error.code}]`);
  expect(human.stderr).toContain('Hint:');
  expect(error.hint, JSON.stringify(error)).toEqual(expect.any(String));
  return { code: error.code, exit: json.code, message: error.message };
}

describe.skipIf(mountUnavailable !== undefined)(`the config dir on a full or read-only disk${mountUnavailable === undefined ? '' : ` (skipped: ${mountUnavailable})`}`, () => {
  it('a full disk during request is DISK_FULL (exit 13), and once there is room the store works as before', async () => {
    const merchant = await backendUser(sb, 'node');
    const first = await merchant.user.json<{ transaction_id: string }>(['request', '0.1']);
    expect(first._code).toBe(0);
    const unmount = await onSmallDisk(merchant.user.configDir, 2 * 1024 * 1024);
    try {
      const filler = await fillDisk(merchant.user.configDir);
      const failed = await refusal(merchant.user, ['request', '0.2']);
      expect(failed).toMatchObject({ code: 'DISK_FULL', exit: 13 });
      expect(failed.message).toContain(merchant.user.configDir);
      await rm(filler);
      const after = await merchant.user.json<{ transaction_id: string }>(['request', '0.3']);
      expect(after._code).toBe(0);
      const status = await merchant.user.json<{ transaction_id: string; status: string }>(['status', first.transaction_id]);
      expect(status).toMatchObject({ _code: 0, transaction_id: first.transaction_id });
    } finally {
      unmount();
    }
  });

  it('a read-only config dir: balance, status and history work; a command that writes is NOT_WRITABLE (exit 13)', async () => {
    for (const backend of ['service', 'node'] as const) {
      const payer = await fundedUser(sb, backend, '1');
      const made = await payer.user.json<{ transaction_id: string }>(['request', '0.1']);
      expect(made._code).toBe(0);
      const blocks = (await ledger(sb.url)).blocks.length;
      const writable = readOnly(payer.user.configDir);
      try {
        for (const args of [['balance'], ['status', made.transaction_id], ['history']]) {
          for (const json of [false, true]) {
            const result = await payer.user.run([...args, ...(json ? ['--json'] : [])]);
            expect(result.code, `${backend}: nanopay ${args.join(' ')}: ${outputs(result)}`).toBe(0);
          }
        }
        const set = await refusal(payer.user, ['config', 'set', 'limit-per-send', '1']);
        expect(set).toMatchObject({ code: 'NOT_WRITABLE', exit: 13 });
        expect(set.message).toContain(payer.user.configDir);
        if (backend === 'node') expect(await refusal(payer.user, ['request', '0.2'])).toMatchObject({ code: 'NOT_WRITABLE', exit: 13 });
        const send = await refusal(payer.user, ['send', payer.address, '0.1', '--yes']);
        expect(send, backend).toMatchObject({ code: 'NOT_WRITABLE', exit: 13 });
        expect((await ledger(sb.url)).blocks.length, 'nothing was signed').toBe(blocks);
      } finally {
        writable();
      }
    }
  });
});

describe('x402: a 402 whose header is too large to read', () => {
  let server: Server;
  let url: string;

  beforeAll(async () => {
    server = createServer((_req, res) => {
      res.writeHead(402, { 'payment-required': 'A'.repeat(200 * 1024) });
      res.end('pay');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/paid`;
  });

  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  it('is ANSWER_TOO_LARGE (exit 5), and nothing is paid', async () => {
    const payer = await fundedUser(sb, 'service', '1');
    const blocks = (await ledger(sb.url)).blocks.length;
    const failed = await refusal(payer.user, ['fetch', url, '--max', '1']);
    expect(failed).toMatchObject({ code: 'ANSWER_TOO_LARGE', exit: 5 });
    expect(failed.message).toContain(url);
    expect((await ledger(sb.url)).blocks.length).toBe(blocks);
  });

  it('a server that cannot be reached is REQUEST_ERROR (exit 5)', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const payer = await fundedUser(sb, 'service', '1');
    const failed = await refusal(payer.user, ['fetch', `http://127.0.0.1:${port}/paid`, '--max', '1']);
    expect(failed).toMatchObject({ code: 'REQUEST_ERROR', exit: 5 });
    expect(failed.message).toContain(`http://127.0.0.1:${port}/paid`);
  });
});
