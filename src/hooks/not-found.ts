import type { Hook, Interfaces } from '@oclif/core';
import { flagsBeforeCommand } from '../cli/global-flags.js';
import { ExitCode, NanoPayError } from '../errors.js';

/** Edit distance between two words, for "did you mean". */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min((previous[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = row;
  }
  return previous[b.length] ?? 0;
}

/**
 * An unknown command: names the nearest commands as the user types them (never
 * an internal id with its arguments), and never runs a guess, since a guessed
 * command might spend. Exit 2; with --json one error document.
 * (oclif's plugin-not-found offers to run its guess and has no JSON form.)
 */
const hook: Hook<'command_not_found'> = async function (opts) {
  // A flag where the command should be: one that goes after the command, or global flags with no command after them.
  const typed = opts.id.split(':');
  const error = opts.id.startsWith('-') ? flagsBeforeCommand([opts.id, ...(opts.argv ?? [])]) : unknownCommand(opts.config, typed);
  if (opts.argv?.includes('--json') || typed.includes('--json')) {
    process.stdout.write(`${JSON.stringify({ error: error.toJSON() })}\n`);
  } else {
    process.stderr.write(`Error [${error.code}] ${error.message}\nHint: ${error.hint}\n`);
  }
  process.exitCode = ExitCode.USAGE;
};

function unknownCommand(config: Interfaces.Config, typed: string[]): NanoPayError {
  const commands = config.commands.filter((c) => !c.hidden).map((c) => c.id.split(':'));
  // Compare with as many words as each command has: "sned nano_1… 1" is "sned", "walet list" is "walet list".
  const scored = commands.map((words) => ({ name: words.join(' '), score: distance(typed.slice(0, words.length).join(' '), words.join(' ')) }));
  const best = Math.min(...scored.map((s) => s.score));
  const nearest = best <= 2 ? scored.filter((s) => s.score === best).map((s) => s.name).slice(0, 3) : [];
  const guess = typed.slice(0, Math.max(1, ...commands.filter((w) => nearest.includes(w.join(' '))).map((w) => w.length))).join(' ');
  return new NanoPayError('USAGE', `"${guess}" is not a nanopay command.${nearest.length === 0 ? '' : ` Did you mean ${nearest.join(' or ')}?`}`, {
    hint: 'Run nanopay help for the list of commands.',
    exitCode: ExitCode.USAGE,
  });
}

export default hook;
