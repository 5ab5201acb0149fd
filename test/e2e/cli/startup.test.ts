import { spawn } from 'node:child_process';
import { chmod, mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Config } from '@oclif/core';
import { describe, expect, it } from 'vitest';
import NanopayHelp from '../../../src/cli/help.js';
import { BIN, newUser, type RunResult } from '../../helpers/processes/cli.js';
import { tempDir } from '../../helpers/processes/temp.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const ADDRESS = 'nano_3t6k35gi95xu6tergt6p69ck76ogmitsa8mnijtpxm9fkcm736xtoncuohr3';
// Nothing listens there: a command that got as far as the network would fail differently.
const NO_SERVICE = 'http://127.0.0.1:9';

/** oclif's own answer, from the bundled entry bin/run.js loads, without bin/run.js's fast path. */
function oclifVersion(): Promise<RunResult> {
  const script = `const { run } = await import(${JSON.stringify(pathToFileURL(join(ROOT, 'dist/app/main.js')).href)}); await run(['--version'], ${JSON.stringify(pathToFileURL(BIN).href)});`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

async function commandIds(dir = join(ROOT, 'src/commands')): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => relative(join(ROOT, 'src/commands'), join(e.parentPath, e.name)).slice(0, -'.ts'.length).split(sep))
    .map((parts) => (parts.at(-1) === 'index' ? parts.slice(0, -1) : parts).join(':'))
    .sort();
}

/** The help class bin/run.js uses, writing its page to a string. */
class CapturedHelp extends NanopayHelp {
  output = '';
  protected override log(...args: string[]): void {
    this.output += `${args.join(' ')}\n`;
  }
}

describe('start-up', () => {
  it('bin/run.js answers --version with the very line oclif prints', async () => {
    const user = await newUser(NO_SERVICE);
    const fast = await user.run(['--version']);
    const oclif = await oclifVersion();
    expect(oclif.code).toBe(0);
    expect(fast.code).toBe(0);
    expect(fast.stdout).toBe(oclif.stdout);
    expect(fast.stdout).toMatch(/^nanopay-cli\/\d+\.\d+\.\d+\S* \S+-\S+ node-v\d+/);
    expect(fast.stderr).toBe('');
  });

  it('the shipped manifest lists exactly the commands in src/commands, so it is not stale', async () => {
    const manifest = JSON.parse(await readFile(join(ROOT, 'oclif.manifest.json'), 'utf8')) as { commands: Record<string, unknown> };
    expect(Object.keys(manifest.commands).sort()).toEqual(await commandIds());
  });

  it('--help lists every command and topic, and each command has its full help', async () => {
    const user = await newUser(NO_SERVICE, { COLUMNS: '200' });
    const ids = await commandIds();
    const help = await user.run(['--help']);
    expect(help.code).toBe(0);
    for (const topic of ['wallet', 'config', 'account', 'block', 'network', 'work']) expect(help.stdout).toMatch(new RegExp(`^  ${topic}\\s`, 'm'));
    for (const id of ids.filter((i) => !i.includes(':'))) expect(help.stdout).toMatch(new RegExp(`^  ${id}\\s`, 'm'));
    const send = await user.run(['send', '--help']);
    expect(send.code).toBe(0);
    for (const part of ['USAGE', '$ nanopay send ADDRESS AMOUNT', 'ARGUMENTS', 'FLAGS', '--dry-run', 'GLOBAL FLAGS', '--password-file', 'EXAMPLES']) {
      expect(send.stdout).toContain(part);
    }
    // Every other page in one process: oclif's configuration of the package and our help class, as
    // `nanopay ID --help` renders them (a child process each added nothing but start-up).
    const config = await Config.load(ROOT);
    // `help --help` is the top-level page: oclif skips the word help when it picks what to show.
    for (const id of ids.filter((i) => i !== 'help')) {
      const page = new CapturedHelp(config, { stripAnsi: true });
      await page.showHelp(id.split(':'));
      expect(page.output, id).toContain(`$ nanopay ${id.split(':').join(' ')}`);
    }
  });
});

describe('the settings file is refused, never rewritten', () => {
  it.each([['[]'], ['"hello"']])('balance with a config.json of %s: STORE_CORRUPT, exit 1, the file untouched', async (text) => {
    const user = await newUser(NO_SERVICE, { NANOPAY_API_KEY: 'key' });
    const file = join(user.configDir, 'config.json');
    await writeFile(file, text);
    const result = await user.json<{ error: { code: string } }>(['balance', ADDRESS]);
    expect(result._code).toBe(1);
    expect(result.error.code).toBe('STORE_CORRUPT');
    expect(await readFile(file, 'utf8')).toBe(text);
  });

  it('a symbolic link as config.json is neither read nor written through', async () => {
    const user = await newUser(NO_SERVICE);
    // Outside the config dir, where another program keeps its own file.
    const theirs = join(await tempDir('nanopay-theirs-'), 'theirs.json');
    const text = '{"version": 1, "profiles": {"default": {"wallets": {}, "apiUrl": "http://theirs"}}}';
    await writeFile(theirs, text);
    await symlink(theirs, join(user.configDir, 'config.json'));
    const list = await user.json<{ error: { code: string; message: string } }>(['wallet', 'list']);
    expect(list._code).toBe(1);
    expect(list.error).toMatchObject({ code: 'STORE_CORRUPT', message: expect.stringContaining('symbolic link') });
    const set = await user.json<{ error: { code: string } }>(['config', 'set', 'api-url', 'http://127.0.0.1:1']);
    expect(set._code).toBe(1);
    expect(set.error.code).toBe('STORE_CORRUPT');
    expect(await readFile(theirs, 'utf8')).toBe(text);
  });

  it('a config dir that is a symbolic link to a shared directory is refused and its mode left alone', async () => {
    const user = await newUser(NO_SERVICE);
    const shared = join(user.configDir, 'shared');
    await mkdir(shared);
    await chmod(shared, 0o755);
    const linked = join(user.configDir, 'nanopay');
    await symlink(shared, linked);
    const list = await user.json<{ error: { code: string; message: string } }>(['wallet', 'list'], { env: { NANOPAY_CONFIG_DIR: linked } });
    expect(list._code).toBe(1);
    expect(list.error).toMatchObject({ code: 'STORE_CORRUPT', message: expect.stringContaining('symbolic link') });
    expect((await stat(shared)).mode & 0o777).toBe(0o755);
    expect(await readdir(shared)).toEqual([]);
  });
});
