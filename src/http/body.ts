import type { IncomingMessage } from 'node:http';
import { NanoPayError } from '../errors.js';

/**
 * Reads the whole body, refusing more than `maxBytes` without waiting for the
 * rest: the reading stops and the caller answers and closes the connection.
 */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const tooLarge = (): NanoPayError => new NanoPayError('PAYLOAD_TOO_LARGE', `Request bodies are limited to ${maxBytes} bytes`);
  if (Number(req.headers['content-length'] ?? 0) > maxBytes) return Promise.reject(tooLarge());
  if (req.readableEnded) return Promise.resolve(Buffer.alloc(0));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onGone);
      req.off('error', onGone);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= maxBytes) {
        chunks.push(chunk);
        return;
      }
      stop();
      req.pause();
      reject(tooLarge());
    };
    const onEnd = (): void => {
      stop();
      resolve(Buffer.concat(chunks));
    };
    const onGone = (): void => {
      stop();
      reject(new NanoPayError('CANCELLED', 'The client went away before sending the whole body'));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('close', onGone);
    req.on('error', onGone);
  });
}

const JSON_TYPE = /^application\/json\s*(;|$)/i;

/**
 * The body as a JSON object; no body (or only whitespace) is `{}` and needs no
 * Content-Type. With `requireJsonType`, a body sent as anything but
 * application/json is refused: a web page can send text/plain without asking.
 */
export function parseJsonObject(bytes: Buffer, contentType: string | undefined, requireJsonType: boolean): Record<string, unknown> {
  const text = bytes.toString('utf8');
  if (text.trim() === '') return {};
  if (requireJsonType && !JSON_TYPE.test(contentType ?? '')) {
    throw new NanoPayError('UNSUPPORTED_MEDIA_TYPE', 'A request body must be JSON, sent with Content-Type: application/json');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new NanoPayError('INVALID_JSON', 'The body is not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new NanoPayError('INVALID_REQUEST', 'The body must be a JSON object');
  return parsed as Record<string, unknown>;
}

const FORM_TYPE = /^application\/x-www-form-urlencoded\s*(;|$)/i;

/** An HTML form's fields (the first value of each); no body is `{}`. Anything but a urlencoded form is refused. */
export function parseFormObject(bytes: Buffer, contentType: string | undefined): Record<string, string> {
  const text = bytes.toString('utf8');
  if (text.trim() === '') return {};
  if (!FORM_TYPE.test(contentType ?? '')) {
    throw new NanoPayError('UNSUPPORTED_MEDIA_TYPE', 'This form must be sent as application/x-www-form-urlencoded');
  }
  // No prototype: a field named __proto__ is a field like any other.
  const fields: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [name, value] of new URLSearchParams(text)) if (!Object.hasOwn(fields, name)) fields[name] = value;
  return fields;
}
