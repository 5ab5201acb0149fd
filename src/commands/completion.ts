import { Args } from '@oclif/core';
import { BaseCommand } from '../cli/base-command.js';
import { fishCompletion } from '../cli/fish-completion.js';
import { NanoPayError } from '../errors.js';

export default class Completion extends BaseCommand {
  static override summary = 'Print shell completion: the fish script itself, or how to install it for bash, zsh and powershell.';
  static override description = `For fish it prints a completion script made from the commands of this nanopay: every command, with topics
separated by spaces, and each command's flags with their descriptions. Install it, then open a new shell:

  <%= config.bin %> completion fish > ~/.config/fish/completions/<%= config.bin %>.fish

For bash, zsh and powershell it prints the instructions of <%= config.bin %> autocomplete SHELL, which keeps a cache of the
commands. With --json, fish's script is the "script" field of one document.`;
  static override examples = [
    '<%= config.bin %> completion fish > ~/.config/fish/completions/<%= config.bin %>.fish',
    '<%= config.bin %> completion bash',
    '<%= config.bin %> completion zsh',
  ];
  static override args = {
    shell: Args.string({ ignoreStdin: true, description: 'the shell', required: true, options: ['fish', 'bash', 'zsh', 'powershell'] }),
  };

  async run(): Promise<{ shell: string; script: string } | void> {
    const { args } = await this.parse(Completion);
    if (args.shell !== 'fish') {
      if (this.jsonEnabled()) {
        throw new NanoPayError('USAGE', `There is no JSON form of the ${args.shell} instructions`, { hint: `Run ${this.config.bin} autocomplete ${args.shell} without --json.` });
      }
      // bash, zsh and powershell: @oclif/plugin-autocomplete's own (it caches the commands for them).
      await this.config.runCommand('autocomplete', [args.shell]);
      return;
    }
    const script = fishCompletion(this.config.bin, this.config.version, this.config.commands, this.config.topics);
    if (!this.jsonEnabled()) process.stdout.write(script);
    return { shell: 'fish', script };
  }
}
