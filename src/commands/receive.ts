import { Flags } from '@oclif/core';
import { SessionCommand } from '../cli/session-command.js';
import { xnoToRaw } from '../nano/index.js';
import { receive, type ReceiveResult } from '../ops/receive.js';

export default class Receive extends SessionCommand {
  static override summary = 'Receive every pending block of the active account (opening it if new).';
  static override flags = {
    min: Flags.string({ description: 'leave pending blocks below this many XNO (dust) alone' }),
    wallet: Flags.string({ description: 'wallet to use instead of the active one' }),
    account: Flags.integer({ description: 'account index within the wallet', min: 0 }),
  };

  async run(): Promise<ReceiveResult> {
    const { flags } = await this.parse(Receive);
    const result = await receive(this.session(flags), {
      signal: this.signal,
      ...(flags.min === undefined ? {} : { minimumRaw: xnoToRaw(flags.min) }),
      ...(flags.wallet === undefined ? {} : { wallet: flags.wallet }),
      ...(flags.account === undefined ? {} : { index: flags.account }),
    });
    if (result.received.length === 0) this.log('Nothing to receive.');
    for (const r of result.received) this.log(`Received ${r.amount} XNO (${r.subtype} ${r.hash})`);
    if (result.received.length > 1) this.log(`Total: ${result.total} XNO`);
    return result;
  }
}
