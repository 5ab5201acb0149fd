import { NanoPayError } from '../errors.js';

/**
 * The flags that mean the same on every command, which a user may also write
 * before the command, as `aws --profile X s3 ls` and `git -C dir status` take
 * theirs: `nanopay --profile live balance`. oclif parses flags per command,
 * so they are moved after it. (--timeout is not one: on status, receive and
 * request --watch it is the watch's own.)
 */
const WITH_VALUE = ['--profile', '--password-file'];
const ALONE = ['--json', '--password-stdin'];

/** How many tokens the global flag at `argv[i]` takes (1 or 2), or 0 when there is none there. */
function globalFlagAt(argv: readonly string[], i: number): number {
  const token = argv[i] ?? '';
  if (ALONE.includes(token)) return 1;
  const name = token.split('=')[0] ?? '';
  if (!WITH_VALUE.includes(name)) return 0;
  if (token.includes('=')) return 1;
  return i + 1 < argv.length ? 2 : 0;
}

/** How many leading tokens of `argv` are global flags with their values. */
function leadingGlobals(argv: readonly string[]): number {
  let i = 0;
  for (let taken = globalFlagAt(argv, i); taken > 0; taken = globalFlagAt(argv, i)) i += taken;
  return i;
}

/**
 * `argv` with the global flags written before the command moved after it (before a `--`,
 * which ends the flags). Left as typed when there is no command after them, or when another
 * flag comes first: the command_not_found hook then says what goes where (flagsBeforeCommand).
 */
export function globalFlagsAfterCommand(argv: readonly string[]): string[] {
  const i = leadingGlobals(argv);
  const rest = argv.slice(i);
  if (i === 0 || rest.length === 0 || (rest[0] ?? '').startsWith('-')) return [...argv];
  // help shows the same text whatever the profile or password: of these it takes --json alone (to refuse it).
  const moved = rest[0] === 'help' ? argv.slice(0, i).filter((token) => token === '--json') : argv.slice(0, i);
  const end = rest.indexOf('--');
  return end === -1 ? [...rest, ...moved] : [...rest.slice(0, end), ...moved, ...rest.slice(end)];
}

const TAKEN = 'Before the command nanopay takes --profile, --json, --password-file and --password-stdin; every other flag goes after it: nanopay COMMAND [ARGS] [FLAGS].';

/** Why flags before the command left none to run (the command_not_found hook's message for an "id" that is a flag). */
export function flagsBeforeCommand(argv: readonly string[]): NanoPayError {
  const token = argv[leadingGlobals(argv)];
  const name = token?.split('=')[0];
  if (token === undefined) return new NanoPayError('USAGE', 'No command after the flags', { hint: `Run nanopay help for the list of commands. ${TAKEN}` });
  if (name !== undefined && WITH_VALUE.includes(name)) return new NanoPayError('USAGE', `${name} needs a value, then the command: nanopay ${name} VALUE COMMAND`, { hint: TAKEN });
  return new NanoPayError('USAGE', `${name} is not a flag nanopay takes before the command; put it after the command`, { hint: TAKEN });
}
