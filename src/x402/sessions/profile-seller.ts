import { join } from 'node:path';
import { NanoPayError } from '../../errors.js';
import { normalizeAddress } from '../../nano/index.js';
import { receive } from '../../ops/account/receive.js';
import { send } from '../../ops/spending/send.js';
import type { Session } from '../../ops/session.js';
import { stateDir } from '../../wallet/paths.js';
import type { NanoSettler } from '../facilitator.js';
import { SessionBook } from './book.js';
import { SessionSeller, sessionReceipt, type SessionReceipt, type SessionTerms } from './seller.js';
import { isStateBlock, linkAsAccount } from '../../nano/index.js';
import { FileSettlementRecord } from '../settlements.js';
import { settlementsDir } from '../profile-settler.js';
import { receiptMessage } from './wire.js';
import { backendNetwork } from '../network.js';
import type { ExactReceipt } from './receipts.js';

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

/**
 * A signed receipt the seller exports, by id: a session this profile sold
 * (closed), or a block its paywall or facilitator settled as an `exact`
 * payment to the wallet's account (the settlement record says it settled it,
 * the ledger shows it confirmed and what it paid). Signed with the key of the
 * account paid, which must be the wallet's (`wallet`, `index`).
 */
export async function exportReceipt(session: Session, id: string, options: { wallet?: string; index?: number } = {}): Promise<SessionReceipt | ExactReceipt> {
  const key = id.trim().toUpperCase();
  const sign = async (message: Uint8Array): Promise<string> => (await session.signSessionMessage(message, options.wallet, options.index)).signature;
  const account = await session.address(options.wallet, options.index);
  const sold = (await SessionBook.read(sessionBookDir(session))).get(key);
  if (sold !== undefined) {
    if (sold.payTo !== account) throw new NanoPayError('USAGE', `Session ${key} paid ${sold.payTo}, not ${account}: name its account with --wallet and --account`);
    return sessionReceipt(sold, sign);
  }
  const record = new FileSettlementRecord(settlementsDir(session));
  const claimed = /^[0-9A-F]{64}$/.test(key) ? await record.lookup(key) : undefined;
  const entry = claimed === undefined ? undefined : await record.read(claimed.previous);
  if (entry?.state !== 'settled' || entry.hash !== key) throw new NanoPayError('NOT_FOUND', `This profile sold no session ${key} and settled no block ${key}`);
  const api = await session.api();
  const info = await api.blockInfo(key);
  const block = info.contents;
  if (!info.confirmed || !isStateBlock(block) || info.subtype !== 'send') throw new NanoPayError('NOT_FOUND', `The block ${key} is not a confirmed send on the ledger`);
  if (linkAsAccount(block.link) !== account) throw new NanoPayError('USAGE', `The block ${key} paid ${linkAsAccount(block.link)}, not ${account}: name its account with --wallet and --account`);
  const unsigned: Omit<ExactReceipt, 'seller_signature'> = {
    scheme: 'exact',
    network: await backendNetwork(api, session.profile().x402Network),
    transaction: key,
    payer: block.account,
    pay_to: account,
    amount_raw: info.amountRaw.toString(),
    settled_at: entry.at,
  };
  return { ...unsigned, seller_signature: await sign(receiptMessage(unsigned)) };
}
