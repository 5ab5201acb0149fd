import { Flags } from '@oclif/core';
import { Session, type PasswordSource } from '../ops/session.js';
import { BaseCommand } from './base-command.js';
import { passwordSource, type PasswordFlags } from './password.js';
import { workSpinner } from './work-progress.js';

/** Commands that use a profile: the key store, the API, the ledger. */
export abstract class SessionCommand extends BaseCommand {
  static override baseFlags = {
    profile: Flags.string({ description: 'profile to use (default: NANOPAY_PROFILE or "default")', helpGroup: 'GLOBAL' }),
    'password-file': Flags.string({ description: 'read the key store password from this file', helpGroup: 'GLOBAL' }),
    'password-stdin': Flags.boolean({ description: 'read the key store password from the first line of stdin', helpGroup: 'GLOBAL' }),
  };

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
