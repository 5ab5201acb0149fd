import { Command, Errors } from '@oclif/core';
import { observeWaits, SANDBOX_NOTE, talkedToSandbox, withSandboxMark } from '../ops/observe.js';
import { ExitCode, NanoPayError, toNanoPayError } from '../errors.js';
import { commandFinished, interruption } from './interrupt.js';
import { waitReporter } from './output/wait-report.js';
import { colourless, endSpinners, stopSpinners } from './output/spinner.js';

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

/** Ctrl-C at a prompt: the terminal is in raw mode there, so inquirer sees the key and rejects instead of a SIGINT. */
function fromPrompt(error: unknown): NanoPayError | undefined {
  if (error instanceof Error && (error.name === 'ExitPromptError' || error.name === 'AbortPromptError')) {
    return new NanoPayError('CANCELLED', 'Cancelled; nothing was changed');
  }
  return undefined;
}

/**
 * Every command: `--json` prints exactly one JSON document on stdout (the value
 * `run` returns, or `{"error": {code, message}}`), and errors end the process
 * with the stable exit code of their NanoPayError code. Ctrl-C ends any command
 * with exit 130.
 */
export abstract class BaseCommand extends Command {
  static override enableJsonFlag = true;

  protected override async init(): Promise<void> {
    interruption((error) => this.printError(error));
    await super.init();
    // Who is being waited for: a spinner on a terminal, warnings on stderr otherwise.
    observeWaits(waitReporter(process.stderr.isTTY === true && !this.jsonEnabled()));
  }

  /** Aborted on Ctrl-C, so work and waits stop at once (exit 130). */
  protected get signal(): AbortSignal {
    return interruption();
  }

  protected override async catch(error: unknown): Promise<void> {
    if (error instanceof Errors.ExitError) throw error;
    const failure = fromOclif(error) ?? fromPrompt(error) ?? toNanoPayError(error);
    process.exitCode = failure.exitCode;
    this.printError(failure);
  }

  protected override async finally(error: Error | undefined): Promise<void> {
    endSpinners();
    if (talkedToSandbox() && !this.jsonEnabled()) process.stderr.write(`${sandboxMarker()}\n`);
    commandFinished();
    await super.finally(error);
  }

  private printError(failure: NanoPayError): void {
    stopSpinners();
    if (this.jsonEnabled()) {
      process.stdout.write(`${JSON.stringify(withSandboxMark({ error: failure.toJSON() }))}\n`);
      return;
    }
    const plain = colourless();
    const red = (s: string): string => (plain ? s : `\u001B[31m${s}\u001B[39m`);
    const dim = (s: string): string => (plain ? s : `\u001B[2m${s}\u001B[22m`);
    process.stderr.write(`${red('Error')} ${dim(`[${failure.code}]`)} ${failure.message}\n`);
    if (failure.hint !== undefined) process.stderr.write(`${dim('Hint:')} ${failure.hint}\n`);
  }

  protected override logJson(json: unknown): void {
    process.stdout.write(`${JSON.stringify(withSandboxMark(json), null, 2)}\n`);
  }
}

/** The stderr line of a command that talked to the sandbox: so test money is never taken for real money. */
function sandboxMarker(): string {
  return colourless() ? `[${SANDBOX_NOTE}]` : `\u001B[30;43m ${SANDBOX_NOTE} \u001B[39;49m`;
}
