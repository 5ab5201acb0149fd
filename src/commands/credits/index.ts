import { table } from '../../cli/output/format.js';
import { SessionCommand } from '../../cli/session-command.js';
import { credits, type CreditsResult } from '../../ops/spending/credits.js';

export default class Credits extends SessionCommand {
  static override summary = 'Show the API key\'s credit balance and the price of each top-up tier.';
  static override description = 'Reading credits is free. Buy more with credits topup TIER.';
  static override examples = ['<%= config.bin %> credits', '<%= config.bin %> credits --json'];

  async run(): Promise<CreditsResult> {
    const { flags } = await this.parse(Credits);
    const result = await credits(this.session(flags));
    this.log(`Credits: ${result.credits}`);
    this.log('');
    this.log(table([['TIER', 'PRICE'], ...result.tiers.map((t) => [String(t.credits), `${t.price} XNO`])]));
    this.log('\nBuy: nanopay credits topup <tier>');
    return result;
  }
}
