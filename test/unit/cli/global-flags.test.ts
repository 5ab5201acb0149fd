import { describe, expect, it } from 'vitest';
import { flagsBeforeCommand, globalFlagsAfterCommand } from '../../../src/cli/global-flags.js';

/** Issue 31, point 14: where the flags written before the command go (the CLI runs them in test/e2e/cli/global-flags.test.ts). */
describe('globalFlagsAfterCommand', () => {
  it.each([
    [['--profile', 'live', 'balance'], ['balance', '--profile', 'live']],
    [['--profile=live', '--json', 'wallet', 'list'], ['wallet', 'list', '--profile=live', '--json']],
    [['--password-stdin', 'send', 'nano_x', '1', '--yes'], ['send', 'nano_x', '1', '--yes', '--password-stdin']],
    // A `--` ends the flags: they go before it, never into the arguments after it.
    [['--json', 'contacts', 'add', '--', '-odd-name', 'nano_x'], ['contacts', 'add', '--json', '--', '-odd-name', 'nano_x']],
    // help shows the same text whatever the profile: of these it keeps --json (which it refuses).
    [['--profile', 'live', '--json', 'help', 'balance'], ['help', 'balance', '--json']],
  ])('%j → %j', (argv, expected) => {
    expect(globalFlagsAfterCommand(argv)).toEqual(expected);
  });

  it.each([[['balance', '--profile', 'live']], [['--version']], [['-v']], [['--help']], [['--profile', 'live']], [['--profile']], [['--yes', 'send']], [['--profile', 'live', '--yes', 'send']], [['--', 'balance']], [[]]])(
    'leaves %j as typed',
    (argv) => {
      expect(globalFlagsAfterCommand(argv)).toEqual(argv);
    },
  );
});

describe('flagsBeforeCommand', () => {
  it('names the flag that goes after the command, a global one without its value, or the missing command', () => {
    expect(flagsBeforeCommand(['--profile', 'live', '--yes=1', 'send']).message).toBe('--yes is not a flag nanopay takes before the command; put it after the command');
    expect(flagsBeforeCommand(['--json', '--profile']).message).toBe('--profile needs a value, then the command: nanopay --profile VALUE COMMAND');
    expect(flagsBeforeCommand(['--json', '--password-stdin'])).toMatchObject({ code: 'USAGE', exitCode: 2, message: 'No command after the flags' });
  });
});
