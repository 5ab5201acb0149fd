import { chmod, chown, cp, mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { BIN, newUser, runCommand, type CliUser } from '../../helpers/processes/cli.js';
import { tempDir } from '../../helpers/processes/temp.js';

// What a command's start-up costs, told by what it does rather than by the clock: bin/run.js turns on Node's module
// compile cache, kept in the config dir (src/cli/compile-cache.ts), and a command loads none of Node's heavy modules
// it does not use (scripts/bundle-cli.mjs).
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
// Nothing listens there; wallet list needs no service.
const NO_SERVICE = 'http://127.0.0.1:9';

/** The files under `dir`, or [] when there is no such dir. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

describe("Node's compile cache", () => {
  it('a command keeps the code Node compiled in the config dir (compile-cache, 0700), and the next one answers the same', async () => {
    const user = await newUser(NO_SERVICE);
    const first = await user.run(['wallet', 'list', '--json']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toBe('');
    const cache = join(user.configDir, 'compile-cache');
    expect((await stat(cache)).mode & 0o777).toBe(0o700);
    expect((await filesUnder(cache)).length).toBeGreaterThan(0);
    const second = await user.run(['wallet', 'list', '--json']);
    expect(second).toEqual(first);
  });

  it('never runs stale code: a changed file of the bundle (same length, so only its content tells) runs as changed', async () => {
    // A copy of the built package to change, as a rebuild or an upgrade changes it.
    const copy = await tempDir('nanopay-cache-copy-');
    for (const entry of ['bin', 'package.json', 'oclif.manifest.json', 'dist/app']) await cp(join(ROOT, entry), join(copy, entry), { recursive: true });
    await symlink(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
    const user = await newUser(NO_SERVICE);
    const list = () => runCommand(process.execPath, [join(copy, 'bin', 'run.js'), 'wallet', 'list'], { env: user.env });
    const before = await list();
    expect(before.code, before.stderr).toBe(0);
    expect(before.stdout).toContain('No wallets yet.');
    expect((await filesUnder(join(user.configDir, 'compile-cache'))).length).toBeGreaterThan(0);

    const command = join(copy, 'dist', 'app', 'commands', 'wallet', 'list.js');
    const source = await readFile(command, 'utf8');
    expect(source).toContain('No wallets yet.');
    await writeFile(command, source.replace('No wallets yet.', 'No wallets now.'));
    const after = await list();
    expect(after.code, after.stderr).toBe(0);
    expect(after.stdout).toContain('No wallets now.');
    expect(after.stdout).not.toContain('No wallets yet.');
  });

  it('is not used where another user could write it: a config dir open to others, a cache dir that is a link or open to others', async () => {
    const open = await newUser(NO_SERVICE);
    await chmod(open.configDir, 0o777);
    expect((await open.run(['wallet', 'list', '--json'])).code).toBe(0);
    expect(await filesUnder(join(open.configDir, 'compile-cache'))).toEqual([]);

    const linked = await newUser(NO_SERVICE);
    const elsewhere = await tempDir('nanopay-cache-elsewhere-');
    await symlink(elsewhere, join(linked.configDir, 'compile-cache'));
    expect((await linked.run(['wallet', 'list', '--json'])).code).toBe(0);
    expect(await readdir(elsewhere)).toEqual([]);

    const loose = await newUser(NO_SERVICE);
    const cache = join(loose.configDir, 'compile-cache');
    await mkdir(cache);
    await chmod(cache, 0o777);
    expect((await loose.run(['wallet', 'list', '--json'])).code).toBe(0);
    expect(await readdir(cache)).toEqual([]);
  });

  it.skipIf(process.geteuid?.() !== 0)("is not used from a cache dir of another user's", async () => {
    const user = await newUser(NO_SERVICE);
    const cache = join(user.configDir, 'compile-cache');
    await mkdir(cache, { mode: 0o700 });
    // Root hands it to a uid nobody has here.
    await chown(cache, 54_321, 54_321);
    expect((await user.run(['wallet', 'list', '--json'])).code).toBe(0);
    expect(await readdir(cache)).toEqual([]);
  });
});

/** The Node modules (built-in ones included) a run of `nanopay args` loaded, as process.moduleLoadList names them. */
async function modulesLoaded(user: CliUser, args: string[]): Promise<string[]> {
  const list = join(await tempDir('nanopay-modules-'), 'loaded.json');
  const script = `
process.on('exit', () => process.getBuiltinModule('node:fs').writeFileSync(${JSON.stringify(list)}, JSON.stringify(process.moduleLoadList)));
process.argv = [process.argv[0], ${JSON.stringify(BIN)}, ...${JSON.stringify(args)}];
await import(${JSON.stringify(pathToFileURL(BIN).href)});`;
  const run = await runCommand(process.execPath, ['--input-type=module', '-e', script], { env: user.env });
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(await readFile(list, 'utf8')) as string[];
}

describe('what a command loads', () => {
  let sb: RunningSandbox;
  beforeAll(async () => {
    sb = await sandbox();
  });
  afterAll(async () => {
    await sb?.close();
  });

  // undici: what importing node:http loads (http.WebSocket); tls: a proxy's tunnel; crypto: hashing a name.
  const HEAVY = ['NativeModule internal/deps/undici/undici', 'NativeModule tls', 'NativeModule crypto'];

  it('wallet list loads neither undici, TLS nor node:crypto', async () => {
    const user = await newUser(NO_SERVICE);
    const loaded = await modulesLoaded(user, ['wallet', 'list', '--json']);
    expect(loaded).toContain('NativeModule fs');
    expect(HEAVY.filter((name) => loaded.includes(name))).toEqual([]);
  });

  it('balance ADDRESS over plain HTTP loads node:http but neither undici nor TLS', async () => {
    const { api_key: key, address } = sb.service.createWallet() as { api_key: string; address: string };
    const user = await newUser(sb.url, { NANOPAY_API_KEY: key });
    const loaded = await modulesLoaded(user, ['balance', address, '--json']);
    expect(loaded).toContain('NativeModule http');
    expect(HEAVY.slice(0, 2).filter((name) => loaded.includes(name))).toEqual([]);
  });
});
