import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { STATUS_CODES } from 'node:http';
import { NanoPayError } from '../errors.js';

/** The product's JSON answer: exactly one of `data` and `error` is null. */
export interface Envelope<T = unknown> {
  success: boolean;
  data: T | null;
  error: ({ error: string; message: string } & Record<string, unknown>) | null;
}

export function successEnvelope<T>(data: T): Envelope<T> {
  return { success: true, data, error: null };
}

export function errorEnvelope(failure: NanoPayError): Envelope<never> {
  // Facts a program acts on (a policy refusal's rule and room, an approval's id) beside code and message, and what to do next.
  return { success: false, data: null, error: { ...failure.details, error: failure.code, message: failure.message, ...(failure.hint === undefined ? {} : { hint: failure.hint }) } };
}

/**
 * What a caller may see of anything thrown: a NanoPayError as it is, anything
 * else (our bug) as a 500 whose message tells nothing of the internals.
 */
export function publicFailure(error: unknown): NanoPayError {
  return error instanceof NanoPayError ? error : new NanoPayError('INTERNAL_ERROR', 'Internal error', { cause: error });
}

export function sendJson(res: ServerResponse, status: number, payload: unknown): void {
  const body = JSON.stringify(payload);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' });
  res.end(body);
}

/**
 * An envelope written straight to a socket, for requests Node could not parse
 * (there is no ServerResponse for them); the connection closes after it.
 */
export function sendRawEnvelope(socket: Socket, failure: NanoPayError): void {
  const body = JSON.stringify(errorEnvelope(failure));
  socket.end(
    `HTTP/1.1 ${failure.status} ${STATUS_CODES[failure.status] ?? 'Error'}\r\n` +
      'content-type: application/json; charset=utf-8\r\n' +
      `content-length: ${Buffer.byteLength(body)}\r\n` +
      'cache-control: no-store\r\nconnection: close\r\n\r\n' +
      body,
  );
}
