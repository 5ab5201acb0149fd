import { Flags } from '@oclif/core';
import { Session, type PasswordSource } from '../ops/session.js';
import { BaseCommand } from './base-command.js';
import { passwordSource, type PasswordFlags } from './password.js';
import { workSpinner } from './work-progress.js';

let interrupted: AbortController | undefined;

/** One process-wide Ctrl-C signal, however many commands run in this process. */
function interruption(): AbortSignal {
  if (interrupted === undefined) {
    const controller = new AbortController();
    // A lasting listener (not `once`): a second Ctrl-C while the command winds down must reach this
    // handler again rather than kill the process before it ends cleanly.
    process.on('SIGINT', () => controller.abort());
    interrupted = controller;
  }
  return interrupted.signal;
}

/** Commands that use a profile: the key store, the API, the ledger. */
export abstract class SessionCommand extends BaseCommand {
  static override baseFlags = {
    profile: Flags.string({ description: 'profile to use (default: NANOPAY_PROFILE or "default")', helpGroup: 'GLOBAL' }),
    'password-file': Flags.string({ description: 'read the key store password from this file', helpGroup: 'GLOBAL' }),
    'password-stdin': Flags.boolean({ description: 'read the key store password from the first line of stdin', helpGroup: 'GLOBAL' }),
  };

  /** Aborted on Ctrl-C, so work and waits stop at once (exit 130). */
  protected get signal(): AbortSignal {
    return interruption();
  }

  protected passwordSource(flags: PasswordFlags): PasswordSource {
    return passwordSource(flags);
  }

  protected session(flags: { profile?: string } & PasswordFlags): Session {
    return new Session({
      password: passwordSource(flags),
      workObserver: workSpinner(!this.jsonEnabled()),
      ...(flags.profile === undefined ? {} : { profile: flags.profile }),
    });
  }
}
