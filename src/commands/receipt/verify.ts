import { readFile } from 'node:fs/promises';
import { Args } from '@oclif/core';
import { BaseCommand } from '../../cli/base-command.js';
import { NanoPayError } from '../../errors.js';
import { rawToXno } from '../../nano/index.js';
import { checkReceipt, type ReceiptCheck } from '../../x402/sessions/receipts.js';

export default class ReceiptVerify extends BaseCommand {
  static override summary = 'Check a receipt offline: a Nano session\'s (the seller\'s, payer\'s and final voucher\'s signatures, the sums) or an exact settlement\'s.';
  static override description = `Needs no wallet and no network: the receipt's signatures are checked against the accounts it names (the seller's
pay_to over the whole receipt, the payer's over the session key's binding, the session key's over the final voucher),
and its sums (deposits, spent within the final voucher, refund = deposit − spent). Exits 1 when any does not hold,
naming each. That the deposit and refund blocks are on the ledger is a separate check (nanopay block info HASH).`;
  static override examples = ['<%= config.bin %> receipt verify receipt.json'];
  static override args = { file: Args.string({ description: 'the receipt (JSON), or - for stdin', required: true }) };

  async run(): Promise<ReceiptCheck> {
    const { args } = await this.parse(ReceiptVerify);
    const text = args.file === '-' ? await new Response(process.stdin as unknown as ReadableStream).text() : await readFile(args.file, 'utf8');
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new NanoPayError('INVALID_JSON', `${args.file} does not hold JSON`);
    }
    const check = checkReceipt(parsed);
    if (check.valid && check.scheme === 'exact') {
      this.log(`Valid: block ${check.session}, ${check.payer} paid ${check.pay_to} ${rawToXno(BigInt(check.spent_raw))} XNO (exact)`);
    } else if (check.valid) {
      this.log(`Valid: session ${check.session}, ${check.payer} paid ${check.pay_to} ${rawToXno(BigInt(check.spent_raw))} XNO of ${rawToXno(BigInt(check.deposit_raw))} XNO, ${rawToXno(BigInt(check.refund_raw))} XNO refunded`);
    } else {
      this.log(`Not valid:\n${check.problems.map((p) => `- ${p}`).join('\n')}`);
      process.exitCode = 1;
    }
    return check;
  }
}
