import { createHmac, timingSafeEqual } from 'node:crypto';
import { NanoPayError } from '../errors.js';

/** The header a webhook's signature travels in: `t=<unix seconds>,v1=<hex HMAC-SHA256>` (several v1 while a secret rotates). */
export const SIGNATURE_HEADER = 'Nanopay-Signature';

/** Replays older (or newer) than this are refused, unless the receiver says otherwise. */
const DEFAULT_TOLERANCE_SECONDS = 300;

function hmac(secret: string, timestamp: number, body: string): Buffer {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`).digest();
}

/** The header value for `body` sent at `timestamp` (seconds), one v1 per secret (the new one first while rotating). */
export function signWebhook(secrets: readonly string[], body: string, timestamp = Math.floor(Date.now() / 1000)): string {
  return [`t=${timestamp}`, ...secrets.map((s) => `v1=${hmac(s, timestamp, body).toString('hex')}`)].join(',');
}

export interface VerifyWebhookOptions {
  /** How far the signed time may be from now, in seconds. Default 300. */
  toleranceSeconds?: number;
  /** Now, in seconds since the epoch (tests). */
  now?: number;
}

/**
 * Checks a webhook as its receiver must before trusting it: `header` is the
 * Nanopay-Signature header, `body` the raw body exactly as received. Throws
 * WEBHOOK_SIGNATURE_INVALID unless one v1 is the HMAC-SHA256 of
 * `timestamp.body` under `secret` (compared in constant time) and the
 * timestamp is within the tolerance (a replayed old event is refused).
 * Returns the parsed event.
 */
export function verifyWebhook(secret: string, header: string | undefined, body: string | Buffer, options: VerifyWebhookOptions = {}): unknown {
  const refuse = (why: string): never => {
    throw new NanoPayError('WEBHOOK_SIGNATURE_INVALID', `Webhook refused: ${why}`);
  };
  if (header === undefined || header === '') return refuse(`no ${SIGNATURE_HEADER} header`);
  const text = typeof body === 'string' ? body : body.toString('utf8');
  let timestamp: number | undefined;
  const signatures: Buffer[] = [];
  for (const part of header.split(',')) {
    const [key, value = ''] = part.trim().split('=', 2) as [string, string?];
    if (key === 't' && /^\d{1,12}$/.test(value)) timestamp = Number(value);
    if (key === 'v1' && /^[0-9a-f]{64}$/i.test(value)) signatures.push(Buffer.from(value, 'hex'));
  }
  if (timestamp === undefined) return refuse('the header has no timestamp');
  if (signatures.length === 0) return refuse('the header has no v1 signature');
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const now = options.now ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - timestamp) > tolerance) return refuse(`its timestamp is ${now - timestamp} s from now, beyond the tolerance of ${tolerance} s`);
  const expected = hmac(secret, timestamp, text);
  // Every candidate is compared, so the time taken does not say which one matched.
  const matched = signatures.map((s) => timingSafeEqual(s, expected)).includes(true);
  if (!matched) return refuse('no signature matches the secret');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return refuse('the body is not JSON');
  }
}
