import { Flags } from '@oclif/core';
import { csvRecord } from '../cli/output/csv.js';
import { writeOut } from '../cli/output/stream.js';
import { SessionCommand } from '../cli/session-command.js';
import { NanoPayError } from '../errors.js';
import { rawToXno } from '../nano/index.js';
import { parseDuration } from '../ops/duration.js';
import { auditTrail } from '../ops/spending/audit.js';
import type { AuditRecord } from '../store/spending.js';

const COLUMNS = ['at', 'front_end', 'kind', 'decision', 'rule', 'amount', 'amount_raw', 'recipient', 'contact', 'host', 'account', 'hash', 'status', 'approval_id', 'via', 'session', 'before', 'after', 'message', 'id'] as const;

/** A session's refund is recorded as a negative spend (it frees the budget its deposit took): shown with its sign. */
const signedXno = (raw: bigint): string => (raw < 0n ? `-${rawToXno(-raw)}` : rawToXno(raw));

/** A record as audit prints it: the amount in XNO beside raw; a policy change's before and after as JSON text. */
function row(r: AuditRecord): Record<(typeof COLUMNS)[number], string | null> {
  return {
    at: r.at,
    front_end: r.front_end,
    kind: r.kind,
    decision: r.decision,
    rule: r.rule,
    amount: signedXno(BigInt(r.amount_raw)),
    amount_raw: r.amount_raw,
    recipient: r.recipient,
    contact: r.contact ?? null,
    host: r.host ?? null,
    account: r.account,
    hash: r.hash ?? null,
    status: r.status ?? null,
    approval_id: r.approval_id ?? null,
    via: r.via ?? null,
    session: r.session ?? null,
    before: r.before === undefined ? null : JSON.stringify(r.before),
    after: r.after === undefined ? null : JSON.stringify(r.after),
    message: r.message ?? null,
    id: r.id,
  };
}

/** One line of the trail for a person: a spend's amount and recipient, or a policy change and how it was made. */
function line(r: ReturnType<typeof row>): string {
  const cells =
    r.kind === 'policy'
      ? [r.at, r.front_end, r.decision, r.rule ?? '', r.message ?? '']
      : [r.at, r.front_end, r.decision, r.kind, `${r.amount} XNO`, r.host ?? r.recipient, r.rule === null ? '' : `rule: ${r.rule}`, r.hash ?? '', r.status ?? '', r.via === null ? '' : `via ${r.via}`];
  return cells.filter((c) => c !== '').join('  ');
}

/** --since: an ISO time, or how long ago (30m, 2h, 7d). */
function since(text: string): number {
  if (/^\d{4}-\d{2}-\d{2}/.test(text)) {
    const at = Date.parse(text);
    if (Number.isNaN(at)) throw new NanoPayError('USAGE', `--since "${text}" is not a time; write 2026-05-01, 2026-05-01T12:00:00Z, or a duration ago such as 2h or 7d`);
    return at;
  }
  return Date.now() - parseDuration(text, { max: 100 * 365 * 86_400, what: '--since' }) * 1000;
}

export default class Audit extends SessionCommand {
  static override summary = 'Every spending decision of the profile, oldest first: who asked, what, the rule that decided, the block.';
  static override description = `Each decision of the spending policy: time, front end (cli, toolset, mcp, agent, sdk), kind (send, donate, topup,
x402), decision (allowed, approved, denied, approval_required, declined), the rule that decided, amount, recipient or
host, the paying account, and for an allowed spend its block and where it stands (in_flight, paid, dropped,
cancelled); how a person approved it (via) and the unlocked session's scope that judged it. Changes of the policy itself
are there too (kind policy: policy_changed with the password, denied without), with the policy before and after. --json prints one JSON object per line (NDJSON), --csv RFC 4180 CSV with a header; both stream, a page
at a time, whatever the length of the trail.`;
  static override examples = ['<%= config.bin %> audit --since 1d', '<%= config.bin %> audit --json > audit.ndjson', '<%= config.bin %> audit --since 2026-05-01 --csv > audit.csv'];
  static override flags = {
    since: Flags.string({ description: 'only decisions from this time (2026-05-01, an ISO time) or this long ago (2h, 7d)' }),
    csv: Flags.boolean({ description: 'CSV (RFC 4180) with a header line', exclusive: ['json'] }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Audit);
    const trail = auditTrail(this.session(flags), flags.since === undefined ? {} : { sinceMs: since(flags.since) });
    const json = this.jsonEnabled();
    if (flags.csv) await writeOut(csvRecord(COLUMNS));
    let count = 0;
    for await (const record of trail) {
      const r = row(record);
      if (json) await writeOut(`${JSON.stringify(r)}\n`);
      else if (flags.csv) await writeOut(csvRecord(COLUMNS.map((c) => r[c])));
      else await writeOut(`${line(r)}\n`);
      count++;
    }
    if (!json && !flags.csv && count === 0) this.log('No decisions recorded.');
  }
}
