import { NanoPayError } from '../errors.js';
import { errorEnvelope, type Envelope } from '../http/respond.js';
import { balance } from '../ops/account/balance.js';
import { history } from '../ops/account/history.js';
import { spendingStatus } from '../ops/spending/status.js';
import { credits, parseTier, topup } from '../ops/spending/credits.js';
import { donate } from '../ops/spending/donate.js';
import { paymentStatus, requestPayment } from '../ops/requests/payments.js';
import { send } from '../ops/spending/send.js';
import type { Session } from '../ops/session.js';
import { publicOnly } from '../x402/local-hosts.js';
import { fetchWithPayment } from '../x402/client.js';
import { quoteX402 } from '../x402/quote.js';

/** A JSON Schema for a tool's input: an object of string or boolean properties. */
export interface InputSchema {
  type: 'object';
  properties: Record<string, { type: 'string' | 'boolean'; description: string }>;
  required: string[];
  additionalProperties: false;
}

export type ToolInput = Record<string, string | boolean | undefined>;

/**
 * MCP's hints about a tool (clients show them and may ask before a destructive
 * one). Every tool reaches the network, so openWorldHint is always true.
 */
export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: true;
}

export interface Tool {
  /** The spec's name (section B), dotted: the HTTP toolset's and the agent's. */
  name: string;
  title: string;
  description: string;
  annotations: ToolAnnotations;
  inputSchema: InputSchema;
  /** True when the tool moves money or changes the account (the toolset refreshes precomputed work after it). */
  writes: boolean;
  handler(session: Session, input: ToolInput, signal?: AbortSignal): Promise<Record<string, unknown>>;
}

function schema(properties: InputSchema['properties'], required: string[] = []): InputSchema {
  return { type: 'object', properties, required, additionalProperties: false };
}

const READ: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true };
const SPEND: ToolAnnotations = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true };

const str = (description: string) => ({ type: 'string' as const, description });

/** Every spending tool takes the id of an approval a person gave: the held spend then runs once, exactly as it was asked. */
const APPROVAL_ID = {
  approval_id: str('the id an APPROVAL_REQUIRED answer gave, once a person approved it (nanopay approvals approve ID): the same spend then runs once'),
};

/** The approval id of a tool's input, for the operation. */
const approvalOf = (input: ToolInput): { approval?: string } => (typeof input.approval_id === 'string' && input.approval_id !== '' ? { approval: input.approval_id } : {});

/** Every spending tool takes an idempotency key: a client that retries (a timeout, a lost answer) gets the first result, never a second payment. */
const IDEMPOTENCY_KEY = {
  id: str('idempotency key: send the same one when you retry this call (after a timeout or a lost answer): the first result comes back and nothing is paid twice'),
};

/** The idempotency key of a tool's input, for the operation. */
const keyOf = (input: ToolInput): { id?: string } => (typeof input.id === 'string' && input.id !== '' ? { id: input.id } : {});

/**
 * Checks an input against its schema: unknown fields, missing fields and wrong
 * types are INVALID_REQUEST. A null field counts as absent, as clients send it
 * for optional fields. An amount must be a decimal string: a JSON number is a
 * float, and floats lose money.
 */
export function checkInput(tool: Tool, input: unknown): ToolInput {
  const given: unknown = input ?? {};
  if (typeof given !== 'object' || given === null || Array.isArray(given)) throw new NanoPayError('INVALID_REQUEST', `${tool.name} takes a JSON object`);
  const checked: ToolInput = {};
  for (const [key, value] of Object.entries(given)) {
    if (!Object.hasOwn(tool.inputSchema.properties, key)) throw new NanoPayError('INVALID_REQUEST', `${tool.name} has no parameter "${key}"`);
    if (value === undefined || value === null) continue;
    const { type } = tool.inputSchema.properties[key] as InputSchema['properties'][string];
    if (key === 'amount' && typeof value === 'number') {
      throw new NanoPayError('INVALID_NUMBER_FORMAT', `"amount" must be a decimal string such as "0.5", not a JSON number: floats and money do not mix`);
    }
    if (typeof value !== type) throw new NanoPayError('INVALID_REQUEST', `"${key}" must be a ${type}`);
    checked[key] = value as string | boolean;
  }
  for (const key of tool.inputSchema.required) {
    if (checked[key] === undefined || checked[key] === '') throw new NanoPayError('INVALID_REQUEST', `${tool.name} needs "${key}"`);
  }
  return checked;
}

const text = (input: ToolInput, key: string): string => input[key] as string;

/** The most of a paid answer's body a tool call returns (the model reads it). */
const MAX_TOOL_BODY = 64 * 1024;

/**
 * The tools of the toolset, defined once: the HTTP server and the MCP
 * server are adapters over this list. Shapes follow the spec's section B.
 */
export const TOOLS: Tool[] = [
  {
    name: 'wallet.balance',
    title: 'Wallet balance',
    // Not read-only: auto_receive_pending_blocks signs receive blocks (it never spends, and a second call finds nothing left to receive).
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    description: 'Balance and pending amount of the toolset wallet, in XNO and raw. Optionally receives pending blocks first.',
    inputSchema: schema({ auto_receive_pending_blocks: { type: 'boolean', description: 'receive every pending block first' } }),
    writes: false,
    handler: async (session, input, signal) => {
      const result = await balance(session, { receive: input.auto_receive_pending_blocks === true, ...(signal === undefined ? {} : { signal }) });
      return { account: result.account, balance: result.balance, balance_raw: result.balance_raw, pending: result.pending, pending_raw: result.pending_raw };
    },
  },
  {
    name: 'wallet.send',
    title: 'Send XNO',
    annotations: SPEND,
    description:
      'Send an amount in XNO from the toolset wallet to an address. The spending policy applies: a refusal is POLICY_DENIED; a spend above its "ask above" amount answers APPROVAL_REQUIRED with an approval id, and runs once a person approved it and the call is made again with approval_id.',
    inputSchema: schema(
      { recipient_address: str('destination address (nano_… or xrb_…), or @NAME of one of the profile\'s contacts'), amount: str('amount in XNO, e.g. "0.5"'), ...IDEMPOTENCY_KEY, ...APPROVAL_ID },
      ['recipient_address', 'amount'],
    ),
    writes: true,
    handler: async (session, input, signal) => {
      const sent = await send(session, { to: text(input, 'recipient_address'), amount: { xno: text(input, 'amount') }, ...keyOf(input), ...approvalOf(input), ...(signal === undefined ? {} : { signal }) });
      return { amount: sent.amount, recipient: sent.to, hash: sent.hash, repeated: sent.repeated };
    },
  },
  {
    name: 'payment.request',
    title: 'Request a payment',
    // Creates a new request each call; moves no money.
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    description: 'Create a payment request: what to use when the user wants to receive, get paid or bill an amount. The returned amount is adjusted: the payer must send exactly it.',
    inputSchema: schema(
      {
        receive_address: str('address that receives the payment (default: the toolset wallet)'),
        amount: str('amount in XNO'),
        redirect_url: str('where the customer goes after paying'),
      },
      ['amount'],
    ),
    writes: false,
    handler: async (session, input) => {
      const r = await requestPayment(session, {
        amount: { xno: text(input, 'amount') },
        ...(input.receive_address === undefined ? {} : { to: text(input, 'receive_address') }),
        ...(input.redirect_url === undefined || input.redirect_url === '' ? {} : { redirectUrl: text(input, 'redirect_url') }),
      });
      return { receive_address: r.receive_address, amount: r.amount, transaction_id: r.transaction_id, uri: r.uri };
    },
  },
  {
    name: 'payment.status',
    title: 'Payment status',
    annotations: READ,
    description: 'Whether a payment request has been paid. Poll until is_paid is true.',
    inputSchema: schema({ transaction_id: str('the transaction id of the request') }, ['transaction_id']),
    writes: false,
    handler: async (session, input) => {
      const s = await paymentStatus(session, text(input, 'transaction_id'));
      return { success: true, message: s.message, transaction_id: s.transaction_id, is_paid: s.is_paid };
    },
  },
  {
    name: 'credits.get',
    title: 'Credits and prices',
    annotations: READ,
    description: 'The API key credit balance and the price of every top-up tier.',
    inputSchema: schema({}),
    writes: false,
    handler: async (session) => {
      const c = await credits(session);
      return { credits: c.credits, ...Object.fromEntries(c.tiers.map((t) => [`current_credits_price_${t.credits}`, Number(t.price)])) };
    },
  },
  {
    name: 'credits.topup',
    title: 'Buy credits',
    annotations: SPEND,
    description: 'Buy credits (10, 50, 100, 500, 1000, 5000, 10000, 50000 or 100000): pays the service from the toolset wallet.',
    inputSchema: schema({ credits_amount: str('the tier to buy'), ...IDEMPOTENCY_KEY, ...APPROVAL_ID }, ['credits_amount']),
    writes: true,
    handler: async (session, input, signal) => {
      const result = await topup(session, { tier: parseTier(text(input, 'credits_amount')), ...keyOf(input), ...approvalOf(input), ...(signal === undefined ? {} : { signal }) });
      return { topped_up_credits: result.topped_up_credits, new_credits_balance: result.new_credits_balance, hash: result.hash, repeated: result.repeated };
    },
  },
  {
    name: 'donate.send',
    title: 'Donate XNO',
    annotations: SPEND,
    description: 'Donate an amount in XNO to the service.',
    inputSchema: schema({ amount: str('amount in XNO'), ...IDEMPOTENCY_KEY, ...APPROVAL_ID }, ['amount']),
    writes: true,
    handler: async (session, input, signal) => {
      const result = await donate(session, { amount: { xno: text(input, 'amount') }, ...keyOf(input), ...approvalOf(input), ...(signal === undefined ? {} : { signal }) });
      return { success: result.success, amount: result.amount, message: result.message, hash: result.hash, repeated: result.repeated };
    },
  },
  {
    name: 'spending.status',
    title: 'What I may still spend',
    annotations: READ,
    description:
      'Read only: what this wallet may still spend under its spending policy, as its spends are judged: each rule (per-send, hour/day/30d budgets, ask-above) with its limit, what its window holds, what is left and when room comes back; what was spent in the last hour, 24 hours and 30 days; the recipients and hosts refused or allowed; the spends waiting for a person\'s approval.',
    inputSchema: schema({}),
    writes: false,
    handler: async (session) => ({ ...(await spendingStatus(session)) }),
  },
  {
    name: 'wallet.history',
    title: 'Payment history',
    annotations: READ,
    description: 'Read only: the latest blocks of the wallet\'s account, newest first: each send (to whom) and receive (from whom), its amount, balance after and time.',
    inputSchema: schema({ limit: str('how many, newest first: 1 to 100 (default 10)') }),
    writes: false,
    handler: async (session, input) => {
      const limit = input.limit === undefined ? 10 : Number(input.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new NanoPayError('INVALID_REQUEST', '"limit" must be a whole number from 1 to 100');
      const result = await history(session, { limit });
      return {
        account: result.account,
        source: result.source,
        history: result.history.map((h) => ({ hash: h.hash, type: h.type, counterparty: h.counterparty, amount: h.amount, balance: h.balance, time: h.time })),
        more: result.more,
      };
    },
  },
  {
    name: 'http_fetch_paid',
    title: 'Fetch a URL, paying for it (x402)',
    annotations: SPEND,
    description:
      'Fetch an HTTP URL, paying an HTTP 402 (x402) in Nano from the toolset wallet, at most max_xno. Spending limits apply; the payment counts only once the ledger shows it, and a rerun with the same id never pays twice. With dry_run it pays nothing: it answers what the server asks (amount, pay_to, network) and the decision the spending policy would make (allow, ask: held for a person\'s approval, deny: with the rule).',
    inputSchema: schema(
      {
        url: str('the http(s) URL'),
        max_xno: str('the most to pay for this request, in XNO, e.g. "0.01"'),
        method: str('HTTP method (default GET)'),
        body: str('request body (sent as text)'),
        content_type: str('Content-Type of the body'),
        ...IDEMPOTENCY_KEY,
        dry_run: { type: 'boolean', description: 'pay nothing: answer what the server asks and whether the spending policy would allow it' },
        ...APPROVAL_ID,
      },
      ['url', 'max_xno'],
    ),
    writes: true,
    handler: async (session, input, signal) => {
      const url = URL.canParse(text(input, 'url')) ? new URL(text(input, 'url')) : undefined;
      if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw new NanoPayError('INVALID_REQUEST', 'url must be an http or https URL');
      const transport = publicOnly(session.env.NANOPAY_FETCH_ALLOW_HOSTS);
      const init: RequestInit = {
        // A redirect comes back to the model as it is: its target is checked like any URL when asked for.
        redirect: 'manual',
        method: typeof input.method === 'string' && input.method !== '' ? input.method.toUpperCase() : 'GET',
        ...(typeof input.body === 'string' ? { body: input.body } : {}),
        ...(typeof input.content_type === 'string' ? { headers: { 'content-type': input.content_type } } : {}),
      };
      if (input.dry_run === true) {
        return { ...(await quoteX402(session, url, init, { maxXno: text(input, 'max_xno'), transport, ...approvalOf(input), ...(signal === undefined ? {} : { signal }) })) };
      }
      const { response, payment } = await fetchWithPayment(session, url, init, {
        maxXno: text(input, 'max_xno'),
        transport,
        ...approvalOf(input),
        ...keyOf(input),
        ...(signal === undefined ? {} : { signal }),
      });
      const body = Buffer.from(await response.arrayBuffer());
      return {
        status: response.status,
        content_type: response.headers.get('content-type'),
        body: body.subarray(0, MAX_TOOL_BODY).toString('utf8'),
        truncated: body.length > MAX_TOOL_BODY,
        payment: payment === undefined ? null : { hash: payment.hash, pay_to: payment.pay_to, amount: payment.amount, amount_raw: payment.amount_raw, repeated: payment.repeated },
      };
    },
  },
];

/**
 * The name under which MCP clients and model endpoints see a tool: Claude
 * Desktop, OpenAI-backed clients and Copilot CLI accept only
 * ^[a-zA-Z0-9_-]{1,64}$, so wallet.send is offered as wallet_send.
 */
export const functionName = (tool: string): string => tool.replace(/\./g, '_');

/** A tool by its spec name (wallet.send) or its function name (wallet_send). */
export const lookupTool = (name: string): Tool | undefined => TOOLS.find((t) => t.name === name || functionName(t.name) === name);

export function findTool(name: string): Tool {
  const tool = lookupTool(name);
  if (tool === undefined) throw new NanoPayError('NOT_FOUND', `No tool named "${name}"`);
  return tool;
}

export type { Envelope } from '../http/respond.js';

/** Runs a tool and wraps the outcome in the spec's envelope; never throws. */
export async function runTool(session: Session, tool: Tool, input: unknown, signal?: AbortSignal): Promise<{ envelope: Envelope<Record<string, unknown>>; status: number }> {
  try {
    const data = await tool.handler(session, checkInput(tool, input), signal);
    return { envelope: { success: true, data, error: null }, status: 200 };
  } catch (error) {
    const failure = error instanceof NanoPayError ? error : new NanoPayError('INTERNAL_ERROR', 'Internal error', { cause: error });
    return { envelope: errorEnvelope(failure), status: failure.status };
  }
}
