import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { backendUser } from '../../helpers/ledger/backend-users.js';
import { BIN, PASSWORD } from '../../helpers/processes/cli.js';
import { docBlocks } from '../../helpers/processes/docs.js';
import { parsePrometheus, sampleValue } from '../../helpers/network/prometheus.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { startCommand } from '../../helpers/processes/serve.js';
import { tempDir } from '../../helpers/processes/temp.js';

/**
 * docs/operations.md, "systemd": its unit is one systemd reads without a complaint, and the command line and
 * environment it gives run as written (on the sandbox's node, SQLite instead of PostgreSQL).
 */
const blocks = docBlocks('docs/operations.md', 'readme-production');
const unit = blocks.find((b) => b.lang === 'ini' && b.code.startsWith('# /etc/systemd/system/nanopay-shop.service\n'))?.code as string;
const envFile = blocks.find((b) => b.lang === 'sh' && b.code.startsWith('# /etc/nanopay/shop.env'))?.code as string;
const run = promisify(execFile);

const SYSTEMD_ANALYZE = '/usr/bin/systemd-analyze';

let sb: RunningSandbox;

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

describe("the production set-up of docs/operations.md", () => {
  it('has a unit and an environment file', () => {
    expect(blocks).toHaveLength(2);
    expect(unit).toContain('ExecStart=/usr/bin/nanopay checkout serve');
    expect(envFile).toContain('NANOPAY_CONFIG_DIR=/var/lib/nanopay');
  });

  it.skipIf(!existsSync(SYSTEMD_ANALYZE))('the unit is one systemd-analyze verifies without a warning', async () => {
    const dir = await tempDir('nanopay-unit-');
    const file = join(dir, 'nanopay-shop.service');
    // The binary where this clone has it, and an environment file that may be absent here.
    await writeFile(file, unit.replace('/usr/bin/nanopay', BIN).replace('EnvironmentFile=/', 'EnvironmentFile=-/'));
    const { stderr } = await run(SYSTEMD_ANALYZE, ['verify', file]);
    expect(stderr).toBe('');
  });

  it("its command line and environment run as written: ready, scraped, stopped by systemd's SIGTERM with exit 0", async () => {
    const shop = await backendUser(sb, 'node');
    const dir = await tempDir('nanopay-production-');
    const passwordFile = join(dir, 'password');
    await writeFile(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
    const args = (/^ExecStart=\/usr\/bin\/nanopay (.*)$/m.exec(unit)?.[1] as string).split(' ');
    const swap = (flag: string, value: string): void => {
      const at = args.indexOf(flag);
      expect(at).toBeGreaterThanOrEqual(0);
      args[at + 1] = value;
    };
    swap('--port', '0');
    swap('--metrics-listen', '127.0.0.1:0');
    swap('--password-file', passwordFile);
    const given = Object.fromEntries(
      envFile
        .split('\n')
        .filter((line) => /^[A-Z_]+=/.test(line))
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    expect(Object.keys(given)).toEqual(['NANOPAY_CONFIG_DIR', 'NANOPAY_BACKEND', 'NANOPAY_NODE_URL', 'NANOPAY_NODE_WS_URL', 'NANOPAY_DATABASE_URL', 'PGPASSWORD']);
    const env = {
      PATH: process.env.PATH,
      HOME: dir,
      NANOPAY_BACKEND: given.NANOPAY_BACKEND,
      NANOPAY_CONFIG_DIR: shop.user.configDir,
      NANOPAY_NODE_URL: sb.url,
      NANOPAY_NODE_WS_URL: sb.wsUrl,
    };
    const server = await startCommand<{ url: string; token_file: string; metrics_url: string }>([...args, '--json'], env);
    try {
      const ready = await fetch(`${server.printed.url}/readyz`);
      expect(await ready.json()).toEqual({ success: true, data: { status: 'ready', checks: { store: 'ok', backend: 'ok', wallet: 'ok' } }, error: null });
      const token = readFileSync(server.printed.token_file, 'utf8').trim();
      const made = await fetch(`${server.printed.url}/api/v1/requests`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ amount: '0.1' }),
      });
      expect(((await made.json()) as { data: { checkout_url: string } }).data.checkout_url).toMatch(/^https:\/\/pay\.shop\.example\/checkout\//);
      const families = parsePrometheus(await (await fetch(`${server.printed.metrics_url}/metrics`)).text());
      expect(sampleValue(families, 'nanopay_shop_requests_created_total')).toBe(1);
    } finally {
      await server.stop();
    }
    expect(server.child.exitCode).toBe(0);
    const last = server.stderr().trim().split('\n').at(-1) as string;
    expect(JSON.parse(last)).toMatchObject({ level: 'info', event: 'stopped', drained: true });
  });
});
