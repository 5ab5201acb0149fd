import { NanoPayError } from '../errors.js';
import { publicFailure } from '../http/respond.js';
import { rawToXno, xnoToRaw } from '../nano/index.js';
import { credits, parseTier } from '../ops/spending/credits.js';
import type { Session } from '../ops/session.js';
import { failedBeforeSigning } from '../ops/spending/spend-outcome.js';
import { TOOLS, checkInput, lookupTool, type ToolInput } from '../toolset/tools.js';
import type { Confirmations } from './confirmations.js';
import type { ChatEvent, ErrorBody } from './events.js';
import { HELP, parseSentence } from './grammar.js';
import { complete, functionsOf, type ModelConfig, type ModelMessage } from './model.js';
import { SPEND_WINDOW_MS, type Reservation } from './spend-window.js';
import type { WalletHolder } from './wallet-holder.js';

export interface ChatDeps {
  holder: WalletHolder;
  confirmations: Confirmations;
  /**
   * A spend (send, donation, top-up) is held for confirmation when it, plus the
   * chat's spends made without one in the last hour, would exceed this many raw.
   */
  confirmAboveRaw?: bigint;
  model?: ModelConfig;
  log: (line: string) => void;
}

export interface ChatTurn {
  message?: string;
  /** A confirmation token from an earlier turn. */
  confirm?: string;
  /** Earlier text of the conversation, for the model. */
  history?: { role: 'user' | 'assistant'; content: string }[];
}

type Emit = (event: ChatEvent) => void;

/** What a tool call came to, as the model is told: never a confirmation token. */
type Outcome = { ok: true; data: Record<string, unknown> } | { ok: false; error: ErrorBody } | { ok: false; confirmation_required: string };

const MAX_MODEL_ROUNDS = 8;

const SYSTEM_PROMPT = `You are nanopay's payment agent. You manage one Nano (XNO) wallet through the tools you are given and nothing else.
Amounts are decimal strings in XNO, such as "0.5". Addresses start with nano_ or xrb_.
Only move money when the user asked for it, with the exact address and amount they gave. Spending limits apply.
A user who wants to receive, get paid or bill an amount wants a payment request for it; "receive" with no amount means receiving what is pending.
When a tool answers that confirmation is required, tell the user that the payment waits for their confirmation; do not retry it.
Answer briefly.`;

/** One conversation turn: events go to `emit` as they happen; never throws. */
export async function chatTurn(deps: ChatDeps, turn: ChatTurn, emit: Emit, signal: AbortSignal): Promise<void> {
  let calls = 0;
  const nextId = (): string => `call_${++calls}`;
  try {
    if (turn.confirm !== undefined) await confirmed(deps, turn.confirm, emit, nextId(), signal);
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
      const outcome = await callTool(deps, intent.name, intent.arguments, emit, id, signal, false);
      if (outcome.ok) emit({ type: 'text', text: describe(intent.name, outcome.data) });
      return;
    }
  }
}

async function confirmed(deps: ChatDeps, token: string, emit: Emit, id: string, signal: AbortSignal): Promise<void> {
  const call = deps.confirmations.take(token);
  if (call === undefined) throw new NanoPayError('INVALID_REQUEST', 'That confirmation token is unknown, already used or expired; nothing was sent');
  const outcome = await callTool(deps, call.name, call.arguments, emit, id, signal, true);
  if (outcome.ok) emit({ type: 'text', text: describe(call.name, outcome.data) });
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
      const outcome = await callTool(deps, name, parseArguments(call.arguments), emit, nextId(), signal, false);
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

/** What a call came to inside the holder's session: held for confirmation (nothing ran), or the tool's data. */
type Ran = { held: true; costRaw: bigint; recentRaw: bigint } | { held: false; data: Record<string, unknown> };

/**
 * Every tool call of the chat: checked against the tool's schema, held for
 * confirmation when it would take the chat's recent spending above
 * --confirm-above, then run with the holder's session (the operations apply
 * the spending limits). A confirmed call is carried out as it was issued.
 */
async function callTool(deps: ChatDeps, name: string, args: unknown, emit: Emit, id: string, signal: AbortSignal, confirmedCall: boolean): Promise<Outcome> {
  emit({ type: 'tool_call', id, name, arguments: args instanceof Error ? null : args });
  try {
    if (args instanceof Error) throw args;
    const tool = TOOLS.find((t) => t.name === name);
    if (tool === undefined) throw new NanoPayError('NOT_FOUND', `There is no tool named "${name}"`);
    const input = checkInput(tool, args);
    const ran = await deps.holder.use(async (session): Promise<Ran> => {
      const admitted = confirmedCall ? {} : await admit(deps, session, name, input);
      if ('held' in admitted) return { held: true, ...admitted.held };
      try {
        const data = await tool.handler(session, input, signal);
        admitted.reservation?.end(true);
        return { held: false, data };
      } catch (error) {
        admitted.reservation?.end(!(await failedBeforeSigning(session, error)));
        throw error;
      }
    });
    if (ran.held) {
      const { token, expiresInS } = deps.confirmations.issue({ name, arguments: input });
      const text = `${heldReason(name, input, ran.costRaw, ran.recentRaw, deps.confirmAboveRaw as bigint)}: nothing was sent. Send {"confirm": "${token}"} (or "confirm ${token}") within ${expiresInS} s to carry it out.`;
      emit({ type: 'confirm', id, name, arguments: input, token, expires_in_s: expiresInS, text });
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

/**
 * Whether a call may run without a confirmation: a spend is admitted (and its
 * cost reserved) only while it keeps the chat's recent spending within the
 * threshold. Calls that spend nothing, and amounts the tool will refuse anyway, pass.
 */
async function admit(deps: ChatDeps, session: Session, name: string, input: ToolInput): Promise<{ reservation?: Reservation } | { held: { costRaw: bigint; recentRaw: bigint } }> {
  if (deps.confirmAboveRaw === undefined) return {};
  const costRaw = await costOf(session, name, input);
  if (costRaw === undefined) return {};
  // No await from here on: the check and the reservation are one step, so concurrent turns see each other.
  const recentRaw = deps.confirmations.spends.totalRaw();
  const reservation = deps.confirmations.spends.admit(costRaw, deps.confirmAboveRaw);
  return reservation === undefined ? { held: { costRaw, recentRaw } } : { reservation };
}

/** What a call would spend, in raw: a send's or donation's amount, a top-up's listed price (read now); undefined for anything else. */
async function costOf(session: Session, name: string, input: ToolInput): Promise<bigint | undefined> {
  if (name === 'wallet.send' || name === 'donate.send') return amountRaw(input.amount);
  // A paid fetch may cost up to its maximum: that is what is held against the threshold.
  if (name === 'http_fetch_paid') return amountRaw(input.max_xno);
  if (name !== 'credits.topup') return undefined;
  let tier: number;
  try {
    tier = parseTier(String(input.credits_amount));
  } catch {
    // Not a tier: the tool refuses it with the proper error.
    return undefined;
  }
  // The top-up pays exactly the listed price (the operation refuses any other offer): that is what it costs.
  const price = (await credits(session)).tiers.find((t) => t.credits === tier)?.price;
  if (price === undefined) throw new NanoPayError('INVALID_DATA', `The service lists no price for ${tier} credits; nothing was bought`);
  return xnoToRaw(price);
}

function amountRaw(amount: ToolInput[string]): bigint | undefined {
  try {
    return typeof amount === 'string' ? xnoToRaw(amount) : undefined;
  } catch {
    // Not an amount: the tool refuses it with the proper error.
    return undefined;
  }
}

/** Why a call was held, for the confirm event. */
function heldReason(name: string, input: ToolInput, costRaw: bigint, recentRaw: bigint, thresholdRaw: bigint): string {
  const cost = rawToXno(costRaw);
  const what =
    name === 'credits.topup'
      ? `Buying ${String(input.credits_amount)} credits for ${cost} XNO`
      : name === 'http_fetch_paid'
        ? `Paying up to ${cost} XNO for ${String(input.url)}`
        : `${name === 'donate.send' ? 'Donating' : 'Sending'} ${cost} XNO`;
  const threshold = `the confirmation threshold of ${rawToXno(thresholdRaw)} XNO`;
  if (recentRaw === 0n) return `${what} is above ${threshold}`;
  const minutes = SPEND_WINDOW_MS / 60_000;
  return `${what} would bring this chat's spending without confirmation in the last ${minutes} minutes to ${rawToXno(recentRaw + costRaw)} XNO, above ${threshold}`;
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
    case 'credits.topup':
      return `Bought ${d('topped_up_credits')} credits; the balance is now ${d('new_credits_balance')}.`;
    case 'donate.send':
      return `Donated ${d('amount')} XNO. ${d('message')}`;
    case 'http_fetch_paid': {
      const paid = data.payment as { amount?: string; pay_to?: string; hash?: string } | null;
      return `HTTP ${d('status')}${paid === null ? '' : `; paid ${paid.amount ?? '?'} XNO to ${paid.pay_to ?? '?'} (block ${paid.hash ?? '?'})`}.`;
    }
    default:
      return 'Done.';
  }
}
