import { spawn } from 'node:child_process';
import { cp, mkdir, readdir, readFile, symlink } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { validateWork } from '../../../src/work/pow.js';
import { runCommand, type RunResult } from '../../helpers/processes/cli.js';
import { docBlocks } from '../../helpers/processes/docs.js';
import { tempDir } from '../../helpers/processes/temp.js';

/**
 * The README's install from a tarball, as a user does it: `npm pack` (which builds dist/ through `prepare`), then
 * `npm install -g` of the tarball into a prefix of its own, once as is and once on a PATH without a C compiler.
 * The installed copies have no devDependencies (no TypeScript, no esbuild) and run on this test's Node. The
 * dependencies come from npm's cache when `npm ci` put them there, else from the registry.
 */
const root = fileURLToPath(new URL('../../..', import.meta.url));
const NODE_BIN = dirname(process.execPath);
const PACKAGE = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { name: string; version: string };
/** What `npm pack` needs to build the package: the sources and the build scripts (node_modules is linked). */
const SOURCES = ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'binding.gyp', 'README.md', 'docs', 'bin', 'src', 'native', 'scripts'];
/** A C or C++ compiler's name, with or without a target prefix or a version suffix (x86_64-linux-gnu-gcc-12). */
const COMPILER = /^(?:[\w.]+-)*(?:cc|c\+\+|gcc|g\+\+|cpp|clang|clang\+\+|tcc)(?:-[\d.]+)?$/;

/**
 * This environment without what the outer `npm test` told its scripts (a nested npm would take the outer project for
 * its own), with this test's Node first on PATH.
 */
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const kept = ['npm_config_nodedir', 'npm_config_cache', 'npm_config_userconfig', 'npm_config_registry'];
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !(key.startsWith('npm_') || key === 'INIT_CWD') || kept.includes(key)));
  // NODE_ENV as many a developer's shell has it: oclif then looks for TypeScript sources, which an installed copy lacks.
  // TMPDIR: this file's directory, removed after it (npm keeps Node's compile cache in TMPDIR).
  return { ...env, PATH: `${NODE_BIN}${delimiter}${process.env.PATH ?? ''}`, NO_COLOR: '1', NODE_ENV: 'development', TMPDIR: work, ...extra };
}

/** A command of the install, given more time than a CLI command. */
const run = (command: string, args: string[], options: { cwd?: string; env: NodeJS.ProcessEnv }): Promise<RunResult> => runCommand(command, args, { timeoutMs: 240_000, ...options });

/** A directory of links to every command on PATH but the C and C++ compilers, as on a machine without them. */
async function pathWithoutCompiler(dir: string): Promise<string> {
  await mkdir(dir);
  const seen = new Set<string>();
  for (const from of [NODE_BIN, ...(process.env.PATH ?? '').split(delimiter)]) {
    const names = await readdir(from).catch(() => [] as string[]);
    for (const name of names) {
      if (seen.has(name) || COMPILER.test(name)) continue;
      seen.add(name);
      await symlink(join(from, name), join(dir, name));
    }
  }
  return dir;
}

/** The placeholder of the MCP client blocks of docs/agents.md. */
const DOCS_API_URL = 'http://127.0.0.1:7076';

interface McpBlock {
  command: string;
  args: string[];
  env: Record<string, string>;
}

/** The nanopay server of each MCP client block of docs/agents.md (its blocks marked test=install), by client. */
function mcpBlocks(): Record<string, McpBlock> {
  const blocks = docBlocks('docs/agents.md', 'install');
  expect(blocks.map((b) => b.lang)).toEqual(['json', 'json', 'toml']);
  const [claudeBlock, vscodeBlock, codexBlock] = blocks.map((b) => b.code) as [string, string, string];
  const claude = (JSON.parse(claudeBlock) as { mcpServers: { nanopay: McpBlock } }).mcpServers.nanopay;
  const vscode = (JSON.parse(vscodeBlock) as { servers: { nanopay: McpBlock & { type: string } } }).servers.nanopay;
  expect(vscode.type).toBe('stdio');
  // The TOML block's three keys, whose values are written as JSON would write them (but the inline table's keys).
  expect(codexBlock).toMatch(/^\[mcp_servers\.nanopay\]\n/);
  const toml = Object.fromEntries(
    codexBlock
      .split('\n')
      .filter((line) => /^\w+ = /.test(line))
      .map((line) => {
        const [key, value] = line.split(/ = (.*)/s) as [string, string];
        return [key, JSON.parse(value.replace(/^\{ (\w+) = /, '{ "$1": '))];
      }),
  ) as unknown as McpBlock;
  const only = ({ command, args, env }: McpBlock): McpBlock => ({ command, args, env });
  return { 'Claude Desktop': only(claude), 'VS Code': only(vscode), Codex: only(toml) };
}

let work: string;
let tarball: string;
let installed: { full: RunResult; bare: RunResult };
let noCompilerPath: string;
const nanopay = (prefix: string): string => join(work, prefix, 'bin', 'nanopay');
const packageDir = (prefix: string): string => join(work, prefix, 'lib', 'node_modules', PACKAGE.name);

beforeAll(async () => {
  work = await tempDir('nanopay-install-');
  const source = join(work, 'source');
  for (const entry of SOURCES) await cp(join(root, entry), join(source, entry), { recursive: true });
  await symlink(join(root, 'node_modules'), join(source, 'node_modules'));
  const packed = await run('npm', ['pack', '--pack-destination', work], { cwd: source, env: cleanEnv() });
  if (packed.code !== 0) throw new Error(`npm pack failed:\n${packed.stdout}\n${packed.stderr}`);
  tarball = join(work, `${PACKAGE.name}-${PACKAGE.version}.tgz`);
  noCompilerPath = await pathWithoutCompiler(join(work, 'no-compiler-bin'));
  const install = (prefix: string, env: NodeJS.ProcessEnv) =>
    run('npm', ['install', '-g', '--prefer-offline', '--no-audit', '--no-fund', '--prefix', join(work, prefix), tarball], { cwd: work, env });
  const bareEnv = cleanEnv({ PATH: noCompilerPath });
  delete bareEnv.CC;
  delete bareEnv.CXX;
  const [full, bare] = await Promise.all([install('full', cleanEnv()), install('bare', bareEnv)]);
  installed = { full, bare };
}, 300_000);

describe('npm pack, then npm install -g of the tarball', () => {
  it('packs what an installed copy needs, and none of the tests or TypeScript sources', async () => {
    const listed = await run('tar', ['-tzf', tarball], { env: cleanEnv() });
    const files = listed.stdout.split('\n').filter(Boolean).map((line) => line.replace(/^package\//, ''));
    for (const needed of ['package.json', 'README.md', 'docs/wallet.md', 'docs/reference.md', 'docs/checkout-360.png', 'bin/run.js', 'dist/index.js', 'dist/index.d.ts', 'dist/app/main.js', 'dist/app/pow-worker.js', 'oclif.manifest.json', 'binding.gyp', 'scripts/build-native.mjs', 'native/addon.c', 'native/pow_kernel.h', 'native/pow.wasm']) {
      expect(files).toContain(needed);
    }
    expect(files.filter((file) => /^(test|src|bench|node_modules|build)\//.test(file) || file.endsWith('.test.js'))).toEqual([]);
  });

  it("installs, and runs nanopay --version, nanopay sandbox and a wallet on it, and nanopay mcp as each MCP client block of docs/agents.md starts it", async () => {
    expect(installed.full.code, installed.full.stderr).toBe(0);
    expect(existsSync(join(packageDir('full'), 'build', 'Release', 'nanopay_pow.node'))).toBe(true);
    const home = await tempDir('nanopay-install-home-');
    // The default config dir, under HOME, as the MCP clients below find it.
    const env = cleanEnv({ HOME: home, NANOPAY_PASSWORD: 'install test password' });
    delete env.NANOPAY_CONFIG_DIR;
    delete env.XDG_CONFIG_HOME;
    const bin = nanopay('full');

    const version = await run(bin, ['--version'], { env });
    expect(version.stderr).toBe('');
    expect(version.stdout.trim()).toBe(`${PACKAGE.name}/${PACKAGE.version} linux-${process.arch} node-${process.version}`);

    const sandbox = spawn(bin, ['sandbox', '--port', '0', '--data-dir', join(home, 'ledger'), '--quiet', '--json'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const closed = new Promise<number | null>((resolve) => sandbox.once('close', resolve));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        sandbox.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('\n')) resolve((JSON.parse(out.split('\n')[0] as string) as { url: string }).url);
        });
        sandbox.once('close', (code) => reject(new Error(`the installed sandbox exited ${code}`)));
      });
      const userEnv = { ...env, NANOPAY_API_URL: url };
      expect((await run(bin, ['wallet', 'create', '--remote', '--json'], { env: userEnv })).code).toBe(0);
      expect((await run(bin, ['sandbox', 'fund'], { env: userEnv })).code).toBe(0);
      // Receiving signs a block with proof of work made by the addon built at install; a request goes to the SQLite store.
      const balance = await run(bin, ['balance', '--receive', '--json'], { env: userEnv });
      expect(balance.stderr).not.toContain('kernel');
      expect(JSON.parse(balance.stdout)).toMatchObject({ balance: '10' });
      const request = await run(bin, ['request', '1', '--json'], { env: userEnv });
      expect(JSON.parse(request.stdout)).toMatchObject({ amount: expect.stringMatching(/^1\.0+\d+$/) });

      // Each client's block of docs/agents.md, as that client starts it: its command, arguments and env (the URL is the
      // user's; the absolute paths are where this install put node and nanopay). No password: the blocks sign through
      // the session the guide unlocks first, scoped for MCP.
      const unlocked = await run(bin, ['unlock', '--for', '5m', '--scope', 'mcp', '--json'], { env: userEnv });
      expect(JSON.parse(unlocked.stdout)).toMatchObject({ scope: 'mcp', undumpable: true });
      const blocks = mcpBlocks();
      expect(Object.keys(blocks)).toEqual(['Claude Desktop', 'VS Code', 'Codex']);
      for (const block of Object.values(blocks)) expect(JSON.stringify(block)).not.toMatch(/password/i);
      const mine = (text: string): string => text.replace('/usr/local/bin/node', process.execPath).replace('/usr/local/bin/nanopay', bin).replace(DOCS_API_URL, url);
      for (const [name, block] of Object.entries(blocks)) {
        const blockEnv = Object.fromEntries(Object.entries(block.env).map(([key, value]) => [key, mine(value)]));
        // What a client's process has besides: the global bin and node on PATH, HOME (so the default config dir).
        const clientEnv = { PATH: `${dirname(bin)}${delimiter}${NODE_BIN}${delimiter}/usr/bin${delimiter}/bin`, HOME: home, ...blockEnv };
        const transport = new StdioClientTransport({ command: mine(block.command), args: block.args.map(mine), env: clientEnv, stderr: 'pipe' });
        let stderr = '';
        transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
        const client = new Client({ name: `nanopay-install-test (${name})`, version: '1.0.0' });
        await client.connect(transport);
        try {
          expect(client.getServerVersion()?.name, name).toBe('nanopay');
          const answer = await client.callTool({ name: 'wallet_balance', arguments: {} });
          expect(JSON.parse((answer.content as { text: string }[])[0]?.text ?? 'null'), `${name}: ${stderr}`).toMatchObject({ success: true, data: { balance: '10' } });
        } finally {
          await client.close();
        }
      }
    } finally {
      await run(bin, ['lock'], { env: { ...env, NANOPAY_API_URL: 'http://127.0.0.1:1' } });
      sandbox.kill('SIGTERM');
      expect(await closed).toBe(0);
    }
  });

  it('installs on a machine without a C compiler: proof of work falls back to WebAssembly with a one-line notice', async () => {
    const hidden = await run('sh', ['-c', 'command -v cc gcc g++ c++ clang'], { env: cleanEnv({ PATH: noCompilerPath }) });
    expect(hidden.stdout).toBe('');
    expect(installed.bare.code, installed.bare.stderr).toBe(0);
    expect(existsSync(join(packageDir('bare'), 'build', 'Release', 'nanopay_pow.node'))).toBe(false);
    const home = await tempDir('nanopay-install-home-');
    const env = cleanEnv({ PATH: noCompilerPath, HOME: home, NANOPAY_CONFIG_DIR: join(home, 'nanopay') });
    const root = 'A'.repeat(64);
    const generated = await run(nanopay('bare'), ['work', 'generate', '--root', root, '--threshold', 'fff0000000000000', '--json'], { env });
    expect(generated.code, generated.stderr).toBe(0);
    expect(generated.stderr).toBe('nanopay: proof of work runs on the wasm kernel, slower: the native addon was not built at install, which needs a C compiler (README: Install).\n');
    expect(validateWork(root, (JSON.parse(generated.stdout) as { work: string }).work, 'fff0000000000000')).toBe(true);
    // Without the addon an unlocked session cannot close its memory to the user's other processes: unlock says so.
    const withPassword = { ...env, NANOPAY_PASSWORD: 'install test password' };
    expect((await run(nanopay('bare'), ['wallet', 'create', '--json'], { env: withPassword })).code).toBe(0);
    const unlocked = await run(nanopay('bare'), ['unlock', '--for', '30s'], { env: withPassword });
    expect(unlocked.code, unlocked.stderr).toBe(0);
    expect(unlocked.stderr).toContain("Warning: the session's memory is readable by your other processes");
    expect((await run(nanopay('bare'), ['lock'], { env })).code).toBe(0);
  });
});
