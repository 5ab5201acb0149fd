import { NanoPayError } from '../../errors.js';
import { normalizeAddress } from '../../nano/index.js';
import type { Verdict } from './policy.js';
import type { SpendRequest } from './request.js';

/**
 * Spends and verdicts as they cross the unlocked session's socket: JSON, with
 * amounts as decimal strings. What the session reads is checked field by field
 * (it may come from any program of the user, not only nanopay).
 */

const KINDS = ['send', 'donate', 'topup', 'x402', 'refund', 'sweep'] as const;

export function spendToWire(spend: SpendRequest): Record<string, unknown> {
  const { amountRaw, ...rest } = spend;
  return { ...rest, amount_raw: amountRaw.toString() };
}

function bad(why: string): NanoPayError {
  return new NanoPayError('INVALID_REQUEST', `The spend is malformed: ${why}`);
}

const optionalText = (value: unknown, name: string, max = 256): string | undefined => {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0 || value.length > max) throw bad(`${name} must be a string of 1 to ${max} characters`);
  return value;
};

export function spendFromWire(wire: unknown): SpendRequest {
  if (typeof wire !== 'object' || wire === null || Array.isArray(wire)) throw bad('not an object');
  const w = wire as Record<string, unknown>;
  const known = ['account', 'payer', 'to', 'contact', 'host', 'amount_raw', 'kind', 'requirement', 'approvalId', 'caller'];
  const unknown = Object.keys(w).filter((k) => !known.includes(k));
  if (unknown.length > 0) throw bad(`unknown fields ${unknown.join(', ')}`);
  if (typeof w.amount_raw !== 'string' || !/^[0-9]{1,40}$/.test(w.amount_raw)) throw bad('amount_raw must be a decimal string of raw');
  if (!(KINDS as readonly unknown[]).includes(w.kind)) throw bad(`kind must be one of ${KINDS.join(', ')}`);
  const address = (value: unknown, name: string): string => {
    try {
      return normalizeAddress(String(value));
    } catch {
      throw bad(`${name} is not an address`);
    }
  };
  const payer = w.payer === undefined ? undefined : address(w.payer, 'payer');
  const contact = optionalText(w.contact, 'contact', 64);
  const host = optionalText(w.host, 'host')?.toLowerCase();
  const approvalId = optionalText(w.approvalId, 'approvalId', 100);
  const caller = optionalText(w.caller, 'caller', 32);
  return {
    account: address(w.account, 'account'),
    to: address(w.to, 'to'),
    amountRaw: BigInt(w.amount_raw),
    kind: w.kind as SpendRequest['kind'],
    ...(payer === undefined ? {} : { payer }),
    ...(contact === undefined ? {} : { contact }),
    ...(host === undefined ? {} : { host }),
    ...(w.requirement === undefined ? {} : { requirement: w.requirement }),
    ...(approvalId === undefined ? {} : { approvalId }),
    ...(caller === undefined ? {} : { caller }),
  };
}

export function verdictToWire(verdict: Verdict): Record<string, unknown> {
  const { limitRaw, remainingRaw, ...rest } = verdict;
  return { ...rest, ...(limitRaw === undefined ? {} : { limit_raw: limitRaw.toString() }), ...(remainingRaw === undefined ? {} : { remaining_raw: remainingRaw.toString() }) };
}

export function verdictFromWire(wire: Record<string, unknown>): Verdict {
  const { outcome, rule, message, retryAtMs, limit_raw: limit, remaining_raw: remaining } = wire;
  if (outcome !== 'allow' && outcome !== 'deny' && outcome !== 'ask') throw new NanoPayError('INTERNAL_ERROR', 'The unlocked session gave a verdict with no outcome');
  const raw = (v: unknown): bigint | undefined => (typeof v === 'string' && /^[0-9]+$/.test(v) ? BigInt(v) : undefined);
  const limitRaw = raw(limit);
  const remainingRaw = raw(remaining);
  return {
    outcome,
    ...(typeof rule === 'string' ? { rule } : {}),
    ...(typeof message === 'string' ? { message } : {}),
    ...(limitRaw === undefined ? {} : { limitRaw }),
    ...(remainingRaw === undefined ? {} : { remainingRaw }),
    ...(typeof retryAtMs === 'number' ? { retryAtMs } : {}),
  };
}
