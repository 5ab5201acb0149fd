import { Args, Flags } from '@oclif/core';
import { paymentConfirmation } from '../../cli/input/confirm-send.js';
import { SessionCommand } from '../../cli/session-command.js';
import { parseTier, topup, type TopupResult } from '../../ops/spending/credits.js';

export default class CreditsTopup extends SessionCommand {
  static override summary = 'Buy credits: pays the service the tier\'s price from the active account (or --wallet and --account).';
  static override description = `Tiers: 10, 50, 100, 500, 1000, 5000, 10000, 50000, 100000. The service's offer must match the tier's
listed price, or nothing is signed. If a top-up was interrupted (the connection dropped, the process was killed), running
it again completes it without paying twice. It works at 0 credits: when the service wants credits to read the account, the
top-up is made on the account's last block this profile recorded (checked: its hash, account and signature), with calls
that cost none.`;
  static override examples = ['<%= config.bin %> credits topup 1000', '<%= config.bin %> credits topup 100 --yes --wallet savings --json'];
  static override args = { tier: Args.string({ ignoreStdin: true, description: 'credits to buy', required: true }) };
  static override flags = {
    yes: Flags.boolean({ char: 'y', description: 'do not ask for confirmation' }),
    approval: Flags.string({ description: 'the id of an approval a person gave for this very spend (APPROVAL_REQUIRED named it)' }),
    id: Flags.string({ description: 'idempotency key: a retry with it (after a lost answer) shows the first top-up and pays nothing' }),
    wallet: Flags.string({ description: 'wallet to pay from instead of the active one' }),
    account: Flags.integer({ description: 'account index within the wallet', min: 0 }),
  };

  async run(): Promise<TopupResult | void> {
    const { args, flags } = await this.parse(CreditsTopup);
    const tier = parseTier(args.tier);
    const confirm = paymentConfirmation({ action: `Buying ${tier} credits`, question: (a) => `Buy ${tier} credits for ${a} XNO?` }, flags);
    const json = this.jsonEnabled();
    const result = await topup(this.session(flags), {
      tier,
      signal: this.signal,
      ...(flags.approval === undefined ? {} : { approval: flags.approval }),
      ...(flags.id === undefined ? {} : { id: flags.id }),
      ...(flags.wallet === undefined ? {} : { wallet: flags.wallet }),
      ...(flags.account === undefined ? {} : { index: flags.account }),
      ...(confirm === undefined ? {} : { confirm }),
      // Shown before the top-up is finished with, so a run killed before the user saw it is completed by the next one.
      report: (result) => {
        if (json) return this.logJson(result);
        if (result.repeated) this.log(`Already topped up under this key (block ${result.hash}); nothing new was paid.`);
        else if (result.resumed) this.log(`Completed an interrupted top-up (block ${result.hash}); nothing new was paid.`);
        else this.log(`Paid ${result.amount} XNO to ${result.payment_address} (block ${result.hash}).`);
        const cost = result.calls_cost === undefined || result.calls_cost === 0 ? '' : ` (${result.credits_before} before; the top-up's own calls cost ${result.calls_cost})`;
        this.log(`Topped up ${result.topped_up_credits} credits; balance now ${result.new_credits_balance}${cost}.`);
      },
    });
    // In JSON mode the document was printed by the report already.
    return json ? undefined : result;
  }
}
