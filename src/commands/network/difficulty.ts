import { SessionCommand } from '../../cli/session-command.js';
import { networkDifficulty } from '../../ops/account/reads.js';

export default class NetworkDifficulty extends SessionCommand {
  static override summary = 'Show the proof-of-work thresholds the service asks for.';
  static override description = `One threshold for send and change blocks, one for receive and open blocks. When the service does not report them,
the live network's base values are shown, and --json says "reported": false.`;
  static override examples = ['<%= config.bin %> network difficulty', '<%= config.bin %> network difficulty --json'];

  async run(): Promise<Awaited<ReturnType<typeof networkDifficulty>>> {
    const { flags } = await this.parse(NetworkDifficulty);
    const result = await networkDifficulty(this.session(flags));
    this.log(`Send/change:  ${result.send}`);
    this.log(`Receive/open: ${result.receive}`);
    if (!result.reported) this.log('(the service did not report thresholds: these are the live base values)');
    return result;
  }
}
