import { Args } from '@oclif/core';
import { SessionCommand } from '../../cli/session-command.js';
import { blockInfo } from '../../ops/account/reads.js';

export default class BlockInfo extends SessionCommand {
  static override summary = 'Show a block by hash: its kind, account, amount and balance.';
  static override description = 'The hash is 64 hexadecimal characters; an unknown block exits 9.';
  static override examples = ['<%= config.bin %> block info 991CF190…B3F5E --json'];
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
