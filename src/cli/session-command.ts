import { Flags } from '@oclif/core';
import { Session } from '../ops/session.js';
import { BaseCommand } from './base-command.js';
import { passwordSource } from './password.js';

/** Commands that use a profile: the key store, the API, the ledger. */
export abstract class SessionCommand extends BaseCommand {
  static override baseFlags = {
    profile: Flags.string({ description: 'profile to use (default: NANOPAY_PROFILE or "default")', helpGroup: 'GLOBAL' }),
    'password-file': Flags.string({ description: 'read the key store password from this file', helpGroup: 'GLOBAL' }),
    'password-stdin': Flags.boolean({ description: 'read the key store password from the first line of stdin', helpGroup: 'GLOBAL' }),
  };

  private aborter: AbortController | undefined;

  /** Aborted on Ctrl-C, so work and waits stop at once. */
  protected get signal(): AbortSignal {
    if (this.aborter === undefined) {
      const aborter = new AbortController();
      process.once('SIGINT', () => aborter.abort());
      this.aborter = aborter;
    }
    return this.aborter.signal;
  }

  protected session(flags: { profile?: string; 'password-file'?: string; 'password-stdin'?: boolean }): Session {
    return new Session({
      password: passwordSource(flags),
      ...(flags.profile === undefined ? {} : { profile: flags.profile }),
    });
  }
}
