import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { X402Refusal } from '../nano-exact.js';
import type { Paywall } from '../paywall.js';
import { isObject, type PaymentRequired, type PaymentRequirements } from '../protocol.js';
import type { SessionSeller } from '../sessions/seller.js';
import { SESSION_SCHEME, toolDigest } from '../sessions/wire.js';

/** Where x402's MCP transport carries a payment (in a call's params._meta) and its settlement (in the result's _meta). */
export const MCP_PAYMENT = 'x402/payment';
export const MCP_PAYMENT_RESPONSE = 'x402/payment-response';

/** A tool's resource URL, as the reference package names it. */
const toolResource = (name: string): string => `mcp://tool/${name}`;

/** The payment-required tool result: an error result with the PaymentRequired in structuredContent and as JSON text. */
function paymentRequired(required: PaymentRequired): CallToolResult {
  return { isError: true, structuredContent: required as unknown as Record<string, unknown>, content: [{ type: 'text', text: JSON.stringify(required) }] };
}

/**
 * The seller's side of x402 over MCP for Nano `exact` (specs/transports-v2/
 * mcp.md): a priced tool called without a payment gets the payment-required
 * result; with one, the payment is verified (its payer's previous held), the
 * tool runs once, and the block is settled only if the tool succeeded: the
 * result then carries the settlement in `_meta`. A failed tool costs nothing;
 * a failed settlement returns no tool output. Holds no key.
 */
export class ToolPaywall {
  constructor(
    private readonly paywall: Paywall,
    private readonly prices: ReadonlyMap<string, bigint>,
    /** The price of a tool no entry names (0: free). */
    private readonly otherRaw: bigint,
    private readonly log: (line: string) => void = () => undefined,
    /** Sessions offered beside exact, opened at `url` (an HTTP endpoint of this process). */
    private readonly sessions?: { seller: SessionSeller; url: string },
  ) {}

  priceOf(name: string): bigint {
    return this.prices.get(name) ?? this.otherRaw;
  }

  async call(name: string, args: Record<string, unknown>, meta: Record<string, unknown> | undefined, run: () => Promise<CallToolResult>): Promise<CallToolResult> {
    const price = this.priceOf(name);
    if (price === 0n) return run();
    const resource = toolResource(name);
    const payment = meta?.[MCP_PAYMENT];
    const offers: PaymentRequirements[] = this.sessions === undefined ? [] : [await this.sessions.seller.requirement(price, this.sessions.url)];
    if (this.sessions !== undefined && isObject(payment) && isObject(payment.accepted) && payment.accepted.scheme === SESSION_SCHEME && isObject(payment.payload)) {
      return this.inSession(this.sessions.seller, name, args, payment.payload, price, offers, run);
    }
    const admission = await this.paywall.admitPayment(payment === undefined ? undefined : () => payment, resource, price, undefined, offers);
    if (!admission.paid) return paymentRequired(admission.required);
    let result: CallToolResult;
    try {
      result = await run();
    } catch (error) {
      this.paywall.release(admission.verified);
      throw error;
    }
    if (result.isError === true) {
      this.paywall.release(admission.verified);
      return result;
    }
    const settlement = await this.paywall.settle(admission.verified);
    if (!settlement.success) {
      this.log(`tool ${name}: settlement of ${admission.verified.cheque.hash} failed (${settlement.errorReason ?? 'unknown'}); no output returned`);
      const required = this.paywall.challenge(resource, await this.paywall.requirementFor(price), `Payment settlement failed: ${settlement.errorReason ?? 'unknown'}`).required;
      return { ...paymentRequired(required), _meta: { [MCP_PAYMENT_RESPONSE]: settlement } };
    }
    this.log(`tool ${name}: settled ${settlement.transaction} (${settlement.amount ?? '?'} raw from ${settlement.payer ?? '?'})`);
    return { ...result, _meta: { ...(result._meta ?? {}), [MCP_PAYMENT_RESPONSE]: settlement } };
  }

  /** A call paid by voucher: checked for this tool and these arguments, run once, charged only if the tool succeeded. */
  private async inSession(seller: SessionSeller, name: string, args: Record<string, unknown>, payload: Record<string, unknown>, price: bigint, offers: PaymentRequirements[], run: () => Promise<CallToolResult>): Promise<CallToolResult> {
    let admitted;
    try {
      admitted = seller.admit(payload, toolDigest(name, args), price);
    } catch (error) {
      if (!(error instanceof X402Refusal)) throw error;
      return paymentRequired(this.paywall.challenge(toolResource(name), await this.paywall.requirementFor(price), error.reason, offers).required);
    }
    let result: CallToolResult;
    try {
      result = await run();
    } catch (error) {
      await seller.release(admitted);
      throw error;
    }
    if (result.isError === true) {
      await seller.release(admitted);
      return result;
    }
    const settlement = await seller.charge(admitted, price);
    return { ...result, _meta: { ...(result._meta ?? {}), [MCP_PAYMENT_RESPONSE]: settlement } };
  }
}
