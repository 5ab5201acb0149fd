import { availableParallelism } from 'node:os';
import { Errors, Flags } from '@oclif/core';
import { table } from '../../cli/output/format.js';
import { progress } from '../../cli/output/spinner.js';
import { SessionCommand } from '../../cli/session-command.js';
import { bench } from '../../ops/account/work.js';

export default class WorkBench extends SessionCommand {
  static override summary = 'Measure this machine\'s proof-of-work speed and say which engine and kernel are in use.';
  static override description = `The native engine has a kernel per instruction set and width (avx512, avx512-16, avx2, avx2-4, baseline…, those
this CPU runs). Which is fastest is measured on this machine at the first proof of work that needs threads (under a
second, in the background, at the lowest priority; until then the one the CPU's flags suggest serves), and kept in the
config dir (work-kernel.json) until the CPU or the addon changes. This shows each kernel's rate and the ones chosen,
for one thread and for all; --choose measures them again now and keeps the result. Then it measures the kernel in use,
one thread then all of them, for --seconds each, showing what it is doing on stderr. The expected times are for the
live network's thresholds.`;
  static override examples = ['<%= config.bin %> work bench', '<%= config.bin %> work bench --choose', '<%= config.bin %> work bench --seconds 10 --json'];
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
    choose: Flags.boolean({ description: 'measure every native kernel again now (under a second) and keep the fastest' }),
  };

  async run(): Promise<Awaited<ReturnType<typeof bench>>> {
    const { flags } = await this.parse(WorkBench);
    const json = this.jsonEnabled();
    const spinner = await progress(flags.choose ? 'Measuring every kernel…' : 'Measuring…', !json);
    const result = await bench(this.session(flags), {
      workers: flags.workers ?? availableParallelism(),
      ms: Math.round(flags.seconds * 1000),
      choose: flags.choose,
      onPhase: (threads) => {
        const text = `Measuring ${threads} ${threads === 1 ? 'thread' : 'threads'} for ${flags.seconds} s…`;
        // Off a terminal there is no spinner: one line per step, so a long silence is explained.
        if (process.stderr.isTTY) spinner.update(text);
        else if (!json) process.stderr.write(`${text}\n`);
      },
    });
    spinner.stop();
    const { kernels } = result;
    if (kernels === null) this.log(`Engine: ${result.engine}`);
    else {
      const how = kernels.chosen_by === 'measurement' ? `measured on this machine ${kernels.measured_at}` : 'suggested by the CPU\'s flags (not measured yet: nanopay work bench --choose)';
      this.log(`Engine: native, kernel ${kernels.one} on 1 thread, ${kernels.all} on ${result.workers} (${how})`);
      if (kernels.rates.length > 0) {
        const threads = [...new Set(kernels.rates.map((r) => r.threads))].sort((a, b) => a - b);
        const names = [...new Set(kernels.rates.map((r) => r.kernel))];
        const rate = (name: string, t: number): string => `${((kernels.rates.find((r) => r.kernel === name && r.threads === t)?.hashes_per_second ?? 0) / 1e6).toFixed(2)} MH/s`;
        this.log(table([['KERNEL', ...threads.map((t) => `${t} ${t === 1 ? 'THREAD' : 'THREADS'}`)], ...names.map((name) => [name, ...threads.map((t) => rate(name, t))])]));
      }
    }
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
