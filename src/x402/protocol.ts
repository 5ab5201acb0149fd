import { NanoPayError } from '../errors.js';

/**
 * x402 v2 as the reference packages (@x402/core 2.27) implement it: the
 * shapes, the header names, and the header codec (standard base64 of UTF-8
 * JSON). What we emit is exactly the reference shape; what we read is lenient
 * where peers differ (see parse*), strict where money is decided.
 */

export const X402_VERSION = 2;
export const X402_ASSET = 'XNO';
export const X402_SCHEME = 'exact';

/** Header names, lower case as node:http gives them. */
export const HEADERS = {
  required: 'payment-required',
  signature: 'payment-signature',
  response: 'payment-response',
  /** v1 names, read (and sent alongside) for peers that still use them. */
  legacyPayment: 'x-payment',
  legacyResponse: 'x-payment-response',
} as const;

export interface ResourceInfo {
  url: string;
  description?: string;
  mimeType?: string;
}

export interface PaymentRequirements {
  scheme: string;
  network: string;
  /** Atomic units (raw for Nano), a decimal integer string. */
  amount: string;
  asset: string;
  payTo: string;
  maxTimeoutSeconds: number;
  extra?: Record<string, unknown> | null;
}

export interface PaymentRequired {
  x402Version: 2;
  error?: string;
  resource: ResourceInfo;
  accepts: PaymentRequirements[];
  extensions?: Record<string, unknown>;
}

export interface PaymentPayload {
  x402Version: 2;
  resource?: ResourceInfo;
  accepted: PaymentRequirements;
  payload: Record<string, unknown>;
  extensions?: Record<string, unknown>;
}

export interface VerifyResponse {
  isValid: boolean;
  invalidReason?: string;
  invalidMessage?: string;
  payer?: string;
}

export interface SettleResponse {
  success: boolean;
  errorReason?: string;
  errorMessage?: string;
  payer?: string;
  /** The block hash; "" on failure. */
  transaction: string;
  network: string;
  amount?: string;
  /** A call paid in a `nano-session`: the session's standing after it (docs/x402-sessions.md). */
  session?: SessionStanding;
}

export interface SessionStanding {
  id: string;
  counter: number;
  spent_raw: string;
  remaining_raw: string;
}

export interface SupportedKind {
  x402Version: number;
  scheme: string;
  network: string;
  extra?: Record<string, unknown>;
}

export interface SupportedResponse {
  kinds: SupportedKind[];
  extensions: string[];
  signers: Record<string, string[]>;
}

const STANDARD_BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** A header value: standard base64 of the UTF-8 JSON. */
export function encodeHeader(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64');
}

/** A header value back to its JSON object; base64url, whitespace or anything but an object is refused. */
export function decodeHeader(value: string, what: string): Record<string, unknown> {
  if (value === '' || !STANDARD_BASE64.test(value) || value.length % 4 !== 0) {
    throw new NanoPayError('INVALID_REQUEST', `The ${what} header is not standard base64`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(value, 'base64').toString('utf8'));
  } catch {
    throw new NanoPayError('INVALID_JSON', `The ${what} header does not hold JSON`);
  }
  if (!isObject(parsed)) throw new NanoPayError('INVALID_REQUEST', `The ${what} header must hold a JSON object`);
  return parsed;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalid(message: string): NanoPayError {
  return new NanoPayError('INVALID_REQUEST', message);
}

function text(o: Record<string, unknown>, key: string, what: string): string {
  const value = o[key];
  if (typeof value !== 'string' || value === '') throw invalid(`${what}: "${key}" must be a non-empty string`);
  return value;
}

function version2(o: Record<string, unknown>, what: string): 2 {
  if (o.x402Version !== X402_VERSION) throw invalid(`${what}: only x402 version 2 is supported (got ${JSON.stringify(o.x402Version ?? null)})`);
  return X402_VERSION;
}

/** A requirement as sent: the reference fields, nothing added (the client echoes it verbatim). */
export function parseRequirements(value: unknown, what = 'payment requirements'): PaymentRequirements {
  if (!isObject(value)) throw invalid(`${what} must be an object`);
  const seconds = value.maxTimeoutSeconds;
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds <= 0) throw invalid(`${what}: "maxTimeoutSeconds" must be a number above 0`);
  const extra = value.extra;
  if (extra !== undefined && extra !== null && !isObject(extra)) throw invalid(`${what}: "extra" must be an object`);
  const amount = text(value, 'amount', what);
  if (!/^\d+$/.test(amount)) throw invalid(`${what}: "amount" must be a decimal integer string (atomic units)`);
  const network = text(value, 'network', what);
  if (!network.includes(':')) throw invalid(`${what}: "network" must be a CAIP-2 id such as nano:mainnet`);
  return {
    scheme: text(value, 'scheme', what),
    network,
    amount,
    asset: text(value, 'asset', what),
    payTo: text(value, 'payTo', what),
    maxTimeoutSeconds: seconds,
    ...(extra === undefined ? {} : { extra: extra as Record<string, unknown> | null }),
  };
}

function resourceOf(value: unknown, what: string): ResourceInfo {
  if (!isObject(value)) throw invalid(`${what}: "resource" must be an object`);
  return value as unknown as ResourceInfo & Record<string, unknown>;
}

/** The 402's PAYMENT-REQUIRED; a v1 body (`maxAmountRequired`, no header) is not read. */
export function parsePaymentRequired(o: Record<string, unknown>): PaymentRequired {
  const what = 'PAYMENT-REQUIRED';
  version2(o, what);
  if (!Array.isArray(o.accepts) || o.accepts.length === 0) throw invalid(`${what}: "accepts" must list at least one requirement`);
  return {
    x402Version: X402_VERSION,
    ...(typeof o.error === 'string' ? { error: o.error } : {}),
    resource: resourceOf(o.resource, what),
    // Each kept as sent, so the one chosen is echoed verbatim.
    accepts: o.accepts.map((a: unknown) => {
      parseRequirements(a, `${what} accepts[]`);
      return a as PaymentRequirements;
    }),
    ...(isObject(o.extensions) ? { extensions: o.extensions } : {}),
  };
}

/** A payment payload; extra top-level keys some peers add (`scheme`, `network`) are ignored, v1 is refused. */
export function parsePaymentPayload(value: unknown): PaymentPayload {
  const what = 'payment payload';
  if (!isObject(value)) throw invalid(`The ${what} must be an object`);
  version2(value, what);
  if (!isObject(value.payload)) throw invalid(`${what}: "payload" must be an object`);
  return {
    x402Version: X402_VERSION,
    ...(value.resource === undefined ? {} : { resource: resourceOf(value.resource, what) }),
    accepted: parseRequirements(value.accepted, `${what} "accepted"`),
    payload: value.payload,
    ...(isObject(value.extensions) ? { extensions: value.extensions } : {}),
  };
}

/** A settlement answer; `hash` (Feeless402) is read where `transaction` is missing. */
export function parseSettleResponse(o: Record<string, unknown>): SettleResponse {
  const transaction = typeof o.transaction === 'string' && o.transaction !== '' ? o.transaction : typeof o.hash === 'string' ? o.hash : '';
  return {
    success: o.success === true,
    ...(typeof o.errorReason === 'string' ? { errorReason: o.errorReason } : {}),
    ...(typeof o.errorMessage === 'string' ? { errorMessage: o.errorMessage } : {}),
    ...(typeof o.payer === 'string' ? { payer: o.payer } : {}),
    transaction,
    network: typeof o.network === 'string' ? o.network : '',
    ...(typeof o.amount === 'string' ? { amount: o.amount } : {}),
    ...(isObject(o.session) ? { session: o.session as unknown as SessionStanding } : {}),
  };
}

/** The fields the reference server compares between a requirement and the `accepted` echo. */
export function sameRequirement(a: PaymentRequirements, b: PaymentRequirements): boolean {
  return (
    a.scheme === b.scheme &&
    a.network === b.network &&
    a.asset === b.asset &&
    a.amount === b.amount &&
    a.payTo === b.payTo &&
    a.maxTimeoutSeconds === b.maxTimeoutSeconds &&
    extraIncluded(a.extra ?? {}, b.extra ?? {})
  );
}

/** Every key of `offered` is in `echoed` with the same (JSON) value. */
function extraIncluded(offered: Record<string, unknown>, echoed: Record<string, unknown>): boolean {
  return Object.entries(offered).every(([k, v]) => JSON.stringify(echoed[k]) === JSON.stringify(v));
}
