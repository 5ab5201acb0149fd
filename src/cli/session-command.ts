import { Flags } from '@oclif/core';
import { Session, parseCallTimeout, type PasswordSource } from '../ops/session.js';
import { BaseCommand } from './base-command.js';
import type { FrontEnd } from '../ops/spending/policy.js';
import { NanoPayError } from '../errors.js';
import { passwordSource, passwordVia, promptingUnlock, type PasswordFlags } from './input/password.js';
import { workSpinner } from './output/work-progress.js';
import { answerAtTerminal } from './approval-answer.js';

/** Commands that use a profile: the key store, the API, the ledger. */
export abstract class SessionCommand extends BaseCommand {
  static override baseFlags = {
    profile: Flags.string({ description: 'profile to use (default: NANOPAY_PROFILE or "default")', helpGroup: 'GLOBAL' }),
    'password-file': Flags.string({ description: 'read the key store password from this file', helpGroup: 'GLOBAL' }),
    'password-stdin': Flags.boolean({ description: 'read the key store password from the first line of stdin', helpGroup: 'GLOBAL' }),
    timeout: Flags.string({
      description: 'give up on a service, node or x402 seller that has not answered one call in this long, retries included (30s, 2m; default 60s or NANOPAY_TIMEOUT)',
      helpGroup: 'GLOBAL',
    }),
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

  /** `frontEnd`: who the spending policy judges this command as (an MCP proxy for agents is `mcp`). */
  protected session(flags: { profile?: string; timeout?: string | number } & PasswordFlags, frontEnd: FrontEnd = 'cli'): Session {
    const password = passwordSource(flags);
    // A number is a watch's own --timeout (status, receive, request): its bound is the whole watch's.
    const deadline = typeof flags.timeout === 'string' ? parseCallTimeout(flags.timeout, '--timeout') * 1000 : undefined;
    const session = new Session({
      password,
      frontEnd,
      passwordVia: passwordVia(flags),
      // A spend above an "ask above" rule is asked about here on a terminal (--yes does not skip it; yes needs the password); without one it waits for an approval.
      // stderr first: process.stdin is a stream made at its first use, which a script's command (stderr a pipe) need not make.
      ...(process.stderr.isTTY && process.stdin.isTTY ? { askPerson: answerAtTerminal } : {}),
      unlock: promptingUnlock(flags, password),
      workObserver: workSpinner(!this.jsonEnabled()),
      ...(deadline === undefined ? {} : { deadlineMs: deadline }),
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

/** The command a wrapping command runs: what follows the first `--` of its arguments, as given (its own flags untouched). */
export function commandAfterDashes(argv: readonly string[]): string[] {
  const dashes = argv.indexOf('--');
  return dashes === -1 ? [] : argv.slice(dashes + 1);
}
