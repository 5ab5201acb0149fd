import { NanoPayError } from '../errors.js';
import { normalizeAddress } from './address.js';
import { parseRaw } from './units.js';

export interface NanoUri {
  scheme: string;
  address: string;
  amountRaw?: bigint;
  label?: string;
  message?: string;
}

const SCHEMES = ['nano', 'nanorep', 'xrb'];

/** `nano:<address>?amount=<raw>&label=…&message=…`; amount is always raw, per the URI standard. */
export function buildNanoUri(input: { address: string; amountRaw?: bigint | string; label?: string; message?: string }): string {
  const address = normalizeAddress(input.address);
  const params: string[] = [];
  if (input.amountRaw !== undefined) {
    params.push(`amount=${parseRaw(String(input.amountRaw))}`);
  }
  if (input.label !== undefined) params.push(`label=${encodeURIComponent(input.label)}`);
  if (input.message !== undefined) params.push(`message=${encodeURIComponent(input.message)}`);
  return `nano:${address}${params.length > 0 ? `?${params.join('&')}` : ''}`;
}

function invalid(why: string): never {
  throw new NanoPayError('INVALID_URI', `Invalid Nano URI: ${why}`, {
    hint: 'Expected nano:<address>?amount=<raw>',
  });
}

function decode(value: string, name: string): string {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    return invalid(`${name} is not valid percent-encoding`);
  }
}

/** Parses nano:, nano:// and nanorep: URIs. Unknown parameters are ignored, as wallets do. */
export function parseNanoUri(uri: string): NanoUri {
  if (typeof uri !== 'string') invalid('not a string');
  const match = /^([a-z]+):(?:\/\/)?([^?#]*)(?:\?([^#]*))?$/i.exec(uri.trim());
  if (!match) invalid('expected <scheme>:<address>[?params]');
  const scheme = (match[1] as string).toLowerCase();
  if (!SCHEMES.includes(scheme)) invalid(`unsupported scheme "${scheme}"`);
  const result: NanoUri = { scheme, address: normalizeAddress(match[2] as string) };
  const seen = new Set<string>();
  for (const pair of (match[3] ?? '').split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const key = (eq === -1 ? pair : pair.slice(0, eq)).toLowerCase();
    const value = eq === -1 ? '' : pair.slice(eq + 1);
    if (seen.has(key)) invalid(`parameter "${key}" appears twice`);
    seen.add(key);
    if (key === 'amount') result.amountRaw = parseRaw(decode(value, 'amount'));
    else if (key === 'label') result.label = decode(value, 'label');
    else if (key === 'message') result.message = decode(value, 'message');
  }
  return result;
}
