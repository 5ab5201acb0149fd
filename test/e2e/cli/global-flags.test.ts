import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { PASSWORD, userWithWallet, type CliUser, type RunResult } from '../../helpers/processes/cli.js';
import { DOCS, docBlocks, docText, fencedBlocks } from '../../helpers/processes/docs.js';
import { onTerminal, ptyMissing } from '../../helpers/processes/pty.js';
import { fund, sandbox } from '../../helpers/ledger/sandbox.js';

/**
 * Issue 31, point 14: the flags that mean the same on every command (--profile, --json,
 * --password-file, --password-stdin) are taken before the command too, as `aws --profile X s3 ls`
 * and `git -C dir status` take theirs; and every example of the docs written that way runs.
 */
let sb: RunningSandbox;
let user: CliUser;

beforeAll(async () => {
  sb = await sandbox();
  ({ user } = await userWithWallet(sb.url, '1'));
  // A second profile, "live", with a wallet of its own.
  const made = await user.json<{ address: string }>(['wallet', 'create', '--remote', '--name', 'live-main', '--profile', 'live']);
  expect(made._code).toBe(0);
  await fund(sb.url, made.address, '2');
  expect((await user.run(['receive', '--profile', 'live'])).code).toBe(0);
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

const outputs = (r: RunResult): string => r.stdout + r.stderr;

describe('global flags before the command', () => {
  it('--profile, --profile=, --json and --password-file before the command mean what they mean after it', async () => {
    const after = await user.run(['balance', '--profile', 'live', '--json']);
    expect(after.code, outputs(after)).toBe(0);
    expect(JSON.parse(after.stdout)).toMatchObject({ balance: '2' });
    const passwordFile = join(user.configDir, 'password');
    await writeFile(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
    const noPassword = { NANOPAY_PASSWORD: '' };
    for (const args of [
      ['--profile', 'live', 'balance', '--json'],
      ['--profile=live', 'balance', '--json'],
      ['--json', '--profile', 'live', 'balance'],
      ['--profile', 'live', '--json', 'balance'],
      ['--json', 'balance', '--profile', 'live'],
      ['--password-file', passwordFile, '--profile', 'live', '--json', 'balance'],
    ]) {
      const before = await user.run(args, { env: args.includes('--password-file') ? noPassword : {} });
      expect(before.code, `${args.join(' ')}: ${outputs(before)}`).toBe(0);
      expect(before.stdout, args.join(' ')).toBe(after.stdout);
    }
    // A command of several words, and arguments after it.
    const listed = await user.run(['--profile', 'live', '--json', 'wallet', 'list']);
    expect(listed.code, outputs(listed)).toBe(0);
    expect(listed.stdout).toContain('live-main');
    const human = await user.run(['--profile', 'live', 'config', 'get', 'limit-per-send']);
    expect(human.code, outputs(human)).toBe(0);
  });

  it('a flag of one command before the command is a usage error (exit 2) saying where it goes, in JSON with --json', async () => {
    const human = await user.run(['--yes', 'send', 'nano_1111111111111111111111111111111111111111111111111111hifc8npp', '0.1']);
    expect(human.code).toBe(2);
    expect(human.stderr).toMatch(/Error \[USAGE\] --yes is not a flag nanopay takes before the command/);
    expect(human.stderr).toMatch(/Hint: .*--profile, --json, --password-file and --password-stdin/);
    const json = await user.run(['--json', '--timeout', '30s', 'balance']);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toMatchObject({ error: { code: 'USAGE', message: expect.stringContaining('--timeout') } });
    const alone = await user.run(['--profile', 'live']);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toContain('[USAGE]');
  });

  it('--version, -v, --help and help are as before; help takes the global flags too', async () => {
    const version = await user.run(['--version']);
    expect([version.code, version.stdout]).toEqual([0, expect.stringMatching(/^nanopay-cli\/\d/)]);
    expect((await user.run(['-v'])).stdout).toBe(version.stdout);
    const help = await user.run(['help', 'balance']);
    expect(help.code).toBe(0);
    const before = await user.run(['--profile', 'live', 'help', 'balance']);
    expect(before.code, outputs(before)).toBe(0);
    expect(before.stdout).toBe(help.stdout);
    const json = await user.run(['--json', 'help', 'balance']);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toMatchObject({ error: { code: 'USAGE' } });
  });
});

describe('doc examples that put flags before the command', () => {
  /** Every `nanopay --…` the README and docs/ show: in shell blocks (one a line) and inline (`…`), without comments. */
  function examples(): string[] {
    const found: string[] = [];
    for (const line of DOCS.flatMap((file) => docText(file).split('\n'))) {
      // A command line that starts with nanopay (or the key piped into it): not `codex mcp add nanopay --env …`.
      const inline = [...line.matchAll(/`((?:printf '%s' "\$KEY" \| )?nanopay --[^`]*)`/g)].map((m) => m[1] as string);
      const shell = /^(?:\$ )?(?:[A-Z_]+=\S+ )*((?:printf '%s' "\$KEY" \| )?nanopay --.*)$/.exec(line);
      for (const text of inline.length > 0 ? inline : shell === null ? [] : [shell[1] as string]) found.push(text.replace(/\s+#.*$/, '').trim());
    }
    return found;
  }

  it("the blocks marked test=global-flags are made of such lines only, so this test runs all of each", () => {
    const marked = DOCS.flatMap((file) => fencedBlocks(file).filter((b) => b.attrs.test === 'global-flags'));
    expect(marked.map((b) => b.file)).toEqual(docBlocks('docs/shop.md', 'global-flags').map((b) => b.file));
    const all = examples();
    for (const line of marked.flatMap((b) => b.code.split('\n')).filter((l) => l.trim() !== '')) expect(all).toContain(line.replace(/\s+#.*$/, '').trim());
  });

  it('there are as many as the issue counted, and each runs against the sandbox in a profile of its own', async () => {
    const all = examples();
    expect(all.length).toBeGreaterThanOrEqual(11);
    const fresh = (await userWithWallet(sb.url)).user;
    // The profile the examples use, made first with a wallet: some are shown before the steps that fill it.
    expect((await fresh.run(['wallet', 'create', '--remote', '--name', 'before-readme', '--profile', 'live'])).code).toBe(0);
    for (const example of all) {
      // `printf '%s' "$KEY" | nanopay …`: the key on stdin; the service's URL: the sandbox's.
      const piped = /^printf '%s' "\$KEY" \| (.*)$/.exec(example);
      const command = (piped?.[1] ?? example).replace('https://<the service>', sb.url);
      const args = command.replace(/^nanopay /, '').split(/\s+/);
      // The key piped in: the one `wallet create --remote` got from the sandbox a few lines before.
      const key = piped === null ? '' : (JSON.parse((await fresh.run(['config', 'get', 'api-key', '--reveal', '--profile', 'live', '--json'])).stdout) as { value: string }).value;
      const result = await fresh.run(args, { input: key });
      expect(outputs(result), example).not.toMatch(/is not a nanopay command|Nonexistent flag|before the command/);
      if (/Confirmation needed, but there is no terminal/.test(result.stderr)) {
        // Written for a person at a terminal (wallet export asks first): run there, answering yes.
        if (ptyMissing !== undefined) continue;
        const terminal = onTerminal(args, fresh.env, { columns: 120 });
        await terminal.waitFor('?');
        terminal.type('y\r');
        expect(await terminal.exited, `${example}: ${terminal.output}`).toBe(0);
        continue;
      }
      expect(result.code, `${example}: ${outputs(result)}`).toBe(0);
    }
  });
});
