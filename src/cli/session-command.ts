import { Flags } from '@oclif/core';
import { Session, type PasswordSource } from '../ops/session.js';
import { BaseCommand } from './base-command.js';
import { NanoPayError } from '../errors.js';
import { passwordSource, promptingUnlock, type PasswordFlags } from './password.js';
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

  private readonly sessions: Session[] = [];

  /** Says so when the command changed the key store and that ended unlocked sessions. */
  protected override async finally(error: Error | undefined): Promise<void> {
    if (this.sessions.some((s) => s.endedSessions > 0)) {
      process.stderr.write('The key store changed, so its unlocked session ended; run nanopay unlock again to keep working without the password.\n');
    }
    await super.finally(error);
  }

  /** Commands that store into a new profile, or list an empty one; the others refuse a profile that does not exist. */
  protected static allowsNewProfile = false;

  protected session(flags: { profile?: string } & PasswordFlags): Session {
    const password = passwordSource(flags);
    const session = new Session({
      password,
      unlock: promptingUnlock(flags, password),
      workObserver: workSpinner(!this.jsonEnabled()),
      ...(flags.profile === undefined ? {} : { profile: flags.profile }),
    });
    const named = flags.profile ?? process.env.NANOPAY_PROFILE;
    if (named !== undefined && !(this.constructor as typeof SessionCommand).allowsNewProfile) {
      const profiles = session.config.profileNames();
      if (!profiles.includes(named)) {
        throw new NanoPayError('NOT_FOUND', `There is no profile "${named}"; ${profiles.length === 0 ? 'there are no profiles yet' : `the profiles are: ${profiles.join(', ')}`}`, {
          hint: 'Create a wallet in a new profile with: nanopay wallet create --profile NAME',
        });
      }
    }
    this.sessions.push(session);
    return session;
  }
}
