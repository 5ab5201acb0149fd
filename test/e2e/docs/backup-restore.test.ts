import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { payUri } from '../../../src/ops/requests/payments.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { KeyStore } from '../../../src/wallet/keystore.js';
import { keystorePath } from '../../../src/wallet/paths.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { fundedUser } from '../../helpers/ledger/backend-users.js';
import { PASSWORD, newUser, runCli, runCommand, type RunResult } from '../../helpers/processes/cli.js';
import { docBlocks, pathWithNanopay, type DocBlock } from '../../helpers/processes/docs.js';
import { postgresUnavailable, startPostgres } from '../../helpers/ledger/postgres.js';
import { onTerminal, ptyMissing } from '../../helpers/processes/pty.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { startCommand, type RunningCommand } from '../../helpers/processes/serve.js';
import { tempDir } from '../../helpers/processes/temp.js';

/**
 * docs/operations.md, "Backups and restore", followed as written. A user of the node backend has a seed wallet and a
 * --remote one (with the API key), contacts, a request made by the CLI and one made through the shop server's API
 * (both in the store), the shop's token and webhook secret. The guide's backup blocks run on the old machine (the
 * shop server still running), its restore block on a new one (another home, the default config dir), and there the
 * same wallets, API key, requests, contacts, token and secret are found, and `nanopay status ID` answers as before.
 * The secrets written down (`wallet export` at a terminal) restore the same wallet and API key too.
 */
const blocks = docBlocks('docs/operations.md', 'backup-restore');
const block = (text: string): DocBlock => {
  const found = blocks.filter((b) => b.code.includes(text));
  expect(found, text).toHaveLength(1);
  return found[0] as DocBlock;
};
const exportBlock = block('nanopay wallet export main');
const importBlock = block('nanopay wallet import --name main');
const backupBlock = block('.backup');
const restoreBlock = block('tar -xzf backup/config.tgz');

/** The guide's PostgreSQL blocks: the dump on the old machine, the restore into an empty database. */
const pgDump = block('pg_dump').code;
const pgRestore = block('pg_restore').code;
const pgMissing = postgresUnavailable();

const sqliteMissing = spawnSync('sqlite3', ['-version']).status === 0 ? undefined : 'the sqlite3 command is not installed (apt-get install sqlite3)';
if (sqliteMissing !== undefined && process.env.CI === 'true') throw new Error(`The backup test needs sqlite3 in CI: ${sqliteMissing}`);
if (sqliteMissing !== undefined) console.warn(`backup-restore.test.ts: the config dir and store backup was not run: ${sqliteMissing}`);

let sb: RunningSandbox;
let shop: RunningCommand<{ url: string; token_file: string; webhook_secret_file: string }> | undefined;

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  await shop?.stop();
  await sb?.close();
  await shutdownWorkers();
});

/** A machine: a home whose config dir is the default one ($HOME/.config/nanopay), `nanopay` on PATH. */
interface Machine {
  home: string;
  dir: string;
  env: NodeJS.ProcessEnv;
  run(args: string[], input?: string): Promise<RunResult>;
  json<T>(args: string[]): Promise<T>;
  /** Runs a block of the guide in bash, in `cwd`. */
  bash(code: string, cwd: string): Promise<RunResult>;
}

async function machine(root: string, name: string): Promise<Machine> {
  const home = join(root, name);
  // No NANOPAY_CONFIG_DIR and no XDG_CONFIG_HOME: the default config dir, as the guide's DIR= line finds it.
  const env: NodeJS.ProcessEnv = { PATH: await pathWithNanopay(home), HOME: home, NANOPAY_PASSWORD: PASSWORD, NANOPAY_API_URL: sb.url, NO_COLOR: '1' };
  const run = (args: string[], input?: string): Promise<RunResult> => runCli(args, env, input === undefined ? {} : { input });
  return {
    home,
    dir: join(home, '.config', 'nanopay'),
    env,
    run,
    json: async <T>(args: string[]): Promise<T> => {
      const result = await run([...args, '--json']);
      expect(result.code, `nanopay ${args.join(' ')}: ${result.stderr}`).toBe(0);
      return JSON.parse(result.stdout) as T;
    },
    bash: (code, cwd) => runCommand('bash', ['-c', `set -eo pipefail\n${code}`], { cwd, env, timeoutMs: 120_000 }),
  };
}

/** The commands of a block, one a line, comments dropped: what a person types at the terminal. */
const commandsOf = (b: DocBlock): string[][] =>
  b.code
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line !== '')
    .map((line) => line.split(/\s+/).slice(1));

interface State {
  wallets: unknown;
  apiKey: string;
  contacts: unknown;
  token: string;
  secret: string;
  cliStatus: unknown;
  shopRequest: unknown;
  exported: string;
}

const ALICE = 'nano_3uzu9nxf8ywo61mws76fcpoeq865o59jri487fnjk14gthyoysqn7h8bft7m';

describe('docs/operations.md: backups and restore', () => {
  let root: string;
  let old: Machine;
  let before: State;
  let cliRequest: string;
  let shopRequest: string;

  beforeAll(async () => {
    root = await tempDir('nanopay-backup-');
    old = await machine(root, 'old');
    // A key store at scrypt's lowest accepted cost, as the tests' users have (the restore carries it over).
    await mkdir(old.dir, { recursive: true, mode: 0o700 });
    await KeyStore.create(keystorePath(old.dir), PASSWORD, 2 ** 10);
    for (const args of [
      ['wallet', 'create', '--remote', '--name', 'service-made'],
      ['wallet', 'create', '--name', 'main'],
      ['wallet', 'use', 'main'],
      ['config', 'set', 'backend', 'node'],
      ['config', 'set', 'node-url', sb.url],
      ['contacts', 'add', 'alice', ALICE],
    ]) {
      const result = await old.run(args);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
    }
    // A request of the CLI, paid; and one of the shop's API, waiting.
    const made = await old.json<{ transaction_id: string; uri: string }>(['request', '0.1', '--no-qr']);
    cliRequest = made.transaction_id;
    const payer = await fundedUser(sb, 'node', '1');
    await payUri(payer.session, made.uri, {});
    shop = await startCommand(['checkout', 'serve', '--json', '--port', '0'], old.env);
    const token = readFileSync(shop.printed.token_file, 'utf8').trim();
    const created = await fetch(`${shop.printed.url}/api/v1/requests`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ amount: '0.25', order_id: 'order-7', metadata: { cart: 7 } }),
    });
    shopRequest = ((await created.json()) as { data: { id: string } }).data.id;
    before = await state(old, shopRequest, cliRequest, token);
    expect(before.cliStatus).toMatchObject({ status: 'paid', is_paid: true });
    expect(before.shopRequest).toMatchObject({ id: shopRequest, order_id: 'order-7', status: 'waiting' });
  }, 180_000);

  /** What a user would miss: wallets, the API key, contacts, the shop's token and secret, requests as status shows them. */
  async function state(m: Machine, shopId: string, cliId: string, token: string): Promise<State> {
    const shopFile = join(m.dir, 'checkout.token');
    const server = m === old ? shop : await startCommand<{ url: string; token_file: string; webhook_secret_file: string }>(['checkout', 'serve', '--json', '--port', '0'], m.env);
    try {
      expect(server?.printed.token_file).toBe(shopFile);
      const asked = await fetch(`${server?.printed.url}/api/v1/requests/${shopId}`, { headers: { authorization: `Bearer ${token}` } });
      expect(asked.status).toBe(200);
      return {
        wallets: await m.json(['wallet', 'list']),
        apiKey: (await m.json<{ value: string }>(['config', 'get', 'api-key', '--reveal'])).value,
        contacts: await m.json(['contacts', 'list']),
        token: readFileSync(shopFile, 'utf8'),
        secret: readFileSync(join(m.dir, 'webhook.secret'), 'utf8'),
        cliStatus: await m.json(['status', cliId]),
        shopRequest: ((await asked.json()) as { data: unknown }).data,
        exported: (await m.run(['requests', 'export', '--format', 'json'])).stdout,
      };
    } finally {
      if (server !== shop) await server?.stop();
    }
  }

  it.skipIf(sqliteMissing !== undefined)('the config dir and the store, copied while the shop server runs, restore everything on a new machine', async () => {
    const work = join(root, 'transfer');
    await mkdir(work);
    const backedUp = await old.bash(backupBlock.code, work);
    expect(backedUp.code, backedUp.stderr).toBe(0);
    // Private, whatever the umask it ran under: the backup holds the key store and the shop's secrets.
    const backup = join(work, 'backup');
    for (const entry of [backup, ...readdirSync(backup).map((name) => join(backup, name))]) expect(statSync(entry).mode & 0o077, entry).toBe(0);
    await shop?.stop();
    shop = undefined;

    const fresh = await machine(root, 'new');
    const restored = await fresh.bash(restoreBlock.code, work);
    expect(restored.code, restored.stderr).toBe(0);
    // The block's own checks: the same wallets and contacts.
    for (const address of JSON.stringify(before.wallets).match(/nano_[13][13-9a-km-uw-z]{59}/g) ?? []) expect(restored.stdout).toContain(address);
    expect(restored.stdout).toContain(ALICE);

    const after = await state(fresh, shopRequest, cliRequest, before.token.trim());
    // The same, but where the answer depends on the machine and not on the backup: the page's URL names the server
    // that answers (its port), and a status the store already knows as paid is answered without asking the sandbox.
    const machineFree = ({ cliStatus, shopRequest: request, ...rest }: State): unknown => ({
      ...rest,
      cliStatus: { ...(cliStatus as object), sandbox: undefined },
      shopRequest: { ...(request as object), checkout_url: undefined },
    });
    expect(machineFree(after)).toEqual(machineFree(before));
    expect((after.shopRequest as { checkout_url: string }).checkout_url).toMatch(new RegExp(`/checkout/${shopRequest}$`));
    // No lock of the old machine came along: the restored wallet receives and can spend.
    const received = await fresh.run(['receive']);
    expect(received.code, received.stderr).toBe(0);
    const spend = await fresh.run(['send', '@alice', '0.01', '--dry-run']);
    expect(spend.code, spend.stderr).toBe(0);
  }, 180_000);

  it.skipIf(ptyMissing !== undefined)('the secrets written down from wallet export restore the same wallet and API key', async () => {
    const [exportCommand] = commandsOf(exportBlock) as [string[]];
    const shown = onTerminal(exportCommand, old.env, { columns: 200 });
    await shown.waitFor('Print the wallet secrets');
    shown.type('y\r');
    expect(await shown.exited, shown.output).toBe(0);
    const seed = /Secret: ([0-9A-F]{64})/i.exec(shown.output)?.[1] as string;
    const apiKey = /API key of profile "default": (\S+)/.exec(shown.output)?.[1] as string;
    expect([seed, apiKey]).toEqual([expect.any(String), before.apiKey]);

    const paper = await machine(root, 'paper');
    // The first line at a terminal (it asks); the key's two lines in bash, the key typed on stdin.
    const [importLine, ...keyLines] = importBlock.code.trim().split('\n') as [string, ...string[]];
    const [importCommand] = commandsOf({ ...importBlock, code: importLine }) as [string[]];
    const imported = onTerminal(importCommand, paper.env, { columns: 100 });
    await imported.waitFor('What do you import?');
    imported.type('\x1b[B');
    await imported.waitFor(/❯ A seed/);
    imported.type('\r');
    await imported.waitFor('Type or paste the seed (hidden)');
    imported.type(`${seed}\r`);
    expect(await imported.exited, imported.output).toBe(0);
    const key = await runCommand('bash', ['-c', `set -eo pipefail\n${keyLines.join('\n')}`], { cwd: paper.home, env: paper.env, input: `${apiKey}\n` });
    expect(key.code, key.stderr).toBe(0);

    interface Listed {
      name: string;
      accounts: { index: number; address: string }[];
    }
    const mainOf = (wallets: unknown): Listed['accounts'] | undefined => (wallets as Listed[]).find((w) => w.name === 'main')?.accounts;
    expect(mainOf(await paper.json(['wallet', 'list']))).toEqual(mainOf(before.wallets));
    expect((await paper.json<{ value: string }>(['config', 'get', 'api-key', '--reveal'])).value).toBe(before.apiKey);
  }, 120_000);

  it.skipIf(pgMissing !== undefined)('a PostgreSQL store, dumped and restored into an empty database as the guide says, holds the same requests', async () => {
    const cluster = await startPostgres();
    try {
      const from = await cluster.createDatabase('shop_before');
      const user = await newUser(sb.url, { NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: sb.url, NANOPAY_DATABASE_URL: from });
      expect((await user.run(['wallet', 'create'])).code).toBe(0);
      const made = await user.json<{ transaction_id: string; uri: string }>(['request', '0.2', '--no-qr']);
      const payer = await fundedUser(sb, 'node', '1');
      await payUri(payer.session, made.uri, {});
      const server = await startCommand<{ url: string; token_file: string }>(['checkout', 'serve', '--json', '--port', '0'], user.env);
      try {
        const token = readFileSync(server.printed.token_file, 'utf8').trim();
        const created = await fetch(`${server.printed.url}/api/v1/requests`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ amount: '0.3', order_id: 'order-8' }) });
        expect(created.status).toBe(200);
      } finally {
        await server.stop();
      }
      const seen = async (env: NodeJS.ProcessEnv): Promise<unknown[]> => {
        const status = await user.json<Record<string, unknown>>(['status', made.transaction_id], { env });
        const exported = await user.run(['requests', 'export', '--format', 'json'], { env });
        expect(exported.code, exported.stderr).toBe(0);
        return [{ ...status, sandbox: undefined }, JSON.parse(exported.stdout)];
      };
      const before = await seen({});
      expect(before[0]).toMatchObject({ status: 'paid' });
      expect(before[1]).toHaveLength(1);

      const work = await tempDir('nanopay-pg-backup-');
      await mkdir(join(work, 'backup'));
      const to = await cluster.createDatabase('shop_after');
      const path = await pathWithNanopay(work);
      const bash = (code: string, env: NodeJS.ProcessEnv): Promise<RunResult> => runCommand('bash', ['-c', code], { cwd: work, env: { PATH: path, HOME: work, ...env } });
      const dump = join(work, 'backup', 'store.dump');

      // A dump that fails (a server that does not answer) says so in its exit status and leaves nothing named like a backup.
      const unreachable = { NANOPAY_DATABASE_URL: 'postgres://postgres@127.0.0.1:9/none' };
      const failed = await bash(pgDump, unreachable);
      expect(failed.code).not.toBe(0);
      expect(existsSync(dump)).toBe(false);

      // The URL set in the profile, as the guide's "config set database-url" leaves it (no NANOPAY_DATABASE_URL).
      const set = await user.run(['config', 'set', 'database-url', from], { env: { NANOPAY_DATABASE_URL: '' } });
      expect(set.code, set.stderr).toBe(0);
      const dumped = await bash(pgDump, { NANOPAY_CONFIG_DIR: user.configDir });
      expect(dumped.code, dumped.stderr).toBe(0);
      const good = readFileSync(dump);
      expect(good.length).toBeGreaterThan(0);

      // A later failure keeps the last good dump as it was.
      expect((await bash(pgDump, unreachable)).code).not.toBe(0);
      expect(readFileSync(dump).equals(good)).toBe(true);
      const restored = await bash(pgRestore, { NANOPAY_DATABASE_URL: to });
      expect(restored.code, restored.stderr).toBe(0);
      expect(await seen({ NANOPAY_DATABASE_URL: to })).toEqual(before);
    } finally {
      await cluster.stop();
    }
  }, 180_000);
});
