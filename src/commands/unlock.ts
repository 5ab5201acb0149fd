import { Flags } from '@oclif/core';
import { SessionCommand } from '../cli/session-command.js';
import { DEFAULT_UNLOCK, parseUnlockDuration, unlock, type UnlockResult } from '../ops/profile/unlock.js';

export default class Unlock extends SessionCommand {
  static override summary = 'Unlock the key store for a while, so commands need no password (like ssh-agent).';
  static override description = `Asks for the password once (a prompt, --password-file, --password-stdin or NANOPAY_PASSWORD) and starts a
background process that holds the profile's secrets for --for (default ${DEFAULT_UNLOCK}, at most 12h) and signs for
your commands over a private Unix socket in the config dir; it never hands out a seed or private key. It ends at expiry,
on nanopay lock, or as soon as the key store changes. Changing the key store and showing a secret (wallet export,
config get --reveal) still ask for the password.`;
  static override examples = ['<%= config.bin %> unlock', '<%= config.bin %> unlock --for 2h', '<%= config.bin %> unlock --for 30s --password-file pass.txt --json'];
  static override flags = {
    for: Flags.string({ description: 'how long: 30s, 15m, 2h, 1h30m (at most 12h)', default: DEFAULT_UNLOCK }),
  };

  async run(): Promise<UnlockResult> {
    const { flags } = await this.parse(Unlock);
    const seconds = parseUnlockDuration(flags.for);
    const result = await unlock(this.session(flags), { seconds });
    const until = new Date(result.expires_at).toLocaleTimeString();
    if (result.replaced) this.log(`The earlier unlocked session of profile "${result.profile}" was ended.`);
    this.log(`Unlocked profile "${result.profile}" until ${until} (${flags.for}); commands need no password until then.`);
    this.log('End it sooner with: nanopay lock');
    return result;
  }
}
