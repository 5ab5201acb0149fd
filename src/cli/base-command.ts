import { Command, Errors } from '@oclif/core';
import { ExitCode, NanoPayError, toNanoPayError } from '../errors.js';
import { stopSpinners } from './spinner.js';

/** oclif's own failures (bad flags, missing args) are usage errors. */
function fromOclif(error: unknown): NanoPayError | undefined {
  if (error instanceof Errors.CLIError && !(error instanceof NanoPayError)) {
    return new NanoPayError('USAGE', error.message.replace(/\nSee more help with --help$/, ''), {
      hint: 'Run the command with --help to see its arguments and flags.',
      exitCode: ExitCode.USAGE,
    });
  }
  return undefined;
}

/**
 * Every command: `--json` prints exactly one JSON document on stdout (the value
 * `run` returns, or `{"error": {code, message}}`), and errors end the process
 * with the stable exit code of their NanoPayError code.
 */
export abstract class BaseCommand extends Command {
  static override enableJsonFlag = true;

  protected override async catch(error: unknown): Promise<void> {
    if (error instanceof Errors.ExitError) throw error;
    const failure = fromOclif(error) ?? toNanoPayError(error);
    process.exitCode = failure.exitCode;
    stopSpinners();
    if (this.jsonEnabled()) {
      process.stdout.write(`${JSON.stringify({ error: failure.toJSON() })}\n`);
      return;
    }
    const { Chalk } = await import('chalk');
    // No colour when NO_COLOR is set or stderr is not a terminal.
    const chalk = new Chalk({ level: process.env.NO_COLOR || !process.stderr.isTTY ? 0 : 1 });
    process.stderr.write(`${chalk.red('Error')} ${chalk.dim(`[${failure.code}]`)} ${failure.message}\n`);
    if (failure.hint !== undefined) process.stderr.write(`${chalk.dim('Hint:')} ${failure.hint}\n`);
  }

  protected override logJson(json: unknown): void {
    process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
  }
}
