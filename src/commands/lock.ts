import { Flags } from '@oclif/core';
import { SessionCommand } from '../cli/session-command.js';
import { lock, type LockResult } from '../ops/profile/unlock.js';

export default class Lock extends SessionCommand {
  static override summary = 'End the unlocked session at once (nanopay unlock); fine when none runs.';
  static override description = `Ends the profile's unlocked session (started by nanopay unlock) and removes its socket, so the next
command asks for the password again. With --all it ends the sessions of every profile of the config dir. It exits 0 when
no session runs, and says so.`;
  static override examples = ['<%= config.bin %> lock', '<%= config.bin %> lock --all', '<%= config.bin %> lock --socket /run/nanopay-agent/agent.sock'];
  static override flags = {
    all: Flags.boolean({ description: 'end the unlocked sessions of every profile of the config dir', exclusive: ['socket'] }),
    socket: Flags.string({ description: 'end the session shared at this socket (unlock --socket)' }),
  };

  async run(): Promise<LockResult> {
    const { flags } = await this.parse(Lock);
    const result = await lock(this.session(flags), { all: flags.all, ...(flags.socket === undefined ? {} : { socket: flags.socket }) });
    const whose = result.profile === null ? 'any profile' : `profile "${result.profile}"`;
    if (result.ended > 0) this.log(`Locked: ${result.ended === 1 ? 'the unlocked session' : `${result.ended} unlocked sessions`} of ${whose} ended.`);
    else this.log(`No unlocked session was running for ${whose}${result.stale_removed ? ' (the socket of one that had died was removed)' : ''}; nothing to do.`);
    return result;
  }
}
