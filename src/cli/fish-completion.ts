/**
 * A fish completion script made from oclif's command list (the manifests): the
 * command words (topics separated by spaces), each command's flags with their
 * descriptions, the values of flags and arguments that have a fixed set, and
 * file names only where a flag takes a path. bash, zsh and powershell get theirs
 * from @oclif/plugin-autocomplete (`nanopay autocomplete SHELL`).
 */
import { commandSummary } from './output/command-summary.js';

/** What the script needs of a flag: oclif's manifest form. */
export interface FlagInfo {
  name: string;
  type: 'boolean' | 'option';
  char?: string | undefined;
  description?: string | undefined;
  summary?: string | undefined;
  options?: readonly string[] | undefined;
  hidden?: boolean | undefined;
  allowNo?: boolean | undefined;
  aliases?: readonly string[] | undefined;
}

/** What the script needs of a command: oclif's manifest form (ids use ':' between topics). */
export interface CommandInfo {
  id: string;
  summary?: string | undefined;
  description?: string | undefined;
  hidden?: boolean | undefined;
  flags: Record<string, FlagInfo>;
  args: Record<string, { options?: readonly string[] | undefined }>;
}

export interface TopicInfo {
  name: string;
  description?: string | undefined;
  hidden?: boolean | undefined;
}

/** A fish single-quoted string. */
function quote(text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** The first line, without a final period: fish shows it beside the candidate. */
function short(text: string | undefined, bin: string): string {
  return (text ?? '').split('\n')[0]!.replace(/<%=\s*config\.bin\s*%>/g, bin).trim().replace(/\.$/, '');
}

/** Flags whose value is a path: only they complete file names. */
const takesPath = (flag: FlagInfo): boolean => /(^|-)(file|dir)$/.test(flag.name);

function flagLine(bin: string, command: string, flag: FlagInfo, name: string, description: string): string {
  const parts = [`complete -c ${bin} -n ${quote(`__fish_${bin}_using ${command}`)}`];
  parts.push(`-l ${name}`);
  if (flag.char !== undefined && name === flag.name) parts.push(`-s ${flag.char}`);
  if (flag.type === 'option') {
    if (flag.options !== undefined && flag.options.length > 0) parts.push(`-x -a ${quote(flag.options.join(' '))}`);
    else if (takesPath(flag)) parts.push('-r -F');
    else parts.push('-x');
  }
  if (description !== '') parts.push(`-d ${quote(description)}`);
  return parts.join(' ');
}

export function fishCompletion(bin: string, version: string, commands: readonly CommandInfo[], topics: readonly TopicInfo[]): string {
  const visible = [...new Map(commands.filter((c) => c.hidden !== true).map((c) => [c.id, c])).values()].sort((a, b) => a.id.localeCompare(b.id));
  const spaced = (id: string): string => id.split(':').join(' ');
  const byId = new Map(visible.map((c) => [spaced(c.id), c]));
  const topicText = new Map(topics.filter((t) => t.hidden !== true).map((t) => [spaced(t.name), short(t.description, bin)]));
  const fn = `__fish_${bin}`;
  const lines = [
    `# fish completion for ${bin} (${version}), made by \`${bin} completion fish\` from its commands.`,
    `# Install: ${bin} completion fish > ~/.config/fish/completions/${bin}.fish`,
    '',
    `set -g ${fn}_commands ${visible.map((c) => quote(spaced(c.id))).join(' ')}`,
    '',
    '# The command words typed so far: the words before the first flag.',
    `function ${fn}_words`,
    '    set -l words (commandline -opc)',
    '    set -e words[1]',
    '    for word in $words',
    "        string match -q -- '-*' $word; and break",
    '        echo $word',
    '    end',
    'end',
    '',
    '# True when the words typed so far are exactly the arguments (none: the first word).',
    `function ${fn}_at`,
    `    set -l words (${fn}_words)`,
    '    test "$words" = "$argv"',
    'end',
    '',
    '# The command being typed: the longest run of leading words that names one.',
    `function ${fn}_command`,
    '    set -l path',
    '    set -l found',
    `    for word in (${fn}_words)`,
    '        set path $path $word',
    `        contains -- "$path" $${fn}_commands; and set found "$path"`,
    '    end',
    '    echo $found',
    'end',
    '',
    `function ${fn}_using`,
    `    set -l command (${fn}_command)`,
    '    test "$command" = "$argv"',
    'end',
    '',
    '# No file names unless a flag takes a path.',
    `complete -c ${bin} -f`,
    `complete -c ${bin} -s h -l help -d 'Show help'`,
    `complete -c ${bin} -n ${quote(`${fn}_at`)} -s v -l version -d 'Show the version'`,
    '',
    '# Commands and topics, word by word.',
  ];

  // Each word that may follow the words typed so far: a command's (its summary) or a topic's.
  const next = new Map<string, Map<string, string>>();
  for (const id of byId.keys()) {
    const words = id.split(' ');
    words.forEach((word, i) => {
      const prefix = words.slice(0, i).join(' ');
      const path = words.slice(0, i + 1).join(' ');
      const candidates = next.get(prefix) ?? new Map<string, string>();
      next.set(prefix, candidates);
      const command = byId.get(path);
      const text = command !== undefined ? short(commandSummary(command), bin) : (topicText.get(path) ?? `${path} commands`);
      if (!candidates.has(word) || command !== undefined) candidates.set(word, text);
    });
  }
  for (const [prefix, candidates] of [...next].sort(([a], [b]) => a.localeCompare(b))) {
    const condition = quote(prefix === '' ? `${fn}_at` : `${fn}_at ${prefix}`);
    for (const [word, text] of [...candidates].sort(([a], [b]) => a.localeCompare(b))) {
      lines.push(`complete -c ${bin} -n ${condition} -a ${quote(word)}${text === '' ? '' : ` -d ${quote(text)}`}`);
    }
  }

  for (const [id, command] of byId) {
    lines.push('', `# ${id}`);
    // A first argument with a fixed set of values (config set NAME, autocomplete SHELL…).
    const first = Object.values(command.args)[0];
    if (first?.options !== undefined && first.options.length > 0) {
      lines.push(`complete -c ${bin} -n ${quote(`${fn}_at ${id}`)} -a ${quote(first.options.join(' '))}`);
    }
    for (const flag of Object.values(command.flags)) {
      if (flag.hidden === true || flag.name === 'help') continue;
      const description = short(flag.summary ?? flag.description, bin);
      lines.push(flagLine(bin, id, flag, flag.name, description));
      if (flag.type === 'boolean' && flag.allowNo === true) lines.push(flagLine(bin, id, { ...flag, type: 'boolean' }, `no-${flag.name}`, `turn off --${flag.name}`));
    }
  }
  return `${lines.join('\n')}\n`;
}
