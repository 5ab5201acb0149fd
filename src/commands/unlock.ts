import { Flags } from '@oclif/core';
import { SessionCommand } from '../cli/session-command.js';
import { DEFAULT_UNLOCK, parseUnlockDuration, unlock, type UnlockResult } from '../ops/profile/unlock.js';
import { SESSION_SCOPES } from '../ops/spending/policy.js';

export default class Unlock extends SessionCommand {
  static override summary = 'Unlock the key store for a while, so commands (and an agent) need no password, within the scope you grant.';
  static override description = `Asks for the password once (a prompt, --password-file, --password-stdin or NANOPAY_PASSWORD) and starts a
background process that holds the profile's secrets for --for (default ${DEFAULT_UNLOCK}, at most 12h) and signs for
commands over a private Unix socket in the config dir; it never hands out a seed, a private key or the password. It ends
at expiry, on nanopay lock, or as soon as the key store changes.

The session judges every spend it signs itself, by the spending policy as sealed now and the scope granted here:
--scope mcp judges every spend through it as an MCP client's, whatever command or program asks; --scope all (the
default) applies the rules of every front end at once. Give an agent the session, never the password: it cannot
change the policy, approve its own spend, or read the session's memory. Changing the policy or the key store,
approving, and showing a secret (wallet export, config get --reveal) still need the password.

--socket PATH --group GROUP shares the session with another user of the machine (the strongest mode: the agent runs as
its own user and reaches the keys only through this socket; see docs/security.md).`;
  static override examples = [
    '<%= config.bin %> unlock',
    '<%= config.bin %> unlock --for 2h --scope mcp',
    '<%= config.bin %> unlock --for 30s --password-file pass.txt --json',
    '<%= config.bin %> unlock --for 8h --scope agent --socket /run/nanopay-agent/agent.sock --group nanopay-agent',
  ];
  static override flags = {
    for: Flags.string({ description: 'how long: 30s, 15m, 2h, 1h30m (at most 12h)', default: DEFAULT_UNLOCK }),
    scope: Flags.string({ description: 'whose spends the session judges them as: a front end, or all of them at once', options: [...SESSION_SCOPES], default: 'all' }),
    socket: Flags.string({ description: 'share the session at this socket path (absolute; its directory yours and closed to others), with --group', dependsOn: ['group'] }),
    group: Flags.string({ description: 'the group (name or id) whose users reach a shared session', dependsOn: ['socket'] }),
  };

  async run(): Promise<UnlockResult> {
    const { flags } = await this.parse(Unlock);
    const seconds = parseUnlockDuration(flags.for);
    const result = await unlock(this.session(flags), {
      seconds,
      scope: flags.scope as UnlockResult['scope'],
      ...(flags.socket === undefined ? {} : { socket: flags.socket }),
      ...(flags.group === undefined ? {} : { group: flags.group }),
    });
    const until = new Date(result.expires_at).toLocaleTimeString();
    if (result.replaced) this.log(`The earlier unlocked session of profile "${result.profile}" was ended.`);
    this.log(`Unlocked profile "${result.profile}" until ${until} (${flags.for}), scope ${result.scope}; commands need no password until then.`);
    if (result.group !== undefined) this.log(`Shared at ${result.socket} with the users of group ${result.group}.`);
    if (!result.undumpable) {
      process.stderr.write(
        'Warning: the session\'s memory is readable by your other processes (ptrace, /proc): the native addon, which closes it, was not built (it needs a C compiler at install; README: Install). Do not give an agent a shell as you while it runs.\n',
      );
    }
    this.log('End it sooner with: nanopay lock');
    return result;
  }
}
