import { Args, Flags } from '@oclif/core';
import { SessionCommand } from '../../cli/session-command.js';
import { NanoPayError } from '../../errors.js';
import { setLanes, type LanesSetResult } from '../../ops/lanes/lanes.js';
import { lanesTable } from '../../cli/output/lanes.js';

export default class LanesSet extends SessionCommand {
  static override summary = 'Keep N payment lanes, each funded with --fund XNO, for parallel x402 payments from one wallet.';
  static override description = `Lanes are accounts of the wallet at reserved indexes (from 2147418112 on), funded from the active account (the
one that funded them first, later). Each carries at most one outstanding cheque, so N paid requests can be in flight at
once. A lane is refilled in the background when it falls below half its fund. Funding a lane moves money between the
wallet's own accounts: the spending policy does not judge it and no budget counts it; what lanes pay counts as any
payment does. Lowering N empties the lanes it removes back into the funding account (lanes set 0 removes them all).
Refused before anything is sent when the funding account holds too little.`;
  static override examples = ['<%= config.bin %> lanes set 8 --fund 0.5', '<%= config.bin %> lanes set 0'];
  static override args = { count: Args.string({ ignoreStdin: true, description: 'how many lanes (0 to 64)', required: true }) };
  static override flags = {
    fund: Flags.string({ description: 'what each lane is kept funded with, in XNO (default: as set before)' }),
    wallet: Flags.string({ description: 'wallet whose lanes to set instead of the active one' }),
  };

  async run(): Promise<LanesSetResult> {
    const { args, flags } = await this.parse(LanesSet);
    if (!/^\d{1,3}$/.test(args.count)) throw new NanoPayError('USAGE', `The number of lanes is a whole number from 0 to 64, not "${args.count}"`);
    const result = await setLanes(this.session(flags), {
      count: Number(args.count),
      signal: this.signal,
      ...(flags.fund === undefined ? {} : { fundXno: flags.fund }),
      ...(flags.wallet === undefined ? {} : { wallet: flags.wallet }),
    });
    if (result.funded_raw !== '0') this.log(`Funded the lanes with ${result.funded} XNO.`);
    if (result.returned_raw !== '0') this.log(`Returned ${result.returned} XNO from removed lanes to ${result.from ?? 'the funding account'}.`);
    this.log(lanesTable(result));
    return result;
  }
}
