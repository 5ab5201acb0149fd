import { Args, Flags } from '@oclif/core';
import { SessionCommand } from '../../cli/session-command.js';
import { exportReceipt } from '../../x402/sessions/profile-seller.js';
import type { ExactReceipt } from '../../x402/sessions/receipts.js';
import type { SessionReceipt } from '../../x402/sessions/seller.js';

export default class ReceiptExport extends SessionCommand {
  static override summary = 'A seller\'s signed receipt: of a session it sold (closed), or of a block its paywall settled (exact).';
  static override description = `For a session id: the session's receipt (deposits, spent, refund, the final voucher), as the buyer got it at close.
For a block hash the paywall (or facilitator) of this profile settled: a receipt of that exact payment (block, payer,
payee, amount, when), once the settlement record says it settled it and the ledger shows the block confirmed, paying
the wallet's account. Signed with that account's key (the unlocked session, or the key store password); anyone checks
it with nanopay receipt verify.`;
  static override examples = ['<%= config.bin %> receipt export 7C1F… > receipt.json'];
  static override args = { id: Args.string({ description: 'a session id, or the hash of a settled block', required: true }) };
  static override flags = {
    wallet: Flags.string({ description: 'the wallet whose account was paid (default: the active one)' }),
    account: Flags.integer({ description: 'that account index within the wallet', min: 0 }),
  };

  async run(): Promise<SessionReceipt | ExactReceipt> {
    const { args, flags } = await this.parse(ReceiptExport);
    const receipt = await exportReceipt(this.session(flags), args.id, { ...(flags.wallet === undefined ? {} : { wallet: flags.wallet }), ...(flags.account === undefined ? {} : { index: flags.account }) });
    if (!this.jsonEnabled()) process.stdout.write(`${JSON.stringify(receipt, null, 2)}\n`);
    return receipt;
  }
}
