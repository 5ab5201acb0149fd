import { availableParallelism } from 'node:os';
import { Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { bench } from '../../ops/work.js';

export default class WorkBench extends BaseCommand {
  static override summary = 'Measure this machine\'s proof-of-work speed and say which engine is in use.';
  static override flags = {
    seconds: Flags.integer({ description: 'seconds per measurement', default: 3, min: 1 }),
    workers: Flags.integer({ description: 'threads for the all-threads figure', default: availableParallelism(), min: 1 }),
  };

  async run(): Promise<Awaited<ReturnType<typeof bench>>> {
    const { flags } = await this.parse(WorkBench);
    const result = await bench({ workers: flags.workers, ms: flags.seconds * 1000 });
    this.log(`Engine: ${result.engine}`);
    this.log(`1 thread:   ${(result.single_thread / 1e6).toFixed(2)} MH/s`);
    this.log(`${result.workers} threads: ${(result.all_threads / 1e6).toFixed(2)} MH/s`);
    this.log(`Expected time on the live network: send ${result.live_send_seconds.toFixed(1)} s, receive ${result.live_receive_seconds.toFixed(2)} s`);
    return result;
  }
}
