import { NanoPayError } from '../../errors.js';
import type { Session } from '../session.js';

/** Refusals the operations make before a payment's block is signed: its input, the spending policy, the funds, a price, the wallet. */
const BEFORE_SIGNING = new Set([
  'INVALID_ADDRESS',
  'INVALID_NUMBER_FORMAT',
  'INVALID_NEGATIVE_AMOUNT',
  'TOO_MANY_DECIMAL_PLACES',
  'INVALID_FRACTIONAL_PART',
  'INVALID_WHOLE_NUMBER',
  'AMOUNT_TOO_LARGE',
  'INVALID_CREDITS_AMOUNT',
  'INVALID_REQUEST',
  'INVALID_JSON',
  'POLICY_DENIED',
  'APPROVAL_REQUIRED',
  'APPROVAL_INVALID',
  'INSUFFICIENT_FUNDS',
  'SERVICE_INCONSISTENT',
  'SERVICE_ONLY',
  'NOT_FOUND',
  'ACCOUNT_NOT_FOUND',
  'MISSING_API_KEY',
  'WRONG_PASSWORD',
  'PASSWORD_REQUIRED',
]);

/**
 * Whether a payment from the session's active account (or `account`) that failed with
 * `error` surely moved nothing, and never will: a refusal made before signing,
 * and no block of the account waiting in the journal (a signed block there may
 * still land, republished by the next command). Anything else, a lost answer
 * above all, may have moved money.
 */
export async function failedBeforeSigning(session: Session, error: unknown, account?: string): Promise<boolean> {
  if (!(error instanceof NanoPayError) || !BEFORE_SIGNING.has(error.code)) return false;
  try {
    return (await session.journal.read(account ?? (await session.address()))) === undefined;
  } catch {
    return false;
  }
}
