import { NanoPayError, redactUrl } from '../errors.js';
import { asObject, type Json } from './shape.js';
import { exchange } from './transport.js';

export interface HttpOptions {
  baseUrl: string;
  apiKey?: string;
  /** Per-attempt timeout. */
  timeoutMs?: number;
  /** Bound of one call, its retries included. */
  deadlineMs?: number;
  /** Retries for safe reads only; writes are never retried. */
  retries?: number;
}

export interface CallOptions {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  /** A read that may be repeated without effect (GET, or a POST that only reads). */
  safe: boolean;
  auth?: boolean;
  /** Stops the call (its retries too), e.g. at a caller's deadline. */
  signal?: AbortSignal;
  /** No retry of a safe call: for callers that retry themselves and report each failure. */
  once?: boolean;
}

/** Where the answer came from, for messages: never includes the API key or credentials in the URL. */
function describe(options: HttpOptions, call: CallOptions): string {
  return `${call.method} ${redactUrl(options.baseUrl.replace(/\/+$/, ''))}${call.path}`;
}

/**
 * Accepts the envelope `{success, data, error}` or a bare object, and turns
 * upstream failures into NanoPayErrors that keep the upstream code and message.
 */
function unwrap(status: number, text: string, where: string): Json {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    if (status >= 400) throw new NanoPayError('REQUEST_ERROR', `The service answered ${where} with HTTP ${status}`);
    throw new NanoPayError('PARSE_ERROR', `The service answered ${where} with something that is not JSON (HTTP ${status})`);
  }
  const body = asObject(parsed, where);
  const envelopeError = body.error;
  if (typeof envelopeError === 'object' && envelopeError !== null) {
    const e = envelopeError as Json;
    const code = typeof e.error === 'string' ? e.error : typeof e.code === 'string' ? e.code : 'REQUEST_ERROR';
    const message = typeof e.message === 'string' ? e.message : `The service refused ${where} (HTTP ${status})`;
    throw new NanoPayError(code, message);
  }
  if (typeof envelopeError === 'string' && envelopeError !== '') {
    throw new NanoPayError('REQUEST_ERROR', `The service refused ${where}: ${envelopeError}`);
  }
  if (status >= 400) throw new NanoPayError('REQUEST_ERROR', `The service answered ${where} with HTTP ${status}`);
  if ('success' in body && 'data' in body) {
    if (body.success === false || body.success === 'false') {
      throw new NanoPayError('REQUEST_ERROR', `The service reported a failure for ${where}`);
    }
    return asObject(body.data, where);
  }
  return body;
}

export async function call(options: HttpOptions, request: CallOptions): Promise<Json> {
  return (await markedCall(options, request)).data;
}

/** call, also telling whether the answer was marked as the sandbox's. */
export async function markedCall(options: HttpOptions, request: CallOptions): Promise<{ data: Json; sandbox: boolean }> {
  const where = describe(options, request);
  const headers: Record<string, string> = {};
  if (request.auth !== false && options.apiKey !== undefined) {
    // The documented header and the one the published toolset sends.
    headers.authorization = `Bearer ${options.apiKey}`;
    headers['x-api-key'] = options.apiKey;
  }
  const answer = await exchange({
    url: `${options.baseUrl.replace(/\/+$/, '')}${request.path}`,
    method: request.method,
    headers,
    body: request.body,
    timeoutMs: options.timeoutMs ?? 15_000,
    ...(options.deadlineMs === undefined ? {} : { deadlineMs: options.deadlineMs }),
    retries: request.safe && request.once !== true ? (options.retries ?? 2) : 0,
    signal: request.signal,
    party: 'service',
    where,
    hint: 'Check the API URL (NANOPAY_API_URL) and your network.',
  });
  return { data: unwrap(answer.status, answer.text, where), sandbox: answer.sandbox === true };
}
