import { SessionCommand } from '../../cli/session-command.js';
import { precache } from '../../ops/account/work.js';

export default class WorkPrecache extends SessionCommand {
  static override summary = 'Make the proof of work for the active account\'s next block now, so the next send does not wait.';
  static override description = 'The work is made at the send threshold (which also covers a receive) and kept in the config dir until it is used.';
  static override examples = ['<%= config.bin %> work precache'];

  async run(): Promise<Awaited<ReturnType<typeof precache>>> {
    const { flags } = await this.parse(WorkPrecache);
    const result = await precache(this.session(flags), this.signal);
    this.log(`Work ready for the next block (root ${result.root}): ${result.work}`);
    return result;
  }
}
