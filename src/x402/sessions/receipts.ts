import { NanoPayError } from '../../errors.js';
import { isValidAddress } from '../../nano/index.js';
import { isObject } from '../protocol.js';
import type { SessionReceipt } from './seller.js';
import { SESSION_SCHEME, openMessage, receiptMessage, verifyAccountSignature, verifySessionSignature, voucherMessage, type Voucher } from './wire.js';

/** What a receipt's check found: each signature and sum, so a refusal says which. */
export interface ReceiptCheck {
  valid: boolean;
  problems: string[];
  scheme: 'exact' | typeof SESSION_SCHEME;
  /** The session id, or the settled block's hash. */
  session: string;
  payer: string;
  pay_to: string;
  deposit_raw: string;
  spent_raw: string;
  refund_raw: string;
}

const RAW = /^\d{1,39}$/;

/**
 * Checks a session receipt offline, as any third party can: the seller's
 * signature (pay_to's key) over it, the payer's signature binding the session
 * key to the opening deposit, the final voucher's signature by that session
 * key, and the sums: deposits add up, what was spent is within the final
 * voucher, and the refund is the rest.
 */
export function checkReceipt(value: unknown): ReceiptCheck {
  if (isObject(value) && value.scheme === 'exact') return checkExactReceipt(value);
  if (!isObject(value) || value.scheme !== SESSION_SCHEME) throw new NanoPayError('INVALID_REQUEST', `A receipt is a JSON object with "scheme": "${SESSION_SCHEME}" or "exact"`);
  const r = value as unknown as SessionReceipt;
  const problems: string[] = [];
  const fields = ['network', 'session', 'payer', 'pay_to', 'session_key', 'open_signature', 'deposit_raw', 'spent_raw', 'refund_raw', 'seller_signature'] as const;
  const missing = fields.filter((f) => typeof r[f] !== 'string');
  if (missing.length > 0 || !Array.isArray(r.deposits)) throw new NanoPayError('INVALID_REQUEST', `The receipt lacks ${[...missing, ...(Array.isArray(r.deposits) ? [] : ['deposits'])].join(', ')}`);
  if (!isValidAddress(r.payer) || !isValidAddress(r.pay_to)) throw new NanoPayError('INVALID_REQUEST', 'The receipt names an account that is not a Nano address');
  if (![r.deposit_raw, r.spent_raw, r.refund_raw].every((a) => RAW.test(a))) throw new NanoPayError('INVALID_REQUEST', 'The receipt\'s amounts must be decimal raw');
  if (!verifyAccountSignature(r.pay_to, receiptMessage(r), r.seller_signature)) problems.push('seller_signature is not the signature of pay_to over the receipt');
  if (!verifyAccountSignature(r.payer, openMessage(r.network, r.pay_to, r.session, r.session_key), r.open_signature)) problems.push('open_signature is not the payer\'s signature binding session_key to the session');
  const deposits = r.deposits.reduce((sum, d) => sum + (RAW.test(String(d?.amount_raw)) ? BigInt(d.amount_raw) : 0n), 0n);
  if (deposits.toString() !== r.deposit_raw) problems.push(`the deposits add up to ${deposits} raw, not deposit_raw ${r.deposit_raw}`);
  if (r.deposits[0]?.hash !== r.session) problems.push('the first deposit is not the session\'s opening block');
  const spent = BigInt(r.spent_raw);
  const voucher = r.final_voucher as Voucher | null;
  if (voucher === null) {
    if (spent !== 0n) problems.push(`${spent} raw spent without a voucher`);
  } else {
    let signed = false;
    try {
      signed = voucher.session === r.session && verifySessionSignature(r.session_key, voucherMessage(voucher), voucher.signature);
    } catch {
      signed = false;
    }
    if (!signed) problems.push('final_voucher is not signed by session_key for this session');
    else if (spent > BigInt(voucher.spent)) problems.push(`spent_raw ${spent} is above what the final voucher allows (${voucher.spent})`);
  }
  if (BigInt(r.deposit_raw) - spent !== BigInt(r.refund_raw)) problems.push(`refund_raw ${r.refund_raw} is not deposit_raw − spent_raw`);
  return { valid: problems.length === 0, problems, scheme: SESSION_SCHEME, session: r.session, payer: r.payer, pay_to: r.pay_to, deposit_raw: r.deposit_raw, spent_raw: r.spent_raw, refund_raw: r.refund_raw };
}

/** A seller's receipt of one `exact` settlement: the block it settled, who paid whom how much, signed by pay_to. */
export interface ExactReceipt {
  scheme: 'exact';
  network: string;
  transaction: string;
  payer: string;
  pay_to: string;
  amount_raw: string;
  settled_at: string;
  seller_signature: string;
}

function checkExactReceipt(value: Record<string, unknown>): ReceiptCheck {
  const r = value as unknown as ExactReceipt;
  const missing = (['network', 'transaction', 'payer', 'pay_to', 'amount_raw', 'settled_at', 'seller_signature'] as const).filter((f) => typeof r[f] !== 'string');
  if (missing.length > 0) throw new NanoPayError('INVALID_REQUEST', `The receipt lacks ${missing.join(', ')}`);
  if (!isValidAddress(r.payer) || !isValidAddress(r.pay_to) || !RAW.test(r.amount_raw)) throw new NanoPayError('INVALID_REQUEST', 'The receipt names an account that is not a Nano address, or an amount that is not raw');
  const problems = verifyAccountSignature(r.pay_to, receiptMessage(r), r.seller_signature) ? [] : ['seller_signature is not the signature of pay_to over the receipt'];
  return { valid: problems.length === 0, problems, scheme: 'exact', session: r.transaction, payer: r.payer, pay_to: r.pay_to, deposit_raw: r.amount_raw, spent_raw: r.amount_raw, refund_raw: '0' };
}
