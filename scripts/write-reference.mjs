// Writes docs/reference.md, the command reference, from the command definitions: each command's summary,
// description, arguments, flags (types, defaults, choices) and examples as the built commands (dist/app) declare
// them, loaded as oclif loads them (the manifest, made fresh here, never the committed file), and the sections the
// top-level help shares with it (src/cli/help-sections.ts: common flags, environment, exit codes) with the error
// codes of each exit code (src/errors.ts). `npm run docs` builds and runs it; test/e2e/cli/reference.test.ts fails when
// the committed file differs from what this prints. `--stdout` prints instead of writing.
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Plugin } from '@oclif/core';
import { COMMON_FLAGS, ENVIRONMENT, EXIT_CODES, reflow } from '../dist/cli/help-sections.js';
import { errorCatalog } from '../dist/errors.js';

const root = resolve(import.meta.dirname, '..');
const BIN = 'nanopay';
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

const bin = (text) => text.replaceAll('<%= config.bin %>', BIN);
/** Text for Markdown: what would be read as markup, escaped (an `_` inside a word is no markup and stays). */
const md = (text) => bin(text).replace(/[\\`*[\]<>|]/g, (c) => `\\${c}`).replace(/(^|\W)_|_(?=\W|$)/g, (m) => m.replace('_', '\\_'));
const cell = (text) => md(text).replaceAll('\n', ' ');
/** Code in a table's cell: a `|` there would end the cell even inside backticks (GitHub's tables). */
const code = (text) => `\`${text.replaceAll('|', '\\|')}\``;
const name = (id) => id.replaceAll(':', ' ');
const anchor = (id) => `${BIN}-${id.replaceAll(':', '-')}`;

/** The usage line of a flag: `-y, --yes`, `--format csv|json`, `--[no-]bom`, `--amount <value>`. */
function flagUsage(flag) {
  const long = flag.allowNo ? `--[no-]${flag.name}` : `--${flag.name}`;
  const value = flag.type === 'boolean' ? '' : ` ${flag.options ? flag.options.join('|') : '<value>'}`;
  return `${flag.char ? `-${flag.char}, ` : ''}${long}${value}`;
}

/** What a flag's row says beside its description: default, repeatable, required, exclusions, variable, aliases. */
function flagNotes(flag) {
  const notes = [];
  if (flag.required) notes.push('required');
  const defaults = flag.default === undefined || (Array.isArray(flag.default) && flag.default.length === 0) || flag.default === false ? undefined : flag.default;
  if (defaults !== undefined) notes.push(`default: \`${defaults}\``);
  if (flag.multiple) notes.push('repeatable');
  if (flag.exclusive?.length) notes.push(`not with ${flag.exclusive.map((f) => `\`--${f}\``).join(', ')}`);
  if (flag.env) notes.push(`or \`${flag.env}\``);
  if (flag.aliases?.length) notes.push(`also ${flag.aliases.map((a) => `\`--${a}\``).join(', ')}`);
  return notes.join('; ');
}

function argUsage(arg) {
  const upper = arg.name.toUpperCase();
  return arg.required ? upper : `[${upper}]`;
}

function renderCommand(command, commonNames) {
  const args = Object.values(command.args ?? {});
  const flags = Object.values(command.flags ?? {}).filter((f) => !f.hidden);
  const own = flags.filter((f) => f.helpGroup !== 'GLOBAL');
  const common = flags.filter((f) => f.helpGroup === 'GLOBAL').map((f) => f.name);
  const lines = [`## ${BIN} ${name(command.id)}`, ''];
  if (command.summary) lines.push(md(command.summary), '');
  lines.push(`Usage: \`${BIN} ${name(command.id)}${args.map((a) => ` ${argUsage(a)}`).join('')}${own.length > 0 ? ' [FLAGS]' : ''}\``, '');
  const description = reflow(command.description);
  if (description) lines.push(...description.split('\n\n').map((p) => md(p).split('\n').join('  \n')).flatMap((p) => [p, '']));
  if (args.length > 0) {
    lines.push('| Argument | Meaning |', '|---|---|');
    for (const arg of args) {
      const choices = arg.options ? ` (one of ${arg.options.map((o) => `\`${o}\``).join(', ')})` : '';
      lines.push(`| \`${argUsage(arg)}\` | ${cell(arg.description ?? '')}${choices}${arg.required ? '' : '; optional'} |`);
    }
    lines.push('');
  }
  if (own.length > 0) {
    lines.push('| Flag | Meaning |', '|---|---|');
    for (const flag of own) {
      const notes = flagNotes(flag);
      lines.push(`| ${code(flagUsage(flag))} | ${cell(flag.description ?? '')}${notes ? ` (${notes})` : ''} |`);
    }
    lines.push('');
  }
  const unknown = common.filter((f) => !commonNames.has(f));
  if (unknown.length > 0) throw new Error(`${command.id}: common flags ${unknown.join(', ')} are not in the list of common flags`);
  if (common.length > 0) lines.push(`Common flags: ${common.map((f) => `\`--${f}\``).join(', ')}.`, '');
  if (command.examples?.length) {
    lines.push('```sh no-run="examples from the command\'s help: nano_1… and the like stand for your own values"');
    for (const example of command.examples) lines.push(bin(typeof example === 'string' ? example : example.command));
    lines.push('```', '');
  }
  return lines;
}

/** The reference, as Markdown. */
export async function reference() {
  const plugin = new Plugin({ errorOnManifestCreate: true, ignoreManifest: true, respectNoCacheDefault: true, root, type: 'core' });
  await plugin.load();
  const commands = Object.values(plugin.manifest.commands)
    .filter((c) => !c.hidden)
    .sort((a, b) => name(a.id).localeCompare(name(b.id)));
  // The common flags (helpGroup GLOBAL) as the manifest describes them, from the first command that takes each.
  const global = new Map();
  for (const command of commands) for (const flag of Object.values(command.flags)) if (flag.helpGroup === 'GLOBAL' && !global.has(flag.name)) global.set(flag.name, flag);

  const out = [
    '# Command reference',
    '',
    '<!-- Generated by `npm run docs` (scripts/write-reference.mjs) from the command definitions: do not edit by hand. -->',
    '',
    `Every command of \`${BIN}\` ${pkg.version}, with its arguments, flags, defaults and examples, as \`${BIN} COMMAND --help\` shows them; then the environment variables and the exit codes.`,
    `\`npm run docs\` writes this file from the command definitions, and \`npm test\` fails when it is out of date.`,
    `\`${BIN} version\` (also \`-v\`, \`--version\`) prints the version, and \`${BIN} autocomplete SHELL\` sets up completion for bash, zsh or powershell (both come from oclif's plugins).`,
    '',
    '## Commands',
    '',
    '| Command | What it does |',
    '|---|---|',
    ...commands.map((c) => `| [\`${BIN} ${name(c.id)}\`](#${anchor(c.id)}) | ${cell(c.summary ?? '')} |`),
    '',
    '## Flags every command takes',
    '',
    'These mean the same on every command that takes them; each command below names the ones it takes.',
    '',
    '| Flag | Meaning |',
    '|---|---|',
    ...[...global.values()].map((f) => `| ${code(flagUsage(f))} | ${cell(f.description ?? '')} |`),
    '',
    'What the top-level help says of them and of the flags that mean the same wherever they appear:',
    '',
    '| Flag | Meaning |',
    '|---|---|',
    ...COMMON_FLAGS.map(([flag, meaning]) => `| ${code(flag)} | ${cell(meaning)} |`),
    '',
  ];
  for (const command of commands) out.push(...renderCommand(command, new Set(global.keys())));
  out.push('## Environment', '', '| Variable | Meaning |', '|---|---|', ...ENVIRONMENT.map(([variable, meaning]) => `| ${code(variable)} | ${cell(meaning)} |`), '');
  const byExit = new Map();
  for (const { code, exit } of errorCatalog()) byExit.set(exit, [...(byExit.get(exit) ?? []), code]);
  out.push(
    '## Exit codes',
    '',
    'Each error has a stable code (`--json` prints it as `error.code`); the third column lists the codes that end a command with that exit code.',
    '',
    '| Code | Meaning | Error codes |',
    '|---|---|---|',
    ...EXIT_CODES.map(([code, meaning]) => `| ${code} | ${cell(meaning)} | ${(byExit.get(code) ?? []).map((c) => `\`${c}\``).join(', ')} |`),
    '',
  );
  return out.join('\n');
}

const text = await reference();
if (process.argv.includes('--stdout')) process.stdout.write(text);
else {
  const file = join(root, 'docs', 'reference.md');
  writeFileSync(file, text);
  console.log(`wrote ${file}`);
}
