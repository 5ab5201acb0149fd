import { Args, Flags } from '@oclif/core';
import { SessionCommand } from '../cli/session-command.js';
import { balance, type BalanceResult } from '../ops/account/balance.js';

export default class Balance extends SessionCommand {
  static override summary = 'Show the balance and pending amount of the active account (or any address).';
  static override description = `Amounts are in XNO; --show-raw adds them in raw, and --json always has both. --receive first receives every
pending block of the account, as receive does. --wallet and --account read another account of yours than the active one.`;
  static override examples = ['<%= config.bin %> balance', '<%= config.bin %> balance --receive', '<%= config.bin %> balance nano_1… --show-raw'];
  static override args = { address: Args.string({ ignoreStdin: true, description: 'any account (default: the active one)' }) };
  static override flags = {
    receive: Flags.boolean({ description: 'receive every pending block first' }),
    'show-raw': Flags.boolean({ description: 'also show the amounts in raw' }),
    wallet: Flags.string({ description: 'wallet to use instead of the active one' }),
    account: Flags.integer({ description: 'account index within the wallet', min: 0 }),
  };

  async run(): Promise<BalanceResult> {
    const { args, flags } = await this.parse(Balance);
    const result = await balance(this.session(flags), {
      receive: flags.receive,
      signal: this.signal,
      ...(args.address === undefined ? {} : { address: args.address }),
      ...(flags.wallet === undefined ? {} : { wallet: flags.wallet }),
      ...(flags.account === undefined ? {} : { index: flags.account }),
    });
    for (const r of result.received ?? []) this.log(`Received ${r.amount} XNO (${r.subtype} ${r.hash})`);
    const raw = (v: string): string => (flags['show-raw'] ? `  (${v} raw)` : '');
    this.log(`Account: ${result.account}`);
    this.log(`Balance: ${result.balance} XNO${raw(result.balance_raw)}`);
    this.log(`Pending: ${result.pending} XNO${raw(result.pending_raw)}`);
    return result;
  }
}
