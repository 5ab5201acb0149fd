import { NanoPayError } from '../errors.js';
import { publicFailure } from '../http/respond.js';
import { answerInChat, holdInChat, listApprovals } from '../ops/spending/approvals.js';
import { TOOLS, checkInput, lookupTool } from '../toolset/tools.js';
import type { ChatEvent, ErrorBody } from './events.js';
import { HELP, parseSentence } from './grammar.js';
import { complete, functionsOf, type ModelConfig, type ModelMessage } from './model.js';
import type { WalletHolder } from './wallet-holder.js';

export interface ChatDeps {
  holder: WalletHolder;
  /** What --confirm-above added to the spending policy (shown in /status; the policy applies it). */
  confirmAboveRaw?: bigint;
  /** --chat-confirms: the chat's user approves the spends the chat held (else only a person with the key store password does). */
  chatConfirms?: boolean;
  model?: ModelConfig;
  log: (line: string) => void;
}

export interface ChatTurn {
  message?: string;
  /** A confirmation token from an earlier turn: approves the held call and carries it out. */
  confirm?: string;
  /** A confirmation token from an earlier turn: denies the held call. */
  deny?: string;
  /** Lists the profile's approvals waiting for an answer. */
  approvals?: true;
  /** Earlier text of the conversation, for the model. */
  history?: { role: 'user' | 'assistant'; content: string }[];
}

type Emit = (event: ChatEvent) => void;

/** What a tool call came to, as the model is told: never a confirmation token. */
type Outcome = { ok: true; data: Record<string, unknown> } | { ok: false; error: ErrorBody } | { ok: false; confirmation_required: string };

const MAX_MODEL_ROUNDS = 8;

const SYSTEM_PROMPT = `You are nanopay's payment agent. You manage one Nano (XNO) wallet through the tools you are given and nothing else.
Amounts are decimal strings in XNO, such as "0.5". Addresses start with nano_ or xrb_.
Only move money when the user asked for it, with the exact address and amount they gave. A spending policy applies.
A user who wants to receive, get paid or bill an amount wants a payment request for it; "receive" with no amount means receiving what is pending.
When a tool answers that confirmation is required, tell the user that the payment waits for their confirmation; do not retry it.
Answer briefly.`;

/** One conversation turn: events go to `emit` as they happen; never throws. */
export async function chatTurn(deps: ChatDeps, turn: ChatTurn, emit: Emit, signal: AbortSignal): Promise<void> {
  let calls = 0;
  const nextId = (): string => `call_${++calls}`;
  try {
    if (turn.confirm !== undefined) await confirmed(deps, turn.confirm, emit, nextId(), signal);
    else if (turn.deny !== undefined) await denied(deps, turn.deny, emit);
    else if (turn.approvals === true) emit({ type: 'approvals', approvals: await deps.holder.use((session) => listApprovals(session)) });
    else if (deps.model !== undefined) await withModel(deps, deps.model, turn, emit, nextId, signal);
    else await withGrammar(deps, turn.message ?? '', emit, nextId(), signal);
  } catch (error) {
    emit({ type: 'error', error: shown(deps, error) });
  }
  emit({ type: 'done' });
}

async function withGrammar(deps: ChatDeps, message: string, emit: Emit, id: string, signal: AbortSignal): Promise<void> {
  const intent = parseSentence(message);
  switch (intent.kind) {
    case 'help':
      emit({ type: 'text', text: HELP });
      return;
    case 'unknown':
      emit({ type: 'text', text: `I did not understand that${intent.why === undefined ? '.' : ` as something to do: ${intent.why}`}\n${HELP}` });
      return;
    case 'confirm':
      await confirmed(deps, intent.token, emit, id, signal);
      return;
    case 'tool': {
      const outcome = await callTool(deps, intent.name, intent.arguments, emit, id, signal);
      if (outcome.ok) emit({ type: 'text', text: describe(intent.name, outcome.data) });
      return;
    }
  }
}

/**
 * The chat's user confirms a held call (a request of theirs, never a model's
 * tool call): its approval is approved, and the call carried out once, as it
 * was issued, with that approval.
 */
async function confirmed(deps: ChatDeps, token: string, emit: Emit, id: string, signal: AbortSignal): Promise<void> {
  refuseUnlessConfirms(deps);
  const { approval, call } = await deps.holder.use((session) => answerInChat(session, token, 'approve'));
  if (call === undefined) throw new NanoPayError('INVALID_REQUEST', 'That confirmation token holds no call; nothing was sent');
  const outcome = await callTool(deps, call.name, { ...call.arguments, approval_id: approval.id }, emit, id, signal);
  if (outcome.ok) emit({ type: 'text', text: describe(call.name, outcome.data) });
}

async function denied(deps: ChatDeps, token: string, emit: Emit): Promise<void> {
  refuseUnlessConfirms(deps);
  const { approval } = await deps.holder.use((session) => answerInChat(session, token, 'deny'));
  emit({ type: 'text', text: `Denied ${approval.description}; nothing was sent.` });
}

/** Chat confirmations are the operator's choice: off, whoever reaches the chat (an agent too) cannot approve through it. */
function refuseUnlessConfirms(deps: ChatDeps): void {
  if (deps.chatConfirms !== true) {
    throw new NanoPayError('FORBIDDEN', 'This agent takes no confirmations in its chat; nothing was approved or sent', {
      hint: 'A person approves a held spend with the key store password: nanopay approvals approve ID (its operator can turn chat confirmations on: agent --chat-confirms).',
    });
  }
}

async function withModel(deps: ChatDeps, model: ModelConfig, turn: ChatTurn, emit: Emit, nextId: () => string, signal: AbortSignal): Promise<void> {
  const messages: ModelMessage[] = [{ role: 'system', content: SYSTEM_PROMPT }, ...(turn.history ?? []), { role: 'user', content: turn.message ?? '' }];
  const functions = functionsOf(TOOLS);
  for (let round = 0; round < MAX_MODEL_ROUNDS; round++) {
    const reply = await complete(model, messages, functions, signal);
    if (reply.content !== null) emit({ type: 'text', text: reply.content });
    if (reply.toolCalls.length === 0) return;
    messages.push({
      role: 'assistant',
      content: reply.content,
      tool_calls: reply.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
    });
    for (const call of reply.toolCalls) {
      const name = lookupTool(call.name)?.name ?? call.name;
      const outcome = await callTool(deps, name, parseArguments(call.arguments), emit, nextId(), signal);
      messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify(outcome) });
    }
  }
  throw new NanoPayError('INVALID_DATA', `The language model asked for more than ${MAX_MODEL_ROUNDS} rounds of tool calls in one turn; stopped`);
}

/** Arguments the model wrote that are not JSON become an error the tool reports, not a crash. */
function parseArguments(text: string): unknown {
  try {
    return text.trim() === '' ? {} : JSON.parse(text);
  } catch {
    return new NanoPayError('INVALID_JSON', 'The tool arguments are not valid JSON');
  }
}

/** What a call came to inside the holder's session: held for an approval (nothing was signed), or the tool's data. */
type Ran = { held: true; token: string; approval: { id: string; expires_at: string }; message: string } | { held: false; data: Record<string, unknown> };

/**
 * Every tool call of the chat: checked against the tool's schema and run with
 * the holder's session, so the spending policy decides it like any spend. A
 * spend the policy holds for approval (APPROVAL_REQUIRED) is kept under a
 * token shown to the chat's user only (the `confirm` event), never to the
 * model, which is told that confirmation is required.
 */
async function callTool(deps: ChatDeps, name: string, args: unknown, emit: Emit, id: string, signal: AbortSignal): Promise<Outcome> {
  emit({ type: 'tool_call', id, name, arguments: args instanceof Error ? null : args });
  try {
    if (args instanceof Error) throw args;
    const tool = TOOLS.find((t) => t.name === name);
    if (tool === undefined) throw new NanoPayError('NOT_FOUND', `There is no tool named "${name}"`);
    const input = checkInput(tool, args);
    const ran = await deps.holder.use(async (session): Promise<Ran> => {
      try {
        return { held: false, data: await tool.handler(session, input, signal) };
      } catch (error) {
        if (!(error instanceof NanoPayError) || error.code !== 'APPROVAL_REQUIRED' || deps.chatConfirms !== true) throw error;
        const approval = error.details?.approval as { id: string; expires_at: string; reason: string };
        const { approval_id: _used, ...asked } = input;
        const token = await holdInChat(session, approval.id, { name, arguments: asked });
        return { held: true, token, approval, message: approval.reason };
      }
    });
    if (ran.held) {
      const expiresInS = Math.max(0, Math.round((Date.parse(ran.approval.expires_at) - Date.now()) / 1000));
      const text = `${ran.message}: nothing was sent. Send {"confirm": "${ran.token}"} (or "confirm ${ran.token}") within ${expiresInS} s to carry it out, or {"deny": "${ran.token}"}.`;
      emit({ type: 'confirm', id, name, arguments: input, token: ran.token, approval_id: ran.approval.id, expires_in_s: expiresInS, text });
      return { ok: false, confirmation_required: 'Nothing was sent: the user must confirm this payment in a separate request.' };
    }
    if (tool.writes) deps.holder.afterWrite();
    emit({ type: 'tool_result', id, name, ok: true, data: ran.data });
    return { ok: true, data: ran.data };
  } catch (error) {
    const failure = shown(deps, error);
    emit({ type: 'tool_result', id, name, ok: false, error: failure });
    return { ok: false, error: failure };
  }
}

/** What a client may see of a failure: our bugs only as "Internal error" (the log has them). */
function shown(deps: ChatDeps, error: unknown): ErrorBody {
  const failure = publicFailure(error);
  if (failure.code === 'INTERNAL_ERROR') {
    deps.log(`internal error in chat: ${error instanceof Error ? error.message : String(error)}`);
    return { error: 'INTERNAL_ERROR', message: 'Internal error' };
  }
  return { error: failure.code, message: failure.message };
}

/** A sentence for a tool's result, for the grammar's answers. */
function describe(name: string, data: Record<string, unknown>): string {
  const d = (key: string): string => String(data[key]);
  switch (name) {
    case 'wallet.balance':
      return `Balance ${d('balance')} XNO, pending ${d('pending')} XNO, on ${d('account')}.`;
    case 'wallet.send':
      return `Sent ${d('amount')} XNO to ${d('recipient')} (block ${d('hash')}).`;
    case 'payment.request':
      return `Pay exactly ${d('amount')} XNO to ${d('receive_address')}; transaction id ${d('transaction_id')}.`;
    case 'payment.status':
      return data.is_paid === true ? `Request ${d('transaction_id')} is paid.` : `Request ${d('transaction_id')} is not paid yet.`;
    case 'credits.get':
      return `${d('credits')} credits left.`;
    case 'spending.status': {
      const spent = data.spent as Record<string, string>;
      const rules = data.rules as { rule: string; kind: string; limit: string; remaining?: string; room_back_at?: string }[];
      const waiting = data.pending_approvals as { id: string; amount: string; recipient: string; host?: string }[];
      const lines = [`Spent ${spent.last_hour} XNO in the last hour, ${spent.last_24_hours} XNO in the last 24 hours, ${spent.last_30_days} XNO in the last 30 days.`];
      if (data.sealed === false) lines.push('The spending policy was changed behind its seal: every payment is refused until a person reseals it.');
      if (rules.length === 0) lines.push('No spending limit applies.');
      for (const r of rules) {
        const left = r.remaining === undefined ? '' : `: ${r.remaining} XNO left${r.room_back_at === undefined || r.remaining === r.limit ? '' : `, more from ${r.room_back_at}`}`;
        lines.push(`- ${r.rule} ${r.limit} XNO${left}`);
      }
      lines.push(waiting.length === 0 ? 'Nothing waits for approval.' : `Waiting for a person's approval: ${waiting.map((a) => `${a.amount} XNO to ${a.host ?? a.recipient} (${a.id})`).join('; ')}.`);
      return lines.join('\n');
    }
    case 'wallet.history': {
      const items = data.history as { type: string; counterparty: string | null; amount: string; time: string | null }[];
      if (items.length === 0) return 'No payments yet.';
      return items.map((h) => `- ${h.time ?? '?'} ${h.type} ${h.amount} XNO${h.counterparty === null ? '' : ` ${h.type === 'send' ? 'to' : 'from'} ${h.counterparty}`}`).join('\n');
    }
    case 'credits.topup':
      return `Bought ${d('topped_up_credits')} credits; the balance is now ${d('new_credits_balance')}.`;
    case 'donate.send':
      return `Donated ${d('amount')} XNO. ${d('message')}`;
    case 'http_fetch_paid': {
      if (data.dry_run === true) {
        if (data.payment_required !== true) return `HTTP ${d('status')}: no payment asked; nothing was paid.`;
        return `It asks ${d('amount')} XNO to ${d('pay_to')} on ${d('network')}; the policy would ${d('decision')}${data.rule === undefined ? '' : ` (rule ${d('rule')})`}. Nothing was paid.`;
      }
      const paid = data.payment as { amount?: string; pay_to?: string; hash?: string } | null;
      return `HTTP ${d('status')}${paid === null ? '' : `; paid ${paid.amount ?? '?'} XNO to ${paid.pay_to ?? '?'} (block ${paid.hash ?? '?'})`}.`;
    }
    default:
      return 'Done.';
  }
}
