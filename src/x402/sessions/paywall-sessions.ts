import type { IncomingHttpHeaders } from 'node:http';
import { RESPONDED, type Call, type Route } from '../../http/server.js';
import { sendJson } from '../../http/respond.js';
import { X402Refusal } from '../nano-exact.js';
import { HEADERS, decodeHeader, encodeHeader, isObject, type PaymentPayload, type SettleResponse } from '../protocol.js';
import type { SessionSeller } from './seller.js';
import { SESSIONS_PATH, SESSION_SCHEME } from './wire.js';

/** The payment a request carries in PAYMENT-SIGNATURE (or X-PAYMENT), decoded; undefined when none or not JSON in base64. */
export function presentedPayment(headers: IncomingHttpHeaders): Record<string, unknown> | undefined {
  const header = headers[HEADERS.signature] ?? headers[HEADERS.legacyPayment];
  if (header === undefined) return undefined;
  try {
    return decodeHeader(Array.isArray(header) ? (header[0] as string) : header, 'PAYMENT-SIGNATURE');
  } catch {
    return undefined;
  }
}

/** The payment, if it is a session's voucher (an `exact` payment, or none, is the paywall's). */
export function sessionPayment(decoded: Record<string, unknown> | undefined): PaymentPayload | undefined {
  const accepted = decoded?.accepted;
  if (!isObject(accepted) || accepted.scheme !== SESSION_SCHEME || !isObject(decoded?.payload)) return undefined;
  return decoded as unknown as PaymentPayload;
}

/** A refusal as the session endpoints answer it: 402 with the x402 reason and a message; anything else is thrown on. */
function refused(call: Call, error: unknown): typeof RESPONDED {
  if (!(error instanceof X402Refusal)) throw error;
  sendJson(call.response, error.reason === 'session_unknown' ? 404 : error.reason === 'session_busy' ? 409 : 402, { error: error.reason, message: error.message });
  return RESPONDED;
}

function withSettlement(call: Call, settlement: SettleResponse, body: unknown): typeof RESPONDED {
  call.response.setHeader(HEADERS.response, encodeHeader(settlement));
  call.response.setHeader('access-control-expose-headers', 'PAYMENT-RESPONSE');
  sendJson(call.response, 200, body);
  return RESPONDED;
}

/**
 * The session endpoints a paywall serves under /.well-known/x402/sessions:
 * open (POST, a deposit), top up (POST /:id/deposit), close (POST /:id/close,
 * signed by the session key) and read (GET /:id: its standing, and the
 * receipt once closed). They answer whoever calls: a deposit proves itself,
 * a close carries the session key's signature, and a session's standing is
 * no secret beyond its id.
 */
export function sessionRoutes(seller: SessionSeller): Route[] {
  const opened = async (call: Call, id?: string): Promise<typeof RESPONDED> => {
    try {
      const { session, settlement } = await seller.deposit(call.body, id);
      return withSettlement(call, settlement, seller.view(session));
    } catch (error) {
      return refused(call, error);
    }
  };
  const standing = async (call: Call, id: string): Promise<typeof RESPONDED> => {
    const s = seller.get(id);
    if (s === undefined) return refused(call, new X402Refusal('session_unknown', `No session ${id}`));
    sendJson(call.response, 200, { ...seller.view(s), ...(s.state === 'closed' ? { receipt: await seller.receipt(s) } : {}) });
    return RESPONDED;
  };
  return [
    { method: 'POST', path: SESSIONS_PATH, handle: (call) => opened(call) },
    { method: 'POST', path: `${SESSIONS_PATH}/:id/deposit`, handle: (call) => opened(call, call.params.id) },
    {
      method: 'POST',
      path: `${SESSIONS_PATH}/:id/close`,
      handle: async (call) => {
        try {
          await seller.closeByBuyer(call.params.id as string, call.body.signature);
        } catch (error) {
          return refused(call, error);
        }
        return standing(call, call.params.id as string);
      },
    },
    { method: 'GET', path: `${SESSIONS_PATH}/:id`, handle: (call) => standing(call, call.params.id as string) },
  ];
}
