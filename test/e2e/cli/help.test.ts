import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../../src/errors.js';
import { newUser, type CliUser } from '../../helpers/processes/cli.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));

interface ManifestCommand {
  id: string;
  summary?: string;
  description?: string;
  examples?: string[];
  hidden?: boolean;
}
/** Written by `npm run build` (oclif manifest): what the help is rendered from. */
const manifest = JSON.parse(readFileSync(join(root, 'oclif.manifest.json'), 'utf8')) as { commands: Record<string, ManifestCommand> };
const commands = Object.values(manifest.commands).filter((c) => c.hidden !== true);
/** Commands of the plugins (help, version, autocomplete), listed with ours. */
const PLUGIN_COMMANDS = ['autocomplete', 'version'];

/** Every variable src/ reads that is nanopay's own (not the platform's, such as HOME or DISPLAY). */
function variablesReadBySrc(): string[] {
  const names = new Set<string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) {
        for (const match of readFileSync(path, 'utf8').matchAll(/\b(NANOPAY_[A-Z_]+|NANO_[A-Z_]+|AGENT_MODE|AI_WALLET_PASSWORD|NO_COLOR)\b/g)) names.add(match[1]!);
      }
    }
  };
  walk(join(root, 'src'));
  return [...names].sort();
}

/** The sections of the top-level help: header line → its lines. */
function sections(help: string): Map<string, string[]> {
  const result = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const line of help.split('\n')) {
    if (/^[A-Z][A-Z ]+/.test(line)) {
      current = [];
      result.set(line.replace(/ \(.*$/, '').trim(), current);
    } else current?.push(line);
  }
  return result;
}

let user: CliUser;
let help: string;

beforeAll(async () => {
  // No service is needed: help reads nothing but the manifests.
  user = await newUser('http://127.0.0.1:9');
  const result = await user.run(['--help']);
  expect(result.code).toBe(0);
  help = result.stdout;
});

describe('the top-level help', () => {
  it('lists every command exactly once, by its full name, and no topic list beside it', () => {
    const listed = (sections(help).get('COMMANDS') ?? []).map((line) => /^ {2}(\S+(?: \S+)*?) {2,}\S/.exec(line)?.[1]).filter((name): name is string => name !== undefined);
    const expected = [...commands.map((c) => c.id.replaceAll(':', ' ')), ...PLUGIN_COMMANDS];
    expect([...listed].sort()).toEqual([...expected].sort());
    expect(new Set(listed).size).toBe(listed.length);
    expect(help).not.toMatch(/^TOPICS/m);
    // A command that is also a topic (credits, sandbox) starts exactly one line.
    for (const name of ['credits', 'sandbox', 'credits topup', 'sandbox fund']) {
      expect(help.split('\n').filter((line) => new RegExp(`^ {2}${name} {2,}`).test(line))).toHaveLength(1);
    }
  });

  it('names --json and the flags that mean the same everywhere', () => {
    const flags = (sections(help).get('COMMON FLAGS') ?? []).join('\n');
    for (const flag of ['--json', '--help', '--profile', '--password-file', '--password-stdin', '--wallet', '--account', '--yes']) expect(flags).toContain(flag);
  });

  it('names every environment variable nanopay reads', () => {
    const environment = (sections(help).get('ENVIRONMENT') ?? []).join('\n');
    const variables = variablesReadBySrc();
    expect(variables).toEqual(expect.arrayContaining(['NANOPAY_PROFILE', 'NANOPAY_API_URL', 'NANOPAY_API_KEY', 'NANOPAY_CONFIG_DIR', 'NANOPAY_BACKEND', 'NANOPAY_NODE_URL', 'NANOPAY_NODE_WS_URL', 'NANOPAY_NODE_AUTH', 'NANO_WORK_MODE', 'NANO_WORK_SERVER_URL', 'NANOPAY_HTTP_LISTEN_ADDR', 'NANOPAY_QR_STYLE', 'NO_COLOR']));
    for (const name of variables) expect(environment, `${name} is read in src/ but not in the help`).toMatch(new RegExp(`\\b${name}\\b`));
  });

  it('lists every exit code', () => {
    const codes = (sections(help).get('EXIT CODES') ?? []).map((line) => /^ {2}(\d+) /.exec(line)?.[1]).filter((code) => code !== undefined).map(Number);
    expect(codes).toEqual(Object.values(ExitCode));
  });

  it('says how to get completion for bash, zsh, powershell and fish', () => {
    const completion = (sections(help).get('SHELL COMPLETION') ?? []).join('\n').replace(/\s+/g, ' ');
    expect(completion).toContain('bash, zsh, powershell nanopay autocomplete SHELL');
    expect(completion).toContain('nanopay completion fish > ~/.config/fish/completions/nanopay.fish');
  });

  it('-h and help print the same page', async () => {
    for (const args of [['-h'], ['help']]) expect((await user.run(args)).stdout).toBe(help);
  });
});

describe('every command', () => {
  it.each(commands.map((c) => [c.id.replaceAll(':', ' '), c] as const))('%s has a summary and a description in sentences, and an example', (_name, command) => {
    expect(command.summary, 'summary').toMatch(/^[A-Z].*[.!?]$/s);
    expect(command.description, 'description').toMatch(/^[A-Z][\s\S]*[.!?]$/);
    expect(command.examples?.length ?? 0).toBeGreaterThanOrEqual(1);
    for (const example of command.examples ?? []) expect(example).toContain('<%= config.bin %>');
  });

  it('a command that is also a topic shows its description, examples and subcommands once', async () => {
    const result = await user.run(['credits', '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('EXAMPLES');
    expect(result.stdout.match(/credits topup {2,}/g)).toHaveLength(1);
  });

  it('descriptions are reflowed to the width (no line broken in the middle of a sentence by the source)', async () => {
    const result = await user.run(['send', '--help']);
    const description = result.stdout.split('DESCRIPTION\n')[1]!.split('\n\n')[1]!;
    // oclif wraps at 80 columns without a terminal: every line but the last is nearly full.
    const lines = description.split('\n');
    for (const line of lines.slice(0, -1)) expect(line.length).toBeGreaterThan(60);
  });
});
