import { Args } from '@oclif/core';
import { SessionCommand } from '../cli/session-command.js';
import { pending } from '../ops/account/reads.js';

export default class Pending extends SessionCommand {
  static override summary = 'List the blocks waiting to be received by the active account (or any address).';
  static override description = 'Each block shows its hash, its amount and its sender. Receive them with receive (or balance --receive).';
  static override examples = ['<%= config.bin %> pending', '<%= config.bin %> pending nano_1… --json'];
  static override args = { address: Args.string({ ignoreStdin: true, description: 'any account (default: the active one)' }) };

  async run(): Promise<Awaited<ReturnType<typeof pending>>> {
    const { args, flags } = await this.parse(Pending);
    const result = await pending(this.session(flags), args.address === undefined ? {} : { address: args.address });
    if (result.blocks.length === 0) this.log(`Nothing pending for ${result.account}.`);
    for (const b of result.blocks) this.log(`${b.hash}  ${b.amount} XNO  from ${b.source}`);
    return result;
  }
}
