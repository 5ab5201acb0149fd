import { join } from 'node:path';
import { NanoPayError } from '../../errors.js';
import { normalizeAddress } from '../../nano/index.js';
import { receive } from '../../ops/account/receive.js';
import { send } from '../../ops/spending/send.js';
import type { Session } from '../../ops/session.js';
import { stateDir } from '../../wallet/paths.js';
import type { NanoSettler } from '../facilitator.js';
import { SessionBook } from './book.js';
import { SessionSeller, type SessionTerms } from './seller.js';

/** The seller's session book's dir. */
function sessionBookDir(session: Session): string {
  return join(stateDir(session.dir, 'x402'), 'seller-sessions');
}

/**
 * A session seller for `nanopay paywall --sessions`: payTo must be an account
 * of the profile's wallet, whose key refunds what a session did not spend
 * (a send keyed by the session: one block whatever the retries, judged by the
 * spending policy as a refund) and signs the receipts. Deposits are received
 * first, so the refund never waits on the balance.
 */
export async function profileSessionSeller(
  session: Session,
  settler: NanoSettler,
  options: { payTo: string; terms: SessionTerms; workThreshold: string; wallet?: string; index?: number; log?: (message: string, fields: Record<string, string | number | null>) => void },
): Promise<SessionSeller> {
  const account = await session.account(options.wallet, options.index);
  if (account.address !== normalizeAddress(options.payTo)) {
    throw new NanoPayError('USAGE', `--sessions refunds from the account paid, so --to must be the wallet's own account (${account.address}), not ${options.payTo}`, {
      hint: 'Leave --to out to be paid to the active account, or pick the account with --wallet and --account.',
    });
  }
  const book = await SessionBook.open(sessionBookDir(session));
  const picked = { ...(options.wallet === undefined ? {} : { wallet: options.wallet }), ...(options.index === undefined ? {} : { index: options.index }) };
  return new SessionSeller({
    payTo: account.address,
    settler,
    book,
    terms: options.terms,
    workThreshold: options.workThreshold,
    refund: async (s, raw) => {
      await receive(session, picked);
      const sent = await send(session, { to: s.payer, amount: { raw }, id: `nano-session-refund-${s.id}`, ...picked }, 'refund');
      return sent.hash;
    },
    signReceipt: async (message) => (await session.signSessionMessage(message, options.wallet, options.index)).signature,
    ...(options.log === undefined ? {} : { log: options.log }),
  });
}
