import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NanoPayError } from '../errors.js';
import { errorEnvelope, sendJson } from '../http/respond.js';
import { xnoToRaw } from '../nano/index.js';
import { settleOrder, settlementHeader, type Paywall, type SettleOrder } from './paywall.js';
import { canonicalPath } from './request-path.js';
import { requestOrigin } from './origin.js';

/** The price of a request in XNO ("0.001"); undefined or "0" lets it through free. */
export type RequestPrice = string | ((req: IncomingMessage) => string | undefined);

export type X402Middleware = (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => Promise<void>;

type Chunk = string | Uint8Array;

/**
 * Holds what the handler writes until its outcome is known: the status below
 * 400 settles the payment, then the answer goes out with PAYMENT-RESPONSE.
 */
function holdResponse(res: ServerResponse, done: (body: Buffer) => void): void {
  const chunks: Buffer[] = [];
  const take = (chunk: unknown, encoding?: unknown): void => {
    if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
    chunks.push(typeof chunk === 'string' ? Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8') : Buffer.from(chunk as Chunk));
  };
  res.writeHead = ((status: number, ...rest: unknown[]) => {
    res.statusCode = status;
    const headers = rest.find((r) => typeof r === 'object' && r !== null);
    if (headers !== undefined) for (const [name, value] of Object.entries(headers as Record<string, string | string[] | number>)) res.setHeader(name, value);
    return res;
  }) as typeof res.writeHead;
  res.write = ((chunk: unknown, encoding?: unknown, callback?: unknown) => {
    take(chunk, encoding);
    const cb = [encoding, callback].find((f) => typeof f === 'function') as (() => void) | undefined;
    cb?.();
    return true;
  }) as typeof res.write;
  res.end = ((chunk?: unknown, encoding?: unknown) => {
    take(chunk, encoding);
    done(Buffer.concat(chunks));
    return res;
  }) as typeof res.end;
}

/**
 * What `nanopay paywall` does, for a node:http (or Express-style) handler. The
 * request's path is made canonical first (or refused with 400, see
 * canonicalPath) and `req.url` rewritten to it, so the price function and the
 * handler see the same path. A priced request without a valid payment gets
 * 402 with PAYMENT-REQUIRED. A valid one on a safe method (GET, HEAD) runs the
 * handler (`next`) with its answer held: an answer below 400 settles the
 * payment and goes out with PAYMENT-RESPONSE, anything else goes out as it is
 * and the block is never published. On any other method (or with `settle:
 * 'before'`) the payment is settled first and the handler runs only once paid.
 */
export function x402Middleware(paywall: Paywall, price: RequestPrice, options: { settle?: SettleOrder } = {}): X402Middleware {
  return async (req, res, next) => {
    const target = req.url ?? '/';
    const mark = target.indexOf('?');
    try {
      req.url = `${canonicalPath(mark === -1 ? target : target.slice(0, mark))}${mark === -1 ? '' : target.slice(mark)}`;
    } catch (error) {
      return sendJson(res, 400, errorEnvelope(error as NanoPayError));
    }
    const xno = typeof price === 'function' ? price(req) : price;
    const priceRaw = xno === undefined ? 0n : xnoToRaw(xno);
    if (priceRaw === 0n) return next();
    const resource = `${requestOrigin(req.headers.host, 'http://localhost')}${(req.url ?? '/').split('?')[0] as string}`;
    const admission = await paywall.admit(req.headers, resource, priceRaw);
    if (!admission.paid) {
      for (const [name, value] of Object.entries(admission.headers)) res.setHeader(name, value);
      return sendJson(res, 402, {});
    }
    const { verified } = admission;
    if (settleOrder(req.method ?? 'GET', options.settle) === 'before') {
      const settlement = await paywall.settle(verified).catch(() => undefined);
      if (settlement === undefined) return sendJson(res, 502, { error: 'settlement failed' });
      for (const [name, value] of Object.entries(settlementHeader(settlement))) res.setHeader(name, value);
      if (!settlement.success) return sendJson(res, 402, {});
      res.setHeader('access-control-expose-headers', 'PAYMENT-RESPONSE');
      return next();
    }
    const original = { writeHead: res.writeHead, write: res.write, end: res.end };
    holdResponse(res, (body) => {
      Object.assign(res, original);
      const send = (status: number, extra: Record<string, string>, payload: Buffer): void => {
        for (const [name, value] of Object.entries(extra)) res.setHeader(name, value);
        res.statusCode = status;
        res.setHeader('content-length', payload.length);
        res.end(payload);
      };
      if (res.statusCode >= 400) {
        paywall.release(verified);
        return send(res.statusCode, {}, body);
      }
      void paywall.settle(verified).then(
        (settlement) => {
          if (settlement.success) return send(res.statusCode, { ...settlementHeader(settlement), 'access-control-expose-headers': 'PAYMENT-RESPONSE' }, body);
          res.removeHeader('content-type');
          return send(402, { ...settlementHeader(settlement), 'content-type': 'application/json; charset=utf-8' }, Buffer.from('{}'));
        },
        () => send(502, { 'content-type': 'application/json; charset=utf-8' }, Buffer.from('{"error":"settlement failed"}')),
      );
    });
    try {
      next();
    } catch (error) {
      Object.assign(res, original);
      paywall.release(verified);
      throw error;
    }
  };
}
