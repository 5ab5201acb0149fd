import { Flags } from '@oclif/core';
import { SessionCommand } from '../../cli/session-command.js';
import { moveStore, type StoreMoveResult } from '../../ops/profile/store-move.js';

export default class StoreMigrate extends SessionCommand {
  static override summary = "Move the profile's store between its SQLite file and PostgreSQL: copy everything, check the counts, then switch database-url.";
  static override description = `The destination (--to) is a PostgreSQL URL (from the SQLite file; without a password: it goes in PGPASSWORD or ~/.pgpass) or
sqlite (from database-url's database into the profile's SQLite file). The destination must be empty. Every table
(requests and their fresh accounts, the shop's requests and webhook events, the outbox, refunds, sweeps, prices and
rates, the spending audit and approvals) is copied from one snapshot, each table's count compared, and only then is
database-url set (or unset). The old store is left as it was. Stop servers using the store first (checkout serve,
serve): what they write during the move stays behind. Refused while NANOPAY_DATABASE_URL is set (it overrides the
profile's setting).`;
  static override examples = ['<%= config.bin %> store migrate --to postgres://nanopay@db.internal/shop', '<%= config.bin %> store migrate --to sqlite --json'];
  static override flags = {
    to: Flags.string({ description: 'a PostgreSQL URL, or sqlite', required: true }),
  };

  async run(): Promise<StoreMoveResult> {
    const { flags } = await this.parse(StoreMigrate);
    const result = await moveStore(this.session(flags), flags.to);
    for (const t of result.tables) this.log(`${t.table.padEnd(22)} ${t.rows}`);
    this.log(`Copied ${result.rows} rows from ${result.from.location} to ${result.to.location}; the counts match.`);
    this.log(result.database_url === null ? 'database-url is unset: the profile uses its SQLite file.' : `database-url = ${result.database_url}`);
    this.log(`The old store is left as it was: ${result.old_store}`);
    return result;
  }
}
