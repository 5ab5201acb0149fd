import { Help, type Command } from '@oclif/core';
import { COMMON_FLAGS, COMPLETION, ENVIRONMENT, EXIT_CODES, reflow } from './help-sections.js';
import { commandSummary } from './output/command-summary.js';

/**
 * oclif's help (package.json `oclif.helpClass`), with a top-level page of our own:
 * every command once, by its full name (oclif lists a topic that is also a command,
 * such as `credits`, both as a topic and as a command), then the flags every command
 * take, shell completion, the environment variables and the exit codes (help-sections.ts,
 * which docs/reference.md is generated from too). The help of a command or a topic is oclif's.
 */

export default class NanopayHelp extends Help {
  protected override formatCommand(command: Command.Loadable): string {
    const description = reflow(command.description);
    return super.formatCommand({ ...command, ...(description === undefined ? {} : { description }) });
  }

  protected override async showRootHelp(): Promise<void> {
    const bin = this.config.bin;
    const commands: Command.Loadable[] = this.sortedCommands.filter((c) => c.id !== '' && !(c.aliases ?? []).includes(c.id));
    const name = (c: Command.Loadable): string => c.id.split(':').join(' ');
    // oclif's render compiles a template each time: only for text that has one (it costs ~0.3 ms a call).
    const render = (text: string): string => (text.includes('<%') ? this.render(text) : text);
    const list = (rows: [string, string][]): string => this.renderList(rows.map(([a, b]) => [a, render(b)]), { indentation: 2, spacer: '\n', stripAnsi: this.opts.stripAnsi });
    const summary = (c: Command.Loadable): string => commandSummary(c);

    this.log(this.formatRoot().replace(`$ ${bin} [COMMAND]`, `$ ${bin} COMMAND [ARGUMENTS] [FLAGS]`));
    this.log('');
    this.log(this.section('COMMANDS', list(commands.map((c) => [name(c), summary(c)]))));
    this.log('');
    this.log(this.indent(this.wrap(`Run ${bin} COMMAND --help for its arguments, flags and examples; ${bin} TOPIC --help (wallet, config, work…) lists a topic's commands.`)));
    this.log('');
    this.log(this.section('COMMON FLAGS (each means the same on every command that takes it)', list(COMMON_FLAGS)));
    this.log('');
    this.log(this.section('SHELL COMPLETION', list(COMPLETION)));
    this.log('');
    this.log(this.section('ENVIRONMENT', list(ENVIRONMENT)));
    this.log('');
    this.log(this.section('EXIT CODES', list(EXIT_CODES.map(([code, meaning]) => [String(code), meaning]))));
    this.log('');
  }
}
