import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { newUser, type CliUser } from '../../helpers/processes/cli.js';

interface ManifestFlag {
  name: string;
  type: 'boolean' | 'option';
  char?: string;
  hidden?: boolean;
  allowNo?: boolean;
  options?: string[];
}
interface ManifestCommand {
  id: string;
  hidden?: boolean;
  flags: Record<string, ManifestFlag>;
}
const manifest = JSON.parse(readFileSync(fileURLToPath(new URL('../../../oclif.manifest.json', import.meta.url)), 'utf8')) as { commands: Record<string, ManifestCommand> };
const commands = Object.values(manifest.commands).filter((c) => c.hidden !== true);
const spaced = (id: string): string => id.replaceAll(':', ' ');

/** Splits a line of fish the way fish does for these lines: words, 'single-quoted' strings with \' and \\ escapes. */
function words(line: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < line.length) {
    if (line[i] === ' ') {
      i++;
      continue;
    }
    let word = '';
    while (i < line.length && line[i] !== ' ') {
      if (line[i] === "'") {
        i++;
        while (i < line.length && line[i] !== "'") {
          if (line[i] === '\\' && (line[i + 1] === "'" || line[i + 1] === '\\')) i++;
          word += line[i++];
        }
        i++;
      } else word += line[i++];
    }
    out.push(word);
  }
  return out;
}

interface Completion {
  condition?: string;
  long?: string;
  short?: string;
  candidates?: string;
  description?: string;
  takesValue: boolean;
}

/** The `complete -c nanopay …` lines of the script, parsed. */
function completions(script: string): Completion[] {
  return script
    .split('\n')
    .filter((line) => line.startsWith('complete -c nanopay '))
    .map((line) => {
      const w = words(line);
      const value = (option: string): string | undefined => {
        const at = w.indexOf(option);
        return at === -1 ? undefined : w[at + 1];
      };
      const result: Completion = { takesValue: w.includes('-x') || w.includes('-r') };
      for (const [key, option] of [['condition', '-n'], ['long', '-l'], ['short', '-s'], ['candidates', '-a'], ['description', '-d']] as const) {
        const v = value(option);
        if (v !== undefined) result[key] = v;
      }
      return result;
    });
}

let user: CliUser;
let script: string;
let lines: Completion[];

beforeAll(async () => {
  user = await newUser('http://127.0.0.1:9');
  const result = await user.run(['completion', 'fish']);
  expect(result.code).toBe(0);
  expect(result.stderr).toBe('');
  script = result.stdout;
  lines = completions(script);
});

describe('nanopay completion fish', () => {
  it('offers every command word by word, topics separated by spaces, each with a description', () => {
    const all = [...commands.map((c) => spaced(c.id)), 'autocomplete', 'version'];
    for (const id of all) {
      const parts = id.split(' ');
      parts.forEach((word, i) => {
        const condition = ['__fish_nanopay_at', ...parts.slice(0, i)].join(' ');
        const line = lines.find((l) => l.condition === condition && l.candidates === word);
        expect(line, `${id}: "${word}" after "${parts.slice(0, i).join(' ')}"`).toBeDefined();
        expect(line?.description ?? '', `${id}: a description for "${word}"`).not.toBe('');
      });
    }
    // The list the script finds the command in: every command once.
    const listed = words(script.split('\n').find((l) => l.startsWith('set -g __fish_nanopay_commands '))!).slice(3);
    expect([...listed].sort()).toEqual([...all].sort());
  });

  it('offers every flag of every command, with its description, its short form and whether it takes a value', () => {
    for (const command of commands) {
      const condition = `__fish_nanopay_using ${spaced(command.id)}`;
      for (const flag of Object.values(command.flags).filter((f) => f.hidden !== true)) {
        const line = lines.find((l) => l.condition === condition && l.long === flag.name);
        expect(line, `${spaced(command.id)} --${flag.name}`).toBeDefined();
        expect(line!.description ?? '', `${spaced(command.id)} --${flag.name}: description`).not.toBe('');
        expect(line!.short).toBe(flag.char);
        expect(line!.takesValue).toBe(flag.type === 'option');
        if (flag.options !== undefined) expect(line!.candidates?.split(' ')).toEqual(flag.options);
        if (flag.allowNo === true) expect(lines.some((l) => l.condition === condition && l.long === `no-${flag.name}`)).toBe(true);
      }
      // Nothing beyond the command's own flags.
      const offered = lines.filter((l) => l.condition === condition && l.long !== undefined).map((l) => l.long);
      const known = Object.values(command.flags).flatMap((f) => (f.allowNo === true ? [f.name, `no-${f.name}`] : [f.name]));
      expect(offered.filter((name) => !known.includes(name!))).toEqual([]);
    }
    // --raw is send's ("the amount is in raw"); balance shows raw amounts with --show-raw.
    expect(lines.some((l) => l.condition === '__fish_nanopay_using balance' && l.long === 'show-raw')).toBe(true);
    expect(lines.some((l) => l.condition === '__fish_nanopay_using balance' && l.long === 'raw')).toBe(false);
  });

  it('--json gives the same script in one document', async () => {
    const json = await user.json<{ shell: string; script: string }>(['completion', 'fish']);
    expect(json).toMatchObject({ _code: 0, shell: 'fish', script });
  });

  it('bash goes to the autocomplete plugin; an unknown shell is a usage error', async () => {
    const bash = await user.run(['completion', 'bash']);
    expect(bash.code).toBe(0);
    expect(bash.stdout).toContain('nanopay autocomplete script bash');
    const tcsh = await user.run(['completion', 'tcsh']);
    expect(tcsh.code).toBe(2);
  });
});

// fish itself, where it is installed (Debian: apt-get install fish); CI installs it (.ci/run).
const fish = spawnSync('fish', ['--version']).status === 0;
if (!fish && process.env.CI === undefined) console.warn('completion.test.ts: fish is not installed, so the script was not run in fish (apt-get install fish)');

describe.skipIf(!fish && process.env.CI === undefined)('the script in fish', () => {
  const file = (): string => join(user.configDir, 'nanopay.fish');
  beforeAll(() => writeFile(file(), script));
  // fish makes its own dirs under HOME (or XDG_CONFIG_HOME) as it starts: the user's temporary dir, not the machine user's.
  const fishEnv = (): NodeJS.ProcessEnv => ({ PATH: process.env.PATH, HOME: user.configDir });
  const complete = async (line: string): Promise<string[]> => {
    const out = execFileSync('fish', ['--no-config', '-c', `source ${file()}; complete -C '${line}'`], { encoding: 'utf8', env: fishEnv() });
    return out.split('\n').filter((l) => l !== '').map((l) => l.split('\t')[0]!);
  };

  it('is valid fish', () => {
    const check = spawnSync('fish', ['--no-config', '--no-execute', file()], { encoding: 'utf8', env: fishEnv() });
    expect(check.stderr).toBe('');
    expect(check.status).toBe(0);
  });

  it('completes commands, topics, subcommands, flags and values', async () => {
    expect(await complete('nanopay ')).toEqual(expect.arrayContaining(['wallet', 'credits', 'send', 'sandbox', 'completion', 'work']));
    expect(await complete('nanopay wal')).toEqual(['wallet']);
    expect((await complete('nanopay wallet ')).sort()).toEqual(['attach', 'create', 'export', 'import', 'list', 'remove', 'show', 'use']);
    expect(await complete('nanopay credits ')).toEqual(['topup']);
    expect(await complete('nanopay credits topup --')).toEqual(expect.arrayContaining(['--wallet', '--account', '--yes', '--json', '--help']));
    expect(await complete('nanopay send nano_1abc 1 --')).toEqual(expect.arrayContaining(['--raw', '--wallet', '--account', '--dry-run', '--id']));
    const balance = await complete('nanopay balance --');
    expect(balance).toContain('--show-raw');
    expect(balance).not.toContain('--raw');
    expect((await complete('nanopay sandbox --thresholds ')).sort()).toEqual(['dev', 'live']);
    expect(await complete('nanopay config set ')).toEqual(expect.arrayContaining(['api-url', 'limit-per-send', 'work-mode']));
    expect(await complete('nanopay request --no')).toEqual(['--no-qr']);
    expect((await complete('nanopay completion ')).sort()).toEqual(['bash', 'fish', 'powershell', 'zsh']);
  });
});
