import { Flags } from '@oclif/core';
import { confirmOnTerminal } from '../cli/input/confirm.js';
import { SessionCommand } from '../cli/session-command.js';
import { NanoPayError } from '../errors.js';
import { sweep, type SweepResult } from '../ops/requests/sweep.js';

/** What a sweep did (or would do), for people: one line per account that moved or was left, then the total. */
function sweepText(r: SweepResult): string {
  const lines = r.accounts
    .filter((a) => a.status !== 'empty')
    .map((a) => {
      const what =
        a.status === 'swept' || (r.dry_run && a.status === 'sending')
          ? `${a.amount} XNO${a.block === undefined ? '' : ` (block ${a.block})`}`
          : a.status === 'below_min'
            ? `left: ${a.amount} XNO is below --min`
            : a.status === 'left'
              ? `left: ${a.amount ?? '0'} XNO stays, as ${a.reason ?? 'its request is not settled'}`
              : a.status === 'held'
                ? `held: waits for a person to approve ${a.approval_id ?? 'it'} (nanopay approvals approve); the next sweep sends it`
                : `failed: ${a.error?.message ?? a.status}`;
      return `${a.address} (request ${a.request_id}): ${what}`;
    });
  const head = r.dry_run ? `Dry run: would sweep ${r.total} XNO from ${r.swept} account(s) to ${r.to}. Nothing was signed.` : `Swept ${r.total} XNO from ${r.swept} account(s) to ${r.to}${r.resumed ? ' (a sweep that had stopped was finished)' : ''}.`;
  const left = r.left === 0 ? [] : [`Left ${r.left_total} XNO on ${r.left} account(s) whose requests are not settled.`];
  return [...lines, head, ...left].join('\n');
}

export default class Sweep extends SessionCommand {
  static override summary = "Move the takings of the requests' fresh accounts to one address.";
  static override description = `Node backend, for requests with their own account (request --fresh-address, checkout serve --fresh-addresses):
on each account what is pending is received, then the whole balance is sent to --to, through the same path as send (limits, the journal).
An account whose request is not settled (waiting, underpaid, overpaid, paid late, a refund waiting) is left alone and listed
with why; --include ID sweeps one you settled yourself. One the spending policy holds waits for its approval: the next sweep sends it.
The run is kept in the store: a sweep stopped by a crash is finished by the next one (no account swept twice, none forgotten).
--min leaves small balances where they are; --dry-run prints what would move. On a terminal it shows the total and asks; --yes skips that.`;
  static override examples = ['<%= config.bin %> sweep --to @cold --dry-run', '<%= config.bin %> sweep --to nano_1… --min 0.001 --yes --json'];
  static override flags = {
    to: Flags.string({ description: 'where the takings go: an address, or @NAME of a contact', required: true }),
    min: Flags.string({ description: 'leave balances below this many XNO where they are' }),
    include: Flags.string({ description: 'sweep this request\'s account though it is not settled (a late payment you honour); repeatable', multiple: true }),
    'dry-run': Flags.boolean({ description: 'show what would move; sign nothing' }),
    yes: Flags.boolean({ char: 'y', description: 'do not ask for confirmation' }),
  };

  async run(): Promise<SweepResult> {
    const { flags } = await this.parse(Sweep);
    const session = this.session(flags);
    const input = { to: flags.to, signal: this.signal, ...(flags.min === undefined ? {} : { min: { xno: flags.min } }), ...(flags.include === undefined ? {} : { include: flags.include }) };
    if (!flags['dry-run'] && !flags.yes) {
      const planned = await sweep(session, { ...input, dryRun: true });
      process.stderr.write(`${sweepText(planned)}\n`);
      if (!(await confirmOnTerminal(`Sweep ${planned.total} XNO to ${planned.to}?`, false))) throw new NanoPayError('DECLINED', 'Declined; nothing was signed');
    }
    const result = await sweep(session, { ...input, dryRun: flags['dry-run'] });
    this.log(sweepText(result));
    return result;
  }
}
