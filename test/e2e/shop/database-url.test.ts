import { randomUUID } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { backendUser } from '../../helpers/ledger/backend-users.js';
import { newUser, type CliUser, type RunResult } from '../../helpers/processes/cli.js';
import { postgresUnavailable, startPostgres, type PostgresCluster } from '../../helpers/ledger/postgres.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { startCommand } from '../../helpers/processes/serve.js';

/**
 * Issue 31, point 10: a database password, in whatever form it is written in the URL (user:pass@,
 * ?password=, ?sslpassword=, percent-encoded), never reaches config.json, stdout, stderr or a log.
 * Point 11: a store that cannot be reached or refuses the connection is a coded error, not a bug.
 */
const SECRET = 'Hunter2Secret';
/** The secret as written in a URL: plain, or with a letter percent-encoded (%53 is S). */
const FORMS = [SECRET, 'Hunter2%53ecret'];
const UNKNOWN_REQUEST = '3f0b1c2e-0000-4000-8000-000000000000';

function expectNoSecret(...texts: string[]): void {
  for (const text of texts) for (const form of [...FORMS, 'Hunter2']) expect(text).not.toContain(form);
}

const outputs = (r: RunResult): string => r.stdout + r.stderr;

/** Every command that shows the setting, human and --json. */
async function shownEverywhere(user: CliUser, env: NodeJS.ProcessEnv = {}): Promise<string[]> {
  const runs = [['config', 'get', 'database-url'], ['config', 'list'], ['config', 'get', 'database-url', '--json'], ['config', 'list', '--json']];
  const shown: string[] = [];
  for (const args of runs) {
    const result = await user.run(args, { env });
    expect(result.code, outputs(result)).toBe(0);
    shown.push(outputs(result));
  }
  return shown;
}

describe('a database password in the URL', () => {
  const refused = [
    `postgres://shop@db.example/shop?password=${SECRET}`,
    `postgres://shop@db.example/shop?sslmode=require&password=${FORMS[1]}`,
    `postgres://shop@db.example/shop?pass%77ord=${SECRET}`,
    `postgres://shop@db.example/shop?PASSWORD=${SECRET}`,
    `postgresql://shop@db.example/shop?sslpassword=${SECRET}`,
    `postgres://shop:${SECRET}@db.example/shop`,
    `postgres://shop:${FORMS[1]}@db.example/shop`,
    `postgres://shop:${SECRET}@db.example:99999/shop`,
    `postgres://shop:${SECRET}@db example/shop`,
  ];

  it.each(refused)('config set refuses %s, and nothing of it is kept or shown', async (url) => {
    const user = await newUser('http://127.0.0.1:9');
    for (const json of [false, true]) {
      const result = await user.run(['config', 'set', 'database-url', url, ...(json ? ['--json'] : [])]);
      expect(result.code, outputs(result)).toBe(3);
      if (json) expect(JSON.parse(result.stdout).error).toMatchObject({ code: 'INVALID_REQUEST', hint: expect.any(String) });
      else expect(result.stderr).toMatch(/Error \[INVALID_REQUEST\][\s\S]*Hint:/);
      expectNoSecret(outputs(result));
    }
    expectNoSecret(await readFile(join(user.configDir, 'config.json'), 'utf8').catch(() => ''), ...(await shownEverywhere(user)));
  });

  it.each([
    ['NANOPAY_DATABASE_URL', 'env'],
    ['config.json of an earlier version', 'profile'],
  ])('from %s, it is masked by config get and list, and in the error of a command that opens the store', async (_where, source) => {
    const urls = [`postgres://shop@127.0.0.1:9/shop?password=${SECRET}`, `postgres://shop@127.0.0.1:9/shop?sslmode=disable&pass%77ord=${FORMS[1]}`, `postgres://shop:${FORMS[1]}@127.0.0.1:9/shop?sslpassword=${SECRET}`];
    for (const url of urls) {
      const user = await newUser('http://127.0.0.1:9', { NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: 'http://127.0.0.1:9' });
      const env = source === 'env' ? { NANOPAY_DATABASE_URL: url } : {};
      if (source === 'profile') await writeFile(join(user.configDir, 'config.json'), JSON.stringify({ version: 1, profiles: { default: { wallets: {}, databaseUrl: url } } }));
      const shown = await shownEverywhere(user, env);
      expectNoSecret(...shown);
      expect(shown[0]).toContain('postgres');
      expect(shown[0]).toContain('***');
      for (const json of [false, true]) {
        const result = await user.run(['status', UNKNOWN_REQUEST, ...(json ? ['--json'] : [])], { env });
        expect(result.code, outputs(result)).toBe(5);
        expect(outputs(result)).toContain('STORE_UNAVAILABLE');
        expectNoSecret(outputs(result));
      }
    }
  });
});

describe('a database URL the store cannot be opened with', () => {
  const user = () => newUser('http://127.0.0.1:9', { NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: 'http://127.0.0.1:9' });

  it('a port past 65535 is INVALID_REQUEST (exit 3) naming the variable, without the password', async () => {
    const result = await (await user()).run(['status', UNKNOWN_REQUEST, '--json'], { env: { NANOPAY_DATABASE_URL: `postgres://shop:${SECRET}@127.0.0.1:99999/shop` } });
    expect(result.code, outputs(result)).toBe(3);
    expect(JSON.parse(result.stdout).error).toMatchObject({ code: 'INVALID_REQUEST', message: expect.stringContaining('NANOPAY_DATABASE_URL'), hint: expect.any(String) });
    expectNoSecret(outputs(result));
  });

  it.each(['sslrootcert', 'sslcert', 'sslkey'])('a %s= naming a missing file is STORE_REFUSED (exit 6) naming the parameter and the file, without the password', async (param) => {
    const file = `/nonexistent-${randomUUID()}/client.pem`;
    const result = await (await user()).run(['status', UNKNOWN_REQUEST, '--json'], { env: { NANOPAY_DATABASE_URL: `postgres://shop:${SECRET}@127.0.0.1:9/shop?sslmode=require&${param}=${file}` } });
    expect(result.code, outputs(result)).toBe(6);
    expect(JSON.parse(result.stdout).error).toMatchObject({ code: 'STORE_REFUSED', message: expect.stringContaining(`${param} names ${file}`), hint: expect.any(String) });
    expectNoSecret(outputs(result));
  });

  it('an sslrootcert= naming a directory is STORE_REFUSED too (node-postgres reads it as a file)', async () => {
    const cli = await user();
    const dir = cli.configDir;
    const result = await cli.run(['status', UNKNOWN_REQUEST, '--json'], { env: { NANOPAY_DATABASE_URL: `postgres://shop:${SECRET}@127.0.0.1:9/shop?sslmode=require&sslrootcert=${dir}` } });
    expect(result.code, outputs(result)).toBe(6);
    expect(JSON.parse(result.stdout).error).toMatchObject({ code: 'STORE_REFUSED', message: expect.stringContaining(`sslrootcert names ${dir}, which cannot be read (EISDIR)`) });
    expectNoSecret(outputs(result));
  });

  it('a host that does not resolve is STORE_UNAVAILABLE (exit 5)', async () => {
    const result = await (await user()).run(['status', UNKNOWN_REQUEST, '--json'], { env: { NANOPAY_DATABASE_URL: `postgres://shop@db.nanopay-test.invalid/shop?password=${SECRET}` } });
    expect(result.code, outputs(result)).toBe(5);
    expect(JSON.parse(result.stdout).error.code).toBe('STORE_UNAVAILABLE');
    expectNoSecret(outputs(result));
  });
});

const pgSkip = postgresUnavailable();

describe.skipIf(pgSkip !== undefined)('a database password on a real PostgreSQL server', () => {
  let sb: RunningSandbox;
  let cluster: PostgresCluster;

  beforeAll(async () => {
    sb = await sandbox();
    cluster = await startPostgres({ password: SECRET });
  });

  afterAll(async () => {
    await cluster?.stop();
    await sb?.close();
    await shutdownWorkers();
  });

  it('given in NANOPAY_DATABASE_URL (?password=), it is used, and checkout serve shows the store without it', async () => {
    const url = await cluster.createDatabase(`shop_${randomUUID().replaceAll('-', '')}`);
    const merchant = await backendUser(sb, 'node');
    const env = { ...merchant.user.env, NANOPAY_DATABASE_URL: `${url}?password=${SECRET}` };
    const made = await merchant.user.run(['request', '0.1', '--json'], { env });
    expect(made.code, outputs(made)).toBe(0);
    expectNoSecret(outputs(made));
    const server = await startCommand<{ store: string }>(['checkout', 'serve', '--json'], env);
    try {
      expect(server.printed.store).toBe(`${url}?password=***`);
      expectNoSecret(server.stdout(), server.stderr());
    } finally {
      await server.stop();
    }
    expectNoSecret(server.stdout(), server.stderr());
  });

  it('a wrong password, none, or a database that does not exist: STORE_REFUSED (exit 6), with a hint, without the password', async () => {
    const url = await cluster.createDatabase(`shop_${randomUUID().replaceAll('-', '')}`);
    const merchant = await backendUser(sb, 'node');
    const missing = url.replace(/\/shop_\w+$/, '/no_such_db');
    const cases: [string, RegExp][] = [
      [`${url}?password=Hunter2Wrong`, /password/],
      [url, /password/],
      [`${missing}?password=${SECRET}`, /no_such_db/],
    ];
    for (const [databaseUrl, said] of cases) {
      for (const args of [['status', UNKNOWN_REQUEST], ['request', '0.1']]) {
        const env = { NANOPAY_DATABASE_URL: databaseUrl, PGPASSFILE: '/nonexistent' };
        const json = await merchant.user.run([...args, '--json'], { env });
        expect(json.code, outputs(json)).toBe(6);
        expect(JSON.parse(json.stdout).error).toMatchObject({ code: 'STORE_REFUSED', message: expect.stringMatching(said), hint: expect.any(String) });
        const human = await merchant.user.run(args, { env });
        expect(human.code).toBe(6);
        expect(human.stderr).toMatch(/Error \[STORE_REFUSED\][\s\S]*Hint:/);
        expectNoSecret(outputs(json), outputs(human));
      }
    }
  });
});

if (pgSkip !== undefined) describe('a database password on a real PostgreSQL server', () => it.skip(`skipped: ${pgSkip}`, () => undefined));
