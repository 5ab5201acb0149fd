import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { NanoPayError } from '../../errors.js';
import { hashBlock, linkAsAccount, rawToXno } from '../../nano/index.js';
import { rememberConfirmed } from '../../ops/ledger/confirmed-blocks.js';
import { seenConfirmed } from '../../ops/ledger/confirmed-wait.js';
import { mcpIdentity } from '../../ops/spending/hosts.js';
import type { Session } from '../../ops/session.js';
import { chequeAnswered, choose, maximum, payerNetwork, signCheque, type PaidFetchOptions, type X402Payment } from '../client.js';
import { isObject, parsePaymentRequired, parseSettleResponse, type PaymentRequired } from '../protocol.js';
import { MCP_PAYMENT, MCP_PAYMENT_RESPONSE } from './tool-paywall.js';
import { payInSession, type VoucherCarrier } from '../sessions/buyer.js';
import type { SessionPayment } from '../sessions/buyer-book.js';
import { toolSession } from '../sessions/buyer-deposits.js';
import { toolDigest } from '../sessions/wire.js';

/** A tool call nanopay paid for: the block, who was paid how much, and the server's settlement (as fetch reports an x402 payment). */
export type ToolPayment = Omit<X402Payment, 'settlement_matches' | 'repeated'>;

export interface PaidToolCall {
  result: CallToolResult;
  payment?: ToolPayment;
  /** The call was paid by voucher in a Nano session. */
  session?: SessionPayment;
}

export type ToolPayOptions = Pick<PaidFetchOptions, 'maxXno' | 'approval' | 'wallet' | 'index' | 'signal' | 'confirm'> & {
  /** Pay in a Nano session where the tool offers one (one deposit, then a voucher a call); its deposit (XNO), default the seller's least. */
  session?: { depositXno?: string };
};

/** The PaymentRequired a tool result carries (structuredContent, else the first text), when it is a payment-required result. */
function paymentRequiredOf(result: CallToolResult): PaymentRequired | undefined {
  if (result.isError !== true) return undefined;
  const first = result.content[0];
  const candidates = [result.structuredContent, first?.type === 'text' ? first.text : undefined];
  for (const candidate of candidates) {
    try {
      const value = typeof candidate === 'string' ? (JSON.parse(candidate) as unknown) : candidate;
      if (isObject(value) && Array.isArray(value.accepts)) return parsePaymentRequired(value);
    } catch {
      // Not a payment-required result: the tool's own error.
    }
  }
  return undefined;
}

/**
 * Calls a tool of an MCP server and pays it if it asks (x402 over MCP, Nano
 * `exact`): within the maximum, through the one guarded money path, judged by
 * the spending policy as a payment to `mcp:SERVER/TOOL` (rules on the server,
 * or on one tool). The paid call is counted paid only once our own ledger
 * shows the block confirmed; otherwise X402_UNSETTLED names the outstanding
 * block, which the account's next block settles or cancels.
 */
export async function callToolPaying(session: Session, client: Client, server: string, name: string, args: Record<string, unknown>, options: ToolPayOptions = {}): Promise<PaidToolCall> {
  const identity = mcpIdentity(`mcp:${server}/${name}`);
  if (identity === undefined) throw new NanoPayError('USAGE', `"${server}" is not an MCP server name (letters, digits, . _ -), or "${name}" not a tool name`);
  const first = (await client.callTool({ name, arguments: args }, undefined, options.signal === undefined ? undefined : { signal: options.signal })) as CallToolResult;
  const required = paymentRequiredOf(first);
  if (required === undefined) return { result: first };
  if (options.session !== undefined) {
    const inSession = await payToolInSession(session, client, identity, name, args, required, options);
    if (inSession !== undefined) return inSession;
  }
  const chosen = choose(required, maximum(session, options.maxXno), await payerNetwork(session, await session.context(options.signal)));
  const block = await signCheque(session, chosen, { ...options, chequeFor: identity });
  const hash = hashBlock(block);
  const payload = { x402Version: 2, resource: required.resource, accepted: chosen, payload: { block } };
  const paid = (await client.callTool({ name, arguments: args, _meta: { [MCP_PAYMENT]: payload } }, undefined, options.signal === undefined ? undefined : { signal: options.signal })) as CallToolResult;
  const answered = isObject(paid._meta) ? paid._meta[MCP_PAYMENT_RESPONSE] : undefined;
  const settlement = isObject(answered) ? parseSettleResponse(answered) : null;
  const claimed = settlement?.success === true && settlement.transaction.toUpperCase() === hash;
  const api = await session.api();
  chequeAnswered(session, block, settlement ?? undefined);
  const confirmed = await seenConfirmed(api, hash, claimed ? 15_000 : 0, options.signal);
  // The tool failed and the seller settled nothing: its own error goes back, and the cheque is cancelled by the account's next block.
  if (!confirmed && paid.isError === true && settlement === null) return { result: paid };
  if (!confirmed) {
    throw new NanoPayError('X402_UNSETTLED', `The tool ${name} of ${server} ${claimed ? `said it settled ${hash}` : `answered without settling ${hash}`}, but our ledger does not show it confirmed; nothing more was paid, and the block is outstanding`, {
      hint: 'The account\'s next send or receive settles it (found paid) or cancels it.',
      details: { block: hash },
    });
  }
  rememberConfirmed(api, hash, block);
  const amount = BigInt(chosen.amount);
  return { result: paid, payment: { hash, payer: block.account, pay_to: linkAsAccount(block.link), amount: rawToXno(amount), amount_raw: amount.toString(), settlement } };
}

/** The tool call paid by voucher in a session, when the tool offers one; the call's own answer, or a refusal as an error. */
async function payToolInSession(session: Session, client: Client, identity: string, name: string, args: Record<string, unknown>, required: PaymentRequired, options: ToolPayOptions): Promise<PaidToolCall | undefined> {
  const { session: sessionOptions, ...rest } = options;
  const fetchOptions = { ...rest, ...(sessionOptions?.depositXno === undefined ? {} : { depositXno: sessionOptions.depositXno }) };
  const taken = await toolSession(session, required.accepts, identity, fetchOptions);
  if (taken === undefined) return undefined;
  const carrier: VoucherCarrier<CallToolResult> = {
    request: toolDigest(name, args),
    send: async (payment) => {
      const result = (await client.callTool({ name, arguments: args, _meta: { [MCP_PAYMENT]: payment } }, undefined, options.signal === undefined ? undefined : { signal: options.signal })) as CallToolResult;
      const refused = paymentRequiredOf(result);
      if (refused !== undefined) return { answer: result, refusal: refused.error ?? 'refused', settlement: null, ok: false };
      const answered = isObject(result._meta) ? result._meta[MCP_PAYMENT_RESPONSE] : undefined;
      return { answer: result, settlement: isObject(answered) ? parseSettleResponse(answered) : null, ok: result.isError !== true };
    },
  };
  const made = await payInSession(session, taken.s, carrier, BigInt(taken.offer.amount), { ...fetchOptions, spendUrl: identity, transport: fetch });
  if (made.refusal !== undefined || made.answer === undefined) {
    throw new NanoPayError('X402_UNPAYABLE', `The tool ${name} refused a voucher of session ${taken.s.id} (${made.refusal ?? 'no answer'}); nothing was charged for this call`);
  }
  return { result: made.answer, ...(made.paid === undefined ? {} : { session: { ...made.paid, opened: taken.opened } }) };
}
