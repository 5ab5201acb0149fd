import type { IncomingHttpHeaders } from 'node:http';
import { NanoPayError } from '../errors.js';
import { normalizeAddress, verifyBlock, xnoToRaw } from '../nano/index.js';
import type { NanoSettler, Verified } from './facilitator.js';
import { X402Refusal, chequeOf, nanoRequirement, type NanoCheque } from './nano-exact.js';
import { timedNow, type PhaseClock } from './phases.js';
import { canonicalPath } from './request-path.js';
import { HEADERS, X402_VERSION, decodeHeader, encodeHeader, parsePaymentPayload, sameRequirement, type PaymentRequired, type PaymentRequirements, type SettleResponse } from './protocol.js';

/**
 * When a paid request is settled: `before` the upstream (or handler) runs, so
 * nothing happens unpaid, or `after` it answered below 400, so a failed
 * request costs nothing and a safe one waits less.
 */
export type SettleOrder = 'before' | 'after';

/** A priced route: `METHOD /path/*=XNO [settle=before|after]` (METHOD may be `*`; `*` at the end of the path matches any rest). */
export interface PricedRoute {
  method: string;
  path: string;
  priceRaw: bigint;
  settle?: SettleOrder;
  /** Metered (in a session): the price is the ceiling, and the upstream's Nanopay-Units answer header times this is charged. */
  unitRaw?: bigint;
}

export function parseRoute(spec: string): PricedRoute {
  const match = /^\s*(\*|[A-Za-z]+)\s+(\/\S*)\s*=\s*(\S+)(?:\s+settle=(\S+))?(?:\s+unit=(\S+))?\s*$/.exec(spec);
  if (match === null) {
    throw new NanoPayError('USAGE', `A route is 'METHOD /path/*=XNO', optionally followed by settle=before or settle=after and unit=XNO (e.g. 'GET /api/*=0.001'), not "${spec}"`);
  }
  const settle = match[4];
  if (settle !== undefined && settle !== 'before' && settle !== 'after') throw new NanoPayError('USAGE', `A route's order is settle=before or settle=after, not "settle=${settle}"`);
  const written = match[2] as string;
  const star = written.endsWith('*');
  let path: string;
  try {
    // Compared with requests' canonical paths, so written the same way.
    path = `${canonicalPath(star ? written.slice(0, -1) : written)}${star ? '*' : ''}`;
  } catch (error) {
    throw new NanoPayError('USAGE', `The route "${spec}": ${(error as Error).message}`);
  }
  return {
    method: (match[1] as string).toUpperCase(),
    path,
    priceRaw: xnoToRaw(match[3] as string),
    ...(settle === undefined ? {} : { settle }),
    ...(match[5] === undefined ? {} : { unitRaw: xnoToRaw(match[5]) }),
  };
}

function routeMatches(route: PricedRoute, method: string, path: string): boolean {
  if (route.method !== '*' && route.method !== method) return false;
  return route.path.endsWith('*') ? path.startsWith(route.path.slice(0, -1)) : path === route.path;
}

/** The first route that matches a request's method and canonical path (see canonicalPath). */
export function routeFor(routes: readonly PricedRoute[], method: string, path: string): PricedRoute | undefined {
  return routes.find((r) => routeMatches(r, method, path));
}

/** Methods that change nothing (RFC 9110 safe): settled after the upstream unless a route says otherwise; any other is settled before. */
const SAFE = new Set(['GET', 'HEAD']);

export function settleOrder(method: string, stated: SettleOrder | undefined): SettleOrder {
  return stated ?? (SAFE.has(method) ? 'after' : 'before');
}

export type Admission = { paid: false; status: 402; headers: Record<string, string>; body: Record<string, never>; required: PaymentRequired } | { paid: true; verified: Verified };

export interface PaywallOptions {
  payTo: string;
  settler: NanoSettler;
  /** The send threshold the ledger takes, stated in each requirement's extra. */
  workThreshold: string;
  maxTimeoutSeconds?: number;
  description?: string;
  /** Extensions stated in every 402 (a paywall that keeps answers states payment-identifier). */
  extensions?: Record<string, unknown>;
}

/**
 * The seller's side of x402 for Nano, for the paywall proxy and the node:http
 * middleware alike (the "authorization" flow): a request without a valid
 * payment gets 402 with PAYMENT-REQUIRED; a valid one is admitted holding its
 * payer's previous, the caller runs or forwards it, and settles only when it
 * succeeded (release otherwise): a buyer is never charged for a failed
 * request, and a block not settled is never published. Holds no key.
 */
export class Paywall {
  private readonly payTo: string;

  constructor(private readonly options: PaywallOptions) {
    this.payTo = normalizeAddress(options.payTo);
  }

  /** The requirement for this price, on the network the settler settles on. */
  private requirement(priceRaw: bigint, network: string): PaymentRequirements {
    return nanoRequirement(this.payTo, priceRaw, network, this.options.workThreshold, this.options.maxTimeoutSeconds ?? 300);
  }

  /** The requirement a request of this price gets in its 402 (as /.well-known/x402 lists it). */
  async requirementFor(priceRaw: bigint): Promise<PaymentRequirements> {
    return this.requirement(priceRaw, await this.options.settler.network());
  }

  /** The 402 for a request: `exact` at its price, and the other offers (a session) beside it. */
  challenge(resourceUrl: string, requirement: PaymentRequirements, error: string, also: readonly PaymentRequirements[] = []): Extract<Admission, { paid: false }> {
    const required: PaymentRequired = {
      x402Version: X402_VERSION,
      error,
      resource: { url: resourceUrl, ...(this.options.description === undefined ? {} : { description: this.options.description }) },
      accepts: [requirement, ...also],
      ...(this.options.extensions === undefined ? {} : { extensions: this.options.extensions }),
    };
    return { paid: false, status: 402, headers: { [HEADERS.required]: encodeHeader(required), 'cache-control': 'no-store' }, body: {}, required };
  }

  /**
   * Checks the request's payment (PAYMENT-SIGNATURE, else X-PAYMENT) for this
   * price. Once the block is well formed and signed, its previous is held
   * before the ledger is read (the scheme's fork protection): a second
   * payment on the same previous, while the first is verified or settled, is
   * refused at once.
   */
  admit(headers: IncomingHttpHeaders, resourceUrl: string, priceRaw: bigint, clock?: PhaseClock, also: readonly PaymentRequirements[] = []): Promise<Admission> {
    const header = headers[HEADERS.signature] ?? headers[HEADERS.legacyPayment];
    return this.admitPayment(header === undefined ? undefined : () => decodeHeader(Array.isArray(header) ? (header[0] as string) : header, 'PAYMENT-SIGNATURE'), resourceUrl, priceRaw, clock, also);
  }

  /**
   * The same for a payment carried otherwise (an MCP call's
   * `_meta["x402/payment"]`): `read` gives the payload object, undefined when
   * there is none.
   */
  async admitPayment(read: (() => unknown) | undefined, resourceUrl: string, priceRaw: bigint, clock?: PhaseClock, also: readonly PaymentRequirements[] = []): Promise<Admission> {
    const requirement = this.requirement(priceRaw, await this.options.settler.network());
    if (read === undefined) return this.challenge(resourceUrl, requirement, 'Payment required', also);
    const { settler } = this.options;
    let held: { cheque: NanoCheque } | undefined;
    try {
      const checked = timedNow(clock, 'signature', () => {
        const payment = parsePaymentPayload(read());
        if (!sameRequirement(requirement, payment.accepted)) return 'No matching payment requirements';
        const cheque = chequeOf(payment.payload);
        return verifyBlock(cheque.block) ? { payment, cheque } : 'invalid_signature';
      });
      if (typeof checked === 'string') return this.challenge(resourceUrl, requirement, checked, also);
      const { payment, cheque } = checked;
      if (!settler.reserve({ cheque })) return this.challenge(resourceUrl, requirement, 'transaction_in_flight', also);
      held = { cheque };
      return { paid: true, verified: await settler.check(payment, requirement, cheque, clock) };
    } catch (error) {
      if (held !== undefined) settler.release(held);
      if (error instanceof X402Refusal) return this.challenge(resourceUrl, requirement, error.reason, also);
      if (error instanceof NanoPayError && (error.code === 'INVALID_REQUEST' || error.code === 'INVALID_JSON')) return this.challenge(resourceUrl, requirement, 'invalid_payload', also);
      throw error;
    }
  }

  /** Settles an admitted payment after the request succeeded; the hold on its previous ends either way. */
  async settle(verified: Verified, clock?: PhaseClock): Promise<SettleResponse> {
    try {
      return await this.options.settler.settleReserved(verified, clock);
    } finally {
      this.options.settler.release(verified);
    }
  }

  /** The request failed: nothing is published, and the payer's block stays theirs. */
  release(verified: Verified): void {
    this.options.settler.release(verified);
  }
}

/** The PAYMENT-RESPONSE header of a settlement (without extension answers, as the reference server sends it). */
export function settlementHeader(settlement: SettleResponse): Record<string, string> {
  return { [HEADERS.response]: encodeHeader(settlement) };
}
