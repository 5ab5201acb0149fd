import { Args, Flags, loadHelpClass } from '@oclif/core';
import { BaseCommand } from '../cli/base-command.js';
import { NanoPayError } from '../errors.js';

/**
 * `nanopay help [COMMAND]`, in place of @oclif/plugin-help's (a command of the
 * CLI itself comes first): the same text, and with --json the JSON error
 * document every command prints, not a flag error in text followed by the whole help.
 */
export default class Help extends BaseCommand {
  static override summary = 'Display help for <%= config.bin %>, a topic or a command.';
  static override description = `The same text as -h and --help. Help is for people: with --json it prints the JSON error document
(USAGE, exit 2) that every command prints for an error, so a script never parses text it did not ask for.`;
  static override examples = ['<%= config.bin %> help', '<%= config.bin %> help request', '<%= config.bin %> help config set'];
  static override strict = false;
  static override args = { command: Args.string({ required: false, description: 'Command to show help for.' }) };
  static override flags = {
    'nested-commands': Flags.boolean({ char: 'n', description: 'Include all nested commands in the output.' }),
  };

  async run(): Promise<void> {
    const { argv, flags } = await this.parse(Help);
    if (this.jsonEnabled()) {
      throw new NanoPayError('USAGE', 'help has no JSON form: it prints text for people', {
        hint: 'Run nanopay help without --json; every other command takes --json.',
      });
    }
    const HelpClass = await loadHelpClass(this.config);
    await new HelpClass(this.config, { all: flags['nested-commands'] }).showHelp(argv as string[]);
  }
}
