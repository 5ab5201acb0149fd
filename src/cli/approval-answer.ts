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
  const terminal = process.stdin.isTTY === true && process.stderr.isTTY === true && !yes;
  return answerApproval(session, id, answer, terminal ? `terminal, with ${session.passwordVia()}` : session.passwordVia());
}

/**
 * The person at the terminal answers a spend the policy holds, as the command
 * runs. A yes counts only with the key store password: asked for here unless
 * this process already unlocked the key store with it (then a yes on the
 * terminal confirms). A keystroke alone is no person: a program can type
 * into a pseudo-terminal. A no denies the approval.
 */
export async function answerAtTerminal(question: string, approvalId: string, session: Session): Promise<boolean> {
  const withPassword = session.keystoreUnlocked();
  const yes = await confirmOnTerminal(withPassword ? question : `${question} (approving needs the key store password)`, false);
  if (!yes) {
    await answerApproval(session, approvalId, 'deny', 'terminal');
    return false;
  }
  await answerApproval(session, approvalId, 'approve', withPassword ? `terminal, with ${session.passwordVia()}` : 'terminal, the key store password typed for it');
  return true;
}
