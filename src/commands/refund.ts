import { Args, Flags } from '@oclif/core';
import { paymentConfirmation } from '../cli/input/confirm-send.js';
import { SessionCommand } from '../cli/session-command.js';
import { NanoPayError } from '../errors.js';
import { createClaim, DEFAULT_CLAIM_LIFETIME, type ClaimShown } from '../ops/requests/refund-claims.js';
import { refund, refundFailureText, runPendingRefunds, type RefundFailure, type RefundResult } from '../ops/requests/refunds.js';

/** What a refund did, for people: a dry run, a repeat under --id, a finished earlier one, or the block that sent the money back. */
function refundText(r: RefundResult, key: string | undefined): string {
  const { refund: f, request } = r;
  const where = request.refunded_amount === undefined ? '' : `\nRequest: ${request.status} (${request.refunded_amount} XNO refunded in all)`;
  if (r.dry_run) return `Dry run: would refund ${f.amount} XNO of request ${f.request_id} to ${f.to}. Nothing was signed.`;
  if (r.repeated) return `Already refunded under --id ${key}: ${f.amount} XNO to ${f.to} (block ${f.block}). Nothing new was sent.${where}`;
  if (r.resumed) return `Finished an earlier refund of request ${f.request_id} that had not completed: ${f.amount} XNO to ${f.to} (block ${f.block}).${where}`;
  return `Refunded ${f.amount} XNO to ${f.to}\nBlock:   ${f.block}${where}`;
}

export default class Refund extends SessionCommand {
  static override summary = 'Refund what a payment request received (or part of it) to the account that paid.';
  static override description = `The payer is read from the verified paying blocks; with several payers, --to names one (they are listed).
Partial refunds add up and never exceed what was received; a request nothing was received for is refused.
The refund goes through the same path as send (limits, confirmation, the journal): a crash at any moment refunds once,
and a refund that did not finish is finished by the next refund of that request (or --pending).
--pending carries out every refund waiting in the store: orders from the shop's API (POST /api/v1/requests/ID/refunds).
--claim sends nothing: it makes a refund claim link (shown once) where the customer names their own address (the
account that paid may be an exchange's); checkout serve shows the page at /claim/TOKEN and its signer pays it.`;
  static override examples = [
    '<%= config.bin %> refund 1b0e…',
    '<%= config.bin %> refund 1b0e… --amount 0.2 --id order-42-refund --yes --json',
    '<%= config.bin %> refund --pending --yes',
    '<%= config.bin %> refund 1b0e… --claim --amount 0.2 --public-url https://pay.example.com',
  ];
  static override args = { request_id: Args.string({ ignoreStdin: true, description: "the request's transaction id" }) };
  static override flags = {
    amount: Flags.string({ description: 'XNO to refund (default: what is left of what the payer sent)' }),
    to: Flags.string({ description: 'where to send it: a payer of the request, or any address or @NAME' }),
    id: Flags.string({ description: 'idempotency key: a repeat with the same key and refund returns the first result' }),
    approval: Flags.string({ description: 'the id of an approval a person gave for this very refund (APPROVAL_REQUIRED named it)' }),
    yes: Flags.boolean({ char: 'y', description: 'do not ask for confirmation' }),
    'dry-run': Flags.boolean({ description: 'show what would happen; sign nothing' }),
    pending: Flags.boolean({ description: 'carry out every refund waiting in the store (API orders, unfinished runs)', exclusive: ['amount', 'to', 'id', 'dry-run', 'approval'] }),
    claim: Flags.boolean({ description: 'make a refund claim link instead: the customer names the address', exclusive: ['to', 'id', 'dry-run', 'approval', 'pending'] }),
    expires: Flags.string({ description: `with --claim: how long the link works (10m to 30d; default ${DEFAULT_CLAIM_LIFETIME})`, dependsOn: ['claim'] }),
    'public-url': Flags.string({ description: "with --claim: checkout serve's public URL, to print the whole link (else its path)", dependsOn: ['claim'] }),
  };

  async run(): Promise<RefundResult | { done: RefundResult[]; failed: RefundFailure[] } | (ClaimShown & { url: string })> {
    const { args, flags } = await this.parse(Refund);
    const session = this.session(flags);
    if (flags.claim) {
      if (args.request_id === undefined) throw new NanoPayError('USAGE', 'Give the request id to make a refund claim for');
      const { claim, token } = await createClaim(session, await session.dataStore(), {
        requestId: args.request_id,
        ...(flags.amount === undefined ? {} : { amount: { xno: flags.amount } }),
        ...(flags.expires === undefined ? {} : { expiresIn: flags.expires }),
      });
      const url = `${(flags['public-url'] ?? '').replace(/\/+$/, '')}/claim/${token}`;
      this.log(`Refund claim ${claim.id}: ${claim.amount} XNO of request ${claim.request_id}, until ${claim.expires_at}.`);
      this.log(`Send the customer this link (shown once${flags['public-url'] === undefined ? "; put checkout serve's public URL before it" : ''}):\n${url}`);
      return { ...claim, url };
    }
    if (flags.pending) {
      if (args.request_id !== undefined) throw new NanoPayError('USAGE', 'Give a request id or --pending, not both');
      if (!flags.yes) throw new NanoPayError('USAGE', '--pending sends every waiting refund without asking each: pass --yes');
      const result = await runPendingRefunds(session, { signal: this.signal });
      for (const done of result.done) this.log(refundText(done, undefined));
      for (const failed of result.failed) process.stderr.write(`${refundFailureText(failed)}\n`);
      if (result.done.length === 0 && result.failed.length === 0) this.log('No refund is waiting.');
      if (result.failed.length > 0 && !this.jsonEnabled()) throw new NanoPayError(result.failed[0]?.code ?? 'INTERNAL_ERROR', `${result.failed.length} refund(s) failed`);
      return result;
    }
    if (args.request_id === undefined) throw new NanoPayError('USAGE', 'Give the request id to refund (or --pending)');
    const confirm = paymentConfirmation({ action: 'Refunding', question: (a) => `Refund ${a} XNO?` }, flags);
    const result = await refund(session, {
      requestId: args.request_id,
      ...(flags.amount === undefined ? {} : { amount: { xno: flags.amount } }),
      ...(flags.to === undefined ? {} : { to: flags.to }),
      ...(flags.id === undefined ? {} : { key: flags.id }),
      ...(flags.approval === undefined ? {} : { approval: flags.approval }),
      dryRun: flags['dry-run'],
      signal: this.signal,
      ...(confirm === undefined ? {} : { confirm }),
    });
    this.log(refundText(result, flags.id));
    return result;
  }
}
