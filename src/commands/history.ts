import { Args, Flags } from '@oclif/core';
import { table } from '../cli/output/format.js';
import { SessionCommand } from '../cli/session-command.js';
import { history, historyStream, type HistoryItem, type HistoryResult } from '../ops/account/history.js';

export default class History extends SessionCommand {
  static override summary = 'Sends and receives of the active account (or any address), newest first.';
  static override description = `Each block: time, kind, amount, the other account, the block hash, and the --id key, payment request or top-up
it belongs to when nanopay knows. On a node backend the history is the node's account_history, each block's hash and
signature checked and its amount taken from the signed balances; on the service backend (which has no account history)
it is what nanopay recorded on this machine for this profile, and the output says so. --all walks the whole history a
page at a time; with --json it prints one JSON document per block (NDJSON).`;
  static override examples = ['<%= config.bin %> history', '<%= config.bin %> history --limit 5 --json', '<%= config.bin %> history --all --json > history.ndjson'];
  static override args = { address: Args.string({ ignoreStdin: true, description: 'any account (default: the active one)' }) };
  static override flags = {
    limit: Flags.integer({ description: 'how many blocks, newest first', default: 20, min: 1 }),
    all: Flags.boolean({ description: 'the whole history, a page at a time (NDJSON with --json)', exclusive: ['limit'] }),
    wallet: Flags.string({ description: 'wallet to use instead of the active one' }),
    account: Flags.integer({ description: 'account index within the wallet', min: 0 }),
  };

  async run(): Promise<HistoryResult | void> {
    const { args, flags } = await this.parse(History);
    const input = {
      signal: this.signal,
      ...(args.address === undefined ? {} : { address: args.address }),
      ...(flags.wallet === undefined ? {} : { wallet: flags.wallet }),
      ...(flags.account === undefined ? {} : { index: flags.account }),
    };
    const session = this.session(flags);
    const json = this.jsonEnabled();
    if (flags.all) {
      const stream = await historyStream(session, input);
      if (!json) this.log(`History of ${stream.account}\n${stream.note}\n`);
      let count = 0;
      for await (const item of stream.items) {
        if (json) process.stdout.write(`${JSON.stringify(item)}\n`);
        else this.log(line(item));
        count++;
      }
      if (!json) this.log(count === 0 ? 'No blocks.' : `${count} block${count === 1 ? '' : 's'}.`);
      return;
    }
    const result = await history(session, { ...input, limit: flags.limit });
    this.log(`History of ${result.account}\n${result.note}\n`);
    if (result.history.length === 0) this.log('No blocks.');
    else this.log(table([['TIME', 'TYPE', 'AMOUNT (XNO)', 'COUNTERPARTY', 'BLOCK', 'FOR'], ...result.history.map(cells)]));
    if (result.more) this.log(`\nOlder blocks exist: --limit ${flags.limit * 2} or --all.`);
    return result;
  }
}

function cells(item: HistoryItem): string[] {
  const sign = item.type === 'send' ? '-' : item.type === 'receive' || item.type === 'open' ? '+' : '';
  const other = item.counterparty ?? (item.representative === undefined ? '' : `representative ${item.representative}`);
  const belongs = [item.id === undefined ? '' : `--id ${item.id}`, item.request === undefined ? '' : `request ${item.request}`, item.topup === undefined ? '' : `top-up ${item.topup}`].filter((s) => s !== '').join(', ');
  const kind = item.unsettled ? `${item.type} (signed, not yet in the ledger)` : item.verified ? item.type : `${item.type} (unchecked)`;
  return [item.time ?? '?', kind, `${sign}${item.amount}`, other, item.hash, belongs];
}

function line(item: HistoryItem): string {
  return cells(item).filter((c) => c !== '').join('  ');
}
