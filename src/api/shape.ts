import { NanoPayError } from '../errors.js';
import type { LedgerBlock, StateBlock } from '../nano/block.js';
import type { LegacyBlock } from '../nano/legacy-block.js';

/** Field readers for upstream answers: a wrong shape is INVALID_DATA, never a crash later. */
export type Json = Record<string, unknown>;

function bad(what: string, key: string, expected: string): never {
  throw new NanoPayError('INVALID_DATA', `The service answered ${what} with an unexpected shape: "${key}" should be ${expected}`);
}

export function asObject(value: unknown, what: string): Json {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) bad(what, '(body)', 'an object');
  return value as Json;
}

export function str(obj: Json, key: string, what: string): string {
  const v = obj[key];
  if (typeof v === 'string' && v !== '') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return bad(what, key, 'a non-empty string');
}

export function optStr(obj: Json, key: string, what: string): string | undefined {
  return obj[key] === undefined || obj[key] === null ? undefined : str(obj, key, what);
}

/** Booleans may arrive as "true"/"false" strings. */
export function bool(obj: Json, key: string, what: string): boolean {
  const v = obj[key];
  if (typeof v === 'boolean') return v;
  if (v === 'true' || v === 'false') return v === 'true';
  return bad(what, key, 'a boolean');
}

/** A decimal integer (raw amounts, counts) as bigint; numbers are accepted only when exact. */
export function bigIntField(obj: Json, key: string, what: string): bigint {
  const v = obj[key];
  if (typeof v === 'string' && /^\d+$/.test(v)) return BigInt(v);
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return BigInt(v);
  return bad(what, key, 'a whole number');
}

export function hexField(obj: Json, key: string, bytes: number, what: string): string {
  const v = str(obj, key, what);
  if (v.length !== bytes * 2 || !/^[0-9a-fA-F]+$/.test(v)) bad(what, key, `${bytes * 2} hex characters`);
  return v;
}

/** A block object, given as one or as a JSON string (block_info without json_block). */
function blockObject(value: unknown, what: string): Json {
  if (typeof value !== 'string') return asObject(value, what);
  try {
    return asObject(JSON.parse(value) as unknown, what);
  } catch {
    return bad(what, 'contents', 'a block');
  }
}

/** The signature and work a block carries, when it does. */
function sealOf(b: Json, what: string): { signature?: string; work?: string } {
  return {
    ...(b.signature === undefined ? {} : { signature: hexField(b, 'signature', 64, what) }),
    ...(b.work === undefined ? {} : { work: hexField(b, 'work', 8, what) }),
  };
}

/** A legacy block (send, receive, open, change) in the node's JSON names; a send's hex balance becomes decimal raw. */
function legacyBlock(b: Json, what: string): LegacyBlock {
  switch (b.type) {
    case 'send':
      return { type: 'send', previous: hexField(b, 'previous', 32, what), destination: str(b, 'destination', what), balance: BigInt(`0x${hexField(b, 'balance', 16, what)}`).toString(), ...sealOf(b, what) };
    case 'receive':
      return { type: 'receive', previous: hexField(b, 'previous', 32, what), source: hexField(b, 'source', 32, what), ...sealOf(b, what) };
    case 'open':
      return { type: 'open', source: hexField(b, 'source', 32, what), representative: str(b, 'representative', what), account: str(b, 'account', what), ...sealOf(b, what) };
    case 'change':
      return { type: 'change', previous: hexField(b, 'previous', 32, what), representative: str(b, 'representative', what), ...sealOf(b, what) };
    default:
      return bad(what, 'type', 'state, send, receive, open or change');
  }
}

/** Any block a node serves (state or legacy), checked field by field by its type's rules. */
export function ledgerBlock(value: unknown, what: string): LedgerBlock {
  const b = blockObject(value, what);
  return b.type === 'state' ? stateBlock(b, what) : legacyBlock(b, what);
}

/** A state block in the node's JSON names (as an object or a JSON string), checked field by field. */
export function stateBlock(value: unknown, what: string): StateBlock {
  const b = blockObject(value, what);
  return {
    type: 'state',
    account: str(b, 'account', what),
    previous: hexField(b, 'previous', 32, what),
    representative: str(b, 'representative', what),
    balance: bigIntField(b, 'balance', what).toString(),
    link: hexField(b, 'link', 32, what),
    ...sealOf(b, what),
  };
}
