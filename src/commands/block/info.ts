import { Args } from '@oclif/core';
import { SessionCommand } from '../../cli/session-command.js';
import { blockInfo } from '../../ops/reads.js';

export default class BlockInfo extends SessionCommand {
  static override summary = 'Show a block by hash.';
  static override args = { hash: Args.string({ ignoreStdin: true, description: '64-hex block hash', required: true }) };

  async run(): Promise<Awaited<ReturnType<typeof blockInfo>>> {
    const { args, flags } = await this.parse(BlockInfo);
    const info = await blockInfo(this.session(flags), { hash: args.hash });
    this.log(`Block:   ${info.hash} (${info.subtype})`);
    this.log(`Account: ${info.account}`);
    this.log(`Amount:  ${info.amount} XNO (${info.amount_raw} raw)`);
    this.log(`Balance: ${info.balance} XNO (${info.balance_raw} raw)`);
    return info;
  }
}
