import { NanoPayError } from '../../errors.js';
import { isStateBlock, linkAsAccount, rawToXno } from '../../nano/index.js';
import { recordId } from '../../ops/spending/spend-log.js';
import { seenConfirmed } from '../../ops/ledger/confirmed-wait.js';
import type { Session } from '../../ops/session.js';
import { answeredWithin } from '../client.js';
import type { Transport } from '../local-hosts.js';
import { checkReceipt } from './receipts.js';
import type { SessionReceipt } from './seller.js';
import { closeMessage, signWithSessionKey } from './wire.js';
import { buyerSession, inTurn, liveOf, save, standingOf } from './buyer-book.js';
export interface ClosedSession {
  session: string;
  deposit: string;
  spent: string;
  refunded: string;
  refund_block: string | null;
  refund_confirmed: boolean;
  receipt: SessionReceipt;
}

/**
 * Closes a session of ours (signed by its session key), or reads the close
 * the seller made (idle, expired): checks the seller's receipt (signatures,
 * sums, what we allowed, our deposits), waits for our own ledger to show the
 * refund block sending us the rest, and records the refund in the audit
 * trail, which frees it in the spending policy's budgets.
 */
export async function closeSession(session: Session, id: string, options: { signal?: AbortSignal; transport?: Transport } = {}): Promise<ClosedSession> {
  const s = liveOf(session).get(id.toUpperCase())?.s ?? (await buyerSession(session, id));
  const transport = answeredWithin(options.transport ?? fetch, session.deadlineMs());
  return inTurn(session, s, async (held) => {
    let standing = await standingOf(held, transport);
    if (standing === undefined) throw new NanoPayError('NOT_FOUND', `The seller does not know session ${held.id}`);
    if (standing.state !== 'closed') {
      const response = await transport(`${held.sessionsUrl}/${held.id}/close`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ signature: signWithSessionKey(held.seed, closeMessage(held.id)) }),
        redirect: 'manual',
      });
      standing = (await response.json().catch(() => undefined)) as Record<string, unknown> | undefined;
      if (!response.ok || standing === undefined) throw new NanoPayError('X402_UNSETTLED', `The seller did not close session ${held.id} (HTTP ${response.status}); try again`);
    }
    const receipt = standing.receipt as SessionReceipt | undefined;
    if (receipt === undefined) throw new NanoPayError('X402_UNSETTLED', `The seller closed session ${held.id} but sent no receipt; try again`);
    const check = checkReceipt(receipt);
    const problems = [...check.problems];
    if (receipt.session !== held.id || receipt.payer !== held.payer || receipt.pay_to !== held.payTo || receipt.session_key !== held.sessionKey) problems.push('the receipt is for another session');
    if (BigInt(receipt.spent_raw) > BigInt(held.allowedRaw)) problems.push(`it says ${receipt.spent_raw} raw spent, above the ${held.allowedRaw} raw our vouchers allowed`);
    if (problems.length > 0) throw new NanoPayError('SERVICE_INCONSISTENT', `The seller's receipt for session ${held.id} does not hold: ${problems.join('; ')}`, { details: { receipt } });
    const ctx = await session.context(options.signal);
    const refund = BigInt(receipt.refund_raw);
    const refundConfirmed = refund === 0n || (receipt.refund_block !== null && (await refundLanded(ctx.api, receipt, options.signal)));
    if (refundConfirmed && held.refundConfirmed !== true && refund > 0n) {
      await (await ctx.store()).audit.add({
        id: recordId(),
        at: new Date(ctx.now()).toISOString(),
        profile: ctx.profile,
        front_end: session.frontEnd,
        kind: 'x402',
        account: held.payer,
        recipient: held.payTo,
        host: new URL(held.origin).host,
        amount_raw: (-refund).toString(),
        decision: 'allowed',
        rule: null,
        message: `session ${held.id} closed: deposit ${rawToXno(BigInt(receipt.deposit_raw))} XNO, spent ${rawToXno(BigInt(receipt.spent_raw))} XNO, refunded ${rawToXno(refund)} XNO`,
        hash: receipt.refund_block as string,
        status: 'paid',
        settled_at: new Date(ctx.now()).toISOString(),
      });
    }
    Object.assign(held, { state: 'closed', receipt, refundConfirmed, chargedRaw: receipt.spent_raw });
    await save(session, held);
    return {
      session: held.id,
      deposit: rawToXno(BigInt(receipt.deposit_raw)),
      spent: rawToXno(BigInt(receipt.spent_raw)),
      refunded: rawToXno(refund),
      refund_block: receipt.refund_block,
      refund_confirmed: refundConfirmed,
      receipt,
    };
  });
}

/** Whether our ledger shows the receipt's refund block confirmed, sending the payer exactly the refund from pay_to. */
async function refundLanded(api: Awaited<ReturnType<Session['api']>>, receipt: SessionReceipt, signal?: AbortSignal): Promise<boolean> {
  const hash = receipt.refund_block as string;
  if (!(await seenConfirmed(api, hash, 15_000, signal))) return false;
  const info = await api.blockInfo(hash);
  const block = info.contents;
  return isStateBlock(block) && info.subtype === 'send' && block.account === receipt.pay_to && linkAsAccount(block.link) === receipt.payer && info.amountRaw === BigInt(receipt.refund_raw);
}

