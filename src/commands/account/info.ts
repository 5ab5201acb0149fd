import { Args } from '@oclif/core';
import { SessionCommand } from '../../cli/session-command.js';
import { accountInfo } from '../../ops/account/reads.js';

export default class AccountInfo extends SessionCommand {
  static override summary = 'Show an account\'s ledger head: frontier, balance, representative, thresholds.';
  static override description = `Reads the active account, or any ADDRESS, from the service (or the node). An account that has no block yet
is reported as not opened. The work thresholds are shown when the service gives them.`;
  static override examples = ['<%= config.bin %> account info', '<%= config.bin %> account info nano_1… --json'];
  static override args = { address: Args.string({ ignoreStdin: true, description: 'any account (default: the active one)' }) };

  async run(): Promise<Awaited<ReturnType<typeof accountInfo>>> {
    const { args, flags } = await this.parse(AccountInfo);
    const info = await accountInfo(this.session(flags), args.address === undefined ? {} : { address: args.address });
    this.log(`Account:        ${info.account}`);
    if (!info.opened) {
      this.log('Not opened yet: it has no block. Receive a payment to open it.');
      return info;
    }
    this.log(`Frontier:       ${info.frontier}`);
    this.log(`Balance:        ${info.balance} XNO (${info.balance_raw} raw)`);
    this.log(`Representative: ${info.representative}`);
    if (info.difficulty_send !== undefined) this.log(`Work (send):    ${info.difficulty_send}`);
    if (info.difficulty_receive !== undefined) this.log(`Work (receive): ${info.difficulty_receive}`);
    return info;
  }
}
