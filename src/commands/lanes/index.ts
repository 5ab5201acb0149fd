import { Flags } from '@oclif/core';
import { lanesTable } from '../../cli/output/lanes.js';
import { SessionCommand } from '../../cli/session-command.js';
import { showLanes, type LanesResult } from '../../ops/lanes/lanes.js';

export default class Lanes extends SessionCommand {
  static override summary = 'Show the wallet\'s payment lanes: accounts of its own that pay x402 requests in parallel.';
  static override description = `A Nano account has one chain, so it carries one x402 payment (a signed block handed to a server: a cheque) at a
time. Lanes are accounts of the same wallet (at reserved indexes), each funded from the wallet's account and each carrying
at most one outstanding cheque: concurrent paid requests (fetch in several processes, the SDK, @x402/fetch) each take a free
lane. Shows each lane's balance, what is on its way to it (a refill), its outstanding cheque and the process holding it.`;
  static override examples = ['<%= config.bin %> lanes', '<%= config.bin %> lanes --json'];
  static override flags = { wallet: Flags.string({ description: 'wallet whose lanes to show instead of the active one' }) };

  async run(): Promise<LanesResult> {
    const { flags } = await this.parse(Lanes);
    const result = await showLanes(this.session(flags), { signal: this.signal, ...(flags.wallet === undefined ? {} : { wallet: flags.wallet }) });
    this.log(lanesTable(result));
    return result;
  }
}
