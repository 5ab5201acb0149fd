import { NanoPayError } from '../errors.js';
import { xnoToRaw } from '../nano/index.js';
import type { NanoPay } from '../sdk/nanopay.js';
import { chequeAnswered, signCheque, type PaidFetchOptions } from './client.js';
import { X402_ASSET, X402_SCHEME, parseRequirements, type PaymentRequirements, type SettleResponse, type SupportedKind } from './protocol.js';

/**
 * The Nano exact scheme for the reference x402 packages, shaped as their
 * interfaces (SchemeNetworkServer for @x402/express or x402ResourceServer,
 * SchemeNetworkClient for @x402/fetch's x402Client), without importing them:
 * register each for the network of the backend (nano:mainnet on the live network).
 */

/** A price as the packages pass it: XNO as a string or number ("0.001"), or an asset amount in raw. */
type Price = string | number | { asset: string; amount: string; extra?: Record<string, unknown> };

export const nanoExactServerScheme = {
  scheme: X402_SCHEME,
  defaultAssetTransferMethod: 'default',
  // Verify before the handler, settle after it succeeded: the buyer is never charged for a failed request. As const:
  // @x402/core's SchemeNetworkServer takes only its own flow names, so a TypeScript server could not register it.
  paymentFlows: { default: { default: 'authorization', supported: ['authorization'] } } as const,
  async parsePrice(price: Price): Promise<{ asset: string; amount: string; extra?: Record<string, unknown> }> {
    if (typeof price === 'object') {
      if (price.asset !== X402_ASSET || !/^\d+$/.test(price.amount)) throw new NanoPayError('INVALID_REQUEST', 'A Nano price is {asset: "XNO", amount: "<raw>"} or XNO as a string');
      return price;
    }
    return { asset: X402_ASSET, amount: xnoToRaw(String(price).replace(/^\s*XNO\s*|\s*XNO\s*$/gi, '')).toString() };
  },
  /** The facilitator's work terms (from /supported) go into each requirement's extra. Generic: it returns the caller's type (@x402/core's network is narrower). */
  async enhancePaymentRequirements<R extends PaymentRequirements>(requirements: R, kind: SupportedKind): Promise<R & { extra: Record<string, unknown> }> {
    const { asset: _asset, ...terms } = kind.extra ?? {};
    return { ...requirements, extra: { ...terms, ...(requirements.extra ?? {}) } };
  },
};

/** What @x402/core hands a scheme's onBeforePaymentCreation hook, and x402HTTPClient's onPaymentRequired hook. */
interface PaymentRequiredContext {
  paymentRequired: object;
}

/**
 * The client side: signs the payer's send as a cheque through nanopay's
 * guarded money path, within `maxXno` (from a free payment lane when the
 * wallet has lanes). The answer to the paid request (the client's
 * onPaymentResponse hook) resolves a lane's cheque at once, freeing the lane.
 *
 * Host rules judge the host the request went to, which only the HTTP client
 * knows: registered on it (`new x402HTTPClient(client).onPaymentRequired(scheme.onPaymentRequired)`),
 * the scheme learns it for each payment (never from the seller's resource.url,
 * which the seller writes). Without it the host is unknown, and a policy with
 * host rules refuses the payment (rule "host unknown").
 */
export function nanoExactClientScheme(nanopay: NanoPay, options: Omit<PaidFetchOptions, 'settleWaitMs'>) {
  // Each payment's URL, passed along by object: the PaymentRequired answer, then the requirement chosen from it.
  const requested = new WeakMap<object, string>();
  const forRequirement = new WeakMap<object, string>();
  return {
    scheme: X402_SCHEME,
    /** For x402HTTPClient.onPaymentRequired: the URL the 402 answered. */
    async onPaymentRequired(context: PaymentRequiredContext & { requestUrl: string }): Promise<void> {
      requested.set(context.paymentRequired, context.requestUrl);
    },
    async createPaymentPayload(x402Version: number, requirements: unknown): Promise<{ x402Version: number; payload: Record<string, unknown> }> {
      const url = typeof requirements === 'object' && requirements !== null ? forRequirement.get(requirements) : undefined;
      const block = await signCheque(nanopay.session, parseRequirements(requirements), { ...options, ...(url === undefined ? {} : { chequeFor: url }) });
      return { x402Version, payload: { block } };
    },
    schemeHooks: {
      async onBeforePaymentCreation(context: PaymentRequiredContext & { selectedRequirements: object }): Promise<void> {
        const url = requested.get(context.paymentRequired);
        if (url !== undefined) forRequirement.set(context.selectedRequirements, url);
      },
      async onPaymentResponse(answer: { paymentPayload: { payload: Record<string, unknown> }; settleResponse?: SettleResponse }): Promise<void> {
        chequeAnswered(nanopay.session, answer.paymentPayload.payload.block, answer.settleResponse);
      },
    },
  };
}
