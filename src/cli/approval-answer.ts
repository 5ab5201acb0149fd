import { confirmOnTerminal } from './input/confirm.js';
import { NanoPayError } from '../errors.js';
import { answerApproval, getApproval, type ApprovalShown } from '../ops/spending/approvals.js';
import type { Session } from '../ops/session.js';

/**
 * A person answers an approval: it is shown, asked about on a terminal (unless
 * --yes), and answered only once the key store password unlocked the key
 * store (never an unlocked session): so an agent that can spend through the
 * toolset, MCP or an unlocked session cannot approve its own spend.
 */
export async function answerAsPerson(session: Session, id: string, answer: 'approve' | 'deny', yes: boolean): Promise<ApprovalShown> {
  const approval = await getApproval(session, id);
  process.stderr.write(`Approval ${approval.id}: ${approval.description}\n${approval.message} (rule: ${approval.rule}); expires ${approval.expires_at}\n`);
  if (!(await confirmOnTerminal(`${answer === 'approve' ? 'Approve' : 'Deny'} this spend of ${approval.amount} XNO?`, yes))) throw new NanoPayError('DECLINED', 'Declined; the approval was not answered');
  await session.keystore();
  const terminal = process.stdin.isTTY === true && process.stderr.isTTY === true && !yes;
  return answerApproval(session, id, answer, terminal ? 'terminal, with the password' : 'the password');
}
