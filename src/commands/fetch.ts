import { readFile, writeFile } from 'node:fs/promises';
import { Args, Flags } from '@oclif/core';
import { confirmOnTerminal } from '../cli/input/confirm.js';
import { SessionCommand } from '../cli/session-command.js';
import { NanoPayError } from '../errors.js';
import type { Confirm } from '../ops/spending/movement.js';
import { precacheAfter } from '../ops/account/work.js';
import { lanesIdle } from '../ops/lanes/keeper.js';
import { fetchWithPayment, type X402Payment } from '../x402/client.js';
import { quoteX402, type X402Quote } from '../x402/quote.js';
import { fetchInSession } from '../x402/sessions/buyer.js';
import type { SessionPayment } from '../x402/sessions/buyer-book.js';
import { rawToXno } from '../nano/index.js';

function header(line: string): [string, string] {
  const colon = line.indexOf(':');
  if (colon <= 0) throw new NanoPayError('USAGE', `-H takes 'Name: value', not "${line}"`);
  return [line.slice(0, colon).trim(), line.slice(colon + 1).trim()];
}

/** Asked on a terminal; without one (and without --yes) a payment over the auto-pay threshold is refused. */
function askToPay(url: string): Confirm {
  return (p) => {
    if (!process.stdin.isTTY || !process.stderr.isTTY) {
      return Promise.reject(new NanoPayError('USAGE', `${url} asks for ${p.amount} XNO, and there is no terminal to ask on; nothing was paid`, {
        hint: 'Pass --yes, or set an auto-pay threshold: nanopay config set x402-auto-pay 0.001',
      }));
    }
    process.stderr.write(`${url} asks for payment (x402)\nFrom:     ${p.from}\nTo:       ${p.to}\nAmount:   ${p.amount} XNO\nBalance:  ${p.balance} XNO -> ${p.balance_after} XNO\n`);
    return confirmOnTerminal(`Pay ${p.amount} XNO?`, false);
  };
}

export default class Fetch extends SessionCommand {
  static override summary = 'Fetch a URL like curl, paying an HTTP 402 (x402) in Nano within a maximum.';
  static override description = `On a 402 with an x402 v2 PAYMENT-REQUIRED header it picks the cheapest Nano requirement on the network of the
profile's backend (nano:mainnet on the live network, nano:dev on the sandbox; another network is refused) within --max (or the profile's
x402-max; with neither it pays nothing), pays it through the usual guards (per-send and daily limits, account lock,
journal), retries with the payment and writes the body to stdout (or -o FILE). The payment (block hash, amount, payee) is
reported on stderr, or in --json. A payment counts only when our own backend shows the block confirmed; otherwise the
block stays outstanding: a rerun with the same --id presents the same block again, and the account's next send or
receive cancels it (a block of ours on the same previous), so it is never paid twice. On a terminal it asks before paying
more than x402-auto-pay, unless --yes. Redirects are followed within the URL's origin only; one to another origin (another
host, port or scheme) is returned as it is (--json: "redirect"), and the payment goes only to the URL that asked for it.
A server that asks for work harder than 64 times the live send threshold's is refused, and the work is bounded by --timeout.
With payment lanes (nanopay lanes set), each paid request takes a free lane, so fetches in several processes pay at once.
--dry-run sends the request unpaid and prints what the server asks (amount, payee, network) and whether the spending
policy would allow it (allow), hold it for an approval (ask) or refuse it (deny, with the rule); nothing is signed,
journaled or recorded.`;
  static override examples = [
    '<%= config.bin %> fetch http://127.0.0.1:4021/report --max 0.01',
    "<%= config.bin %> fetch https://api.example/v1/q -X POST -H 'Content-Type: application/json' -d '{\"q\":1}' --max 0.001 --yes --id q-1 --json",
    '<%= config.bin %> fetch http://127.0.0.1:4021/report --max 0.01 --dry-run',
  ];
  static override args = { url: Args.string({ ignoreStdin: true, description: 'the URL', required: true }) };
  static override flags = {
    request: Flags.string({ char: 'X', description: 'HTTP method (default GET, or POST with a body)' }),
    header: Flags.string({ char: 'H', description: "request header 'Name: value' (repeatable)", multiple: true, default: [] }),
    data: Flags.string({ char: 'd', description: 'request body', exclusive: ['data-file'] }),
    'data-file': Flags.string({ description: 'read the request body from this file' }),
    max: Flags.string({ description: 'the most to pay for this request, in XNO (default: the profile x402-max)' }),
    yes: Flags.boolean({ char: 'y', description: 'do not ask before paying' }),
    id: Flags.string({ description: 'idempotency key: a rerun presents the same payment again, never a second one' }),
    approval: Flags.string({ description: 'the id of an approval a person gave for this very spend (APPROVAL_REQUIRED named it)' }),
    output: Flags.string({ char: 'o', description: 'write the body to this file instead of stdout' }),
    precache: Flags.boolean({ description: 'after paying, make the work for the account\'s next block now, so the next payment does not wait' }),
    wallet: Flags.string({ description: 'wallet to pay from instead of the active one' }),
    account: Flags.integer({ description: 'account index within the wallet', min: 0 }),
    'dry-run': Flags.boolean({ description: 'pay nothing: print what the server asks and whether the spending policy would allow it' }),
    session: Flags.boolean({ description: 'pay in a Nano session when the server offers one: one deposit, then a signed voucher a call (nanopay sessions closes it)', exclusive: ['dry-run'] }),
    'session-deposit': Flags.string({ description: "a new session's deposit in XNO (default: the server's least)", dependsOn: ['session'] }),
  };

  async run(): Promise<unknown> {
    const { args, flags } = await this.parse(Fetch);
    const body = flags['data-file'] !== undefined ? await readFile(flags['data-file']) : flags.data;
    const init: RequestInit = {
      method: flags.request ?? (body === undefined ? 'GET' : 'POST'),
      headers: flags.header.map(header),
      ...(body === undefined ? {} : { body }),
    };
    const session = this.session(flags);
    if (flags['dry-run']) return this.quote(session, args.url, init, flags);
    const options = {
      signal: this.signal,
      ...(flags.max === undefined ? {} : { maxXno: flags.max }),
      ...(flags.id === undefined ? {} : { id: flags.id }),
      ...(flags.approval === undefined ? {} : { approval: flags.approval }),
      ...(flags.wallet === undefined ? {} : { wallet: flags.wallet }),
      ...(flags.account === undefined ? {} : { index: flags.account }),
      ...(flags.yes ? {} : { confirm: askToPay(args.url) }),
    };
    const { response, payment, redirect, session: inSession } = flags.session
      ? await fetchInSession(session, args.url, init, { ...options, ...(flags['session-deposit'] === undefined ? {} : { depositXno: flags['session-deposit'] }) })
      : { ...(await fetchWithPayment(session, args.url, init, options)), session: undefined };
    const bytes = Buffer.from(await response.arrayBuffer());
    if (flags.output !== undefined) await writeFile(flags.output, bytes);
    if (flags.precache && payment !== undefined && !payment.repeated) await precacheAfter(session, payment.hash, this.signal);
    if (payment !== undefined && !this.jsonEnabled()) process.stderr.write(`${paidText(payment)}\n`);
    if (inSession !== undefined && !this.jsonEnabled()) process.stderr.write(`${sessionText(inSession)}\n`);
    if (redirect !== undefined && !this.jsonEnabled()) process.stderr.write(`Not followed: HTTP ${response.status} to ${redirect}, another origin (nothing is paid or sent there; fetch that URL to go on)\n`);
    if (this.jsonEnabled()) {
      this.logJson({
        status: response.status,
        ...(flags.output === undefined ? { body: bytes.toString('utf8') } : { output: flags.output }),
        payment: payment ?? null,
        ...(flags.session ? { session: inSession ?? null } : {}),
        ...(redirect === undefined ? {} : { redirect: { location: redirect, followed: false } }),
      });
    } else if (flags.output === undefined) process.stdout.write(bytes);
    if (!this.jsonEnabled() && response.status >= 400) process.exitCode = response.status >= 500 ? 5 : 1;
    // A lane left low is refilled before the process ends (after the answer was written).
    await lanesIdle(session);
    return undefined;
  }

  private async quote(session: ReturnType<Fetch['session']>, url: string, init: RequestInit, flags: { max?: string; approval?: string; wallet?: string; account?: number }): Promise<X402Quote> {
    const quote = await quoteX402(session, url, init, {
      signal: this.signal,
      ...(flags.max === undefined ? {} : { maxXno: flags.max }),
      ...(flags.approval === undefined ? {} : { approval: flags.approval }),
      ...(flags.wallet === undefined ? {} : { wallet: flags.wallet }),
      ...(flags.account === undefined ? {} : { index: flags.account }),
    });
    this.log(quoteText(quote));
    return quote;
  }
}

function quoteText(q: X402Quote): string {
  if (!q.payment_required) return `${q.url} asks for no payment (HTTP ${q.status}); nothing was paid (dry run).${q.redirect === undefined ? '' : ` It redirects to ${q.redirect}, another origin.`}`;
  const asks = q.amount === undefined ? `${q.url} asks for payment, but offers nothing in Nano` : `${q.url} asks for ${q.amount} XNO (${q.amount_raw} raw) to ${q.pay_to} on ${q.network}`;
  const verdict =
    q.decision === 'allow'
      ? 'The spending policy allows it: fetch without --dry-run pays it.'
      : q.decision === 'ask'
        ? `It would wait for a person's approval (rule: ${q.rule}): ${q.message}`
        : `It would not be paid${q.rule === undefined ? '' : ` (rule: ${q.rule})`}: ${q.message}`;
  return `${asks}.
${verdict}
Nothing was paid (dry run).`;
}

function sessionText(p: SessionPayment): string {
  return `Paid ${p.amount} XNO in session ${p.session}${p.opened ? ' (opened now)' : ''}, call ${p.counter}: ${rawToXno(BigInt(p.spent_raw))} XNO spent, ${rawToXno(BigInt(p.remaining_raw))} XNO left`;
}

function paidText(p: X402Payment): string {
  if (p.repeated) return `Already paid under this --id: ${p.amount} XNO to ${p.pay_to} (block ${p.hash}); nothing was paid this time`;
  const said = p.settlement === null ? 'the server sent no settlement' : p.settlement.success ? `the server's settlement names ${p.settlement.transaction || 'no block'}` : `the server says it failed (${p.settlement.errorReason ?? 'no reason'})`;
  const note = p.settlement_matches ? '' : `\nNote: ${said}; the ledger shows our block confirmed, so it counts as paid once.`;
  return `Paid ${p.amount} XNO to ${p.pay_to} (block ${p.hash}, confirmed)${note}`;
}
