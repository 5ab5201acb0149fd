import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Flags } from '@oclif/core';
import { SessionCommand } from '../../cli/session-command.js';
import { NanoPayError } from '../../errors.js';
import { EXPORT_FORMATS, exportFormat, exportProfileRequests, exportQuery } from '../../ops/requests/export.js';
import { SHOP_STATUSES } from '../../store/shop.js';

export default class RequestsExport extends SessionCommand {
  static override summary = "Export the shop's requests for the accountant: one row per request, as CSV (default) or JSON, on stdout.";
  static override description = `The requests checkout serve's API made (the profile's store), in the order they were made: order id, status, created, expiry, paid and
refunded times, XNO and raw amounts, the price and its rate when priced in another currency, paying and refund blocks,
payer accounts, metadata. --from and --to are ISO dates (a whole day) or times, in UTC unless a time names its offset;
--to is excluded, but a date alone takes that day in. CSV is RFC 4180 (CRLF, quoted fields) in UTF-8 with a byte order
mark, for spreadsheets (--no-bom for programs); a field that a spreadsheet would run as a formula (=, +, -, @) starts
with an apostrophe. Written as it is read, a page at a time: any number of requests in the same memory.`;
  static override examples = [
    '<%= config.bin %> requests export --from 2026-01-01 --to 2026-01-31 > january.csv',
    '<%= config.bin %> requests export --status paid --format json',
  ];
  static override flags = {
    from: Flags.string({ description: 'created at or after this date or time (UTC unless it says)' }),
    to: Flags.string({ description: 'created before this time; a date alone includes that day' }),
    status: Flags.string({ description: 'only the requests in this status', options: [...SHOP_STATUSES] }),
    format: Flags.string({ description: 'csv (default), json (an array; also --json) or ndjson (a JSON object per line)', options: [...EXPORT_FORMATS] }),
    bom: Flags.boolean({ description: 'start the CSV with a byte order mark, for spreadsheets (--no-bom for programs)', default: true, allowNo: true }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(RequestsExport);
    if (this.jsonEnabled() && flags.format === 'csv') throw new NanoPayError('USAGE', '--json writes JSON: give --format csv without it');
    const query = exportQuery(flags);
    const format = exportFormat(flags.format ?? (this.jsonEnabled() ? 'json' : undefined));
    const pieces = await exportProfileRequests(this.session(flags), query, format, { bom: flags.bom });
    try {
      // Each page written before the next is read; stdout stays open for what the command prints after.
      await pipeline(Readable.from(pieces), process.stdout, { end: false });
    } catch (error) {
      // Read by something that stopped reading (| head): what it wanted was written.
      if ((error as { code?: string }).code !== 'EPIPE') throw error;
    }
  }
}
