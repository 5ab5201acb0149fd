import { Flags } from '@oclif/core';
import { SessionCommand } from '../../cli/session-command.js';
import { generate, resolveThreshold } from '../../ops/account/work.js';

export default class WorkGenerate extends SessionCommand {
  static override summary = 'Make proof of work for a root (NANO_WORK_MODE decides where: auto, cpu or remote).';
  static override description = `Give the threshold, or --subtype to use the one the service asks for that kind of block. The nonce found is
validated here, whoever made it (this machine or a work server).`;
  static override examples = ['<%= config.bin %> work generate --root 718C…79E2 --threshold fffffe0000000000', '<%= config.bin %> work generate --root 718C…79E2 --subtype send'];
  static override flags = {
    root: Flags.string({ description: 'the previous block hash, or the account public key for a first block', required: true }),
    threshold: Flags.string({ description: '16-hex threshold', exclusive: ['subtype'] }),
    subtype: Flags.string({ description: 'use the service\'s threshold for this kind of block', options: ['send', 'receive'], exclusive: ['threshold'] }),
  };

  async run(): Promise<Awaited<ReturnType<typeof generate>>> {
    const { flags } = await this.parse(WorkGenerate);
    const session = this.session(flags);
    const threshold = await resolveThreshold(session, {
      ...(flags.threshold === undefined ? {} : { threshold: flags.threshold }),
      ...(flags.subtype === undefined ? {} : { subtype: flags.subtype as 'send' | 'receive' }),
    });
    const result = await generate(session, { root: flags.root, threshold, signal: this.signal });
    this.log(`${result.work}  (value ${result.value} >= ${threshold}, ${result.seconds.toFixed(2)} s)`);
    return result;
  }
}
