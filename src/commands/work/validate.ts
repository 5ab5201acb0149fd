import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { validate } from '../../ops/work.js';

export default class WorkValidate extends BaseCommand {
  static override summary = 'Check a work nonce for a root against a threshold (exit 3 when it does not meet it).';
  static override flags = {
    root: Flags.string({ description: '64-hex root', required: true }),
    work: Flags.string({ description: '16-hex work', required: true }),
    threshold: Flags.string({ description: '16-hex threshold', required: true }),
  };

  async run(): Promise<ReturnType<typeof validate>> {
    const { flags } = await this.parse(WorkValidate);
    const result = validate(flags);
    this.log(`${result.valid ? 'valid' : 'NOT valid'}: value ${result.value} ${result.valid ? '>=' : '<'} ${result.threshold}`);
    if (!result.valid) process.exitCode = 3;
    return result;
  }
}
