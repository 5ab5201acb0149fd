import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { validate } from '../../ops/account/work.js';

export default class WorkValidate extends BaseCommand {
  static override summary = 'Check a work nonce for a root against a threshold (exit 3 when it does not meet it).';
  static override description = 'It computes the work value of the nonce for the root and compares it with the threshold. It needs no service and no wallet.';
  static override examples = ['<%= config.bin %> work validate --root 718C…79E2 --work 2bf29ef00786a6bc --threshold fffffe0000000000'];
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
