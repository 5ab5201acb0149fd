import { availableParallelism } from 'node:os';
import { Errors, Flags } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { table } from '../../cli/output/format.js';
import { progress } from '../../cli/output/spinner.js';
import { bench } from '../../ops/account/work.js';

export default class WorkBench extends BaseCommand {
  static override summary = 'Measure this machine\'s proof-of-work speed and say which engine is in use.';
  static override description = 'It measures one thread, then all of them, for --seconds each, showing what it is doing on stderr. The expected times are for the live network\'s thresholds.';
  static override examples = ['<%= config.bin %> work bench', '<%= config.bin %> work bench --seconds 10 --json'];
  static override flags = {
    seconds: Flags.custom<number>({
      description: 'seconds per measurement, at least 0.5 (two progress reports of the kernel)',
      default: 3,
      parse: async (input) => {
        const seconds = /^\d+(\.\d+)?$/.test(input) ? Number(input) : Number.NaN;
        if (!(seconds >= 0.5 && seconds <= 3600)) throw new Errors.CLIError(`Expected a number of seconds from 0.5 to 3600 but received: ${input}`);
        return seconds;
      },
    })(),
    // No `default`: oclif writes a default into the manifest, which the package ships, so it would show the build
    // machine's cores in every user's help (and docs/reference.md would depend on where it was written).
    workers: Flags.integer({ description: 'threads for the all-threads figure (default: every core of this machine)', min: 1 }),
  };

  async run(): Promise<Awaited<ReturnType<typeof bench>>> {
    const { flags } = await this.parse(WorkBench);
    const json = this.jsonEnabled();
    const spinner = await progress('Measuring…', !json);
    const result = await bench({
      workers: flags.workers ?? availableParallelism(),
      ms: Math.round(flags.seconds * 1000),
      onPhase: (threads) => {
        const text = `Measuring ${threads} ${threads === 1 ? 'thread' : 'threads'} for ${flags.seconds} s…`;
        // Off a terminal there is no spinner: one line per step, so a long silence is explained.
        if (process.stderr.isTTY) spinner.update(text);
        else if (!json) process.stderr.write(`${text}\n`);
      },
    });
    spinner.stop();
    this.log(`Engine: ${result.engine}`);
    this.log(
      table([
        ['THREADS', 'SPEED'],
        ['1', `${(result.single_thread / 1e6).toFixed(2)} MH/s`],
        [String(result.workers), `${(result.all_threads / 1e6).toFixed(2)} MH/s`],
      ]),
    );
    this.log(`Expected time on the live network: send ${result.live_send_seconds.toFixed(1)} s, receive ${result.live_receive_seconds.toFixed(2)} s`);
    return result;
  }
}
