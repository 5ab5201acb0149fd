import type { IncomingMessage, ServerResponse } from 'node:http';
import { NanoPayError } from '../errors.js';

/**
 * Reads a JSON object body, refusing more than `maxBytes` without waiting for
 * the rest (the caller answers and closes the connection).
 */
export function readJsonBody(req: IncomingMessage, maxBytes: number): Promise<Record<string, unknown>> {
  const tooLarge = (): NanoPayError => new NanoPayError('PAYLOAD_TOO_LARGE', `Bodies are limited to ${maxBytes} bytes`, { status: 413 });
  return new Promise((resolve, reject) => {
    if (Number(req.headers['content-length'] ?? 0) > maxBytes) {
      reject(tooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        reject(tooLarge());
        req.pause();
      } else chunks.push(chunk);
    });
    req.on('error', reject);
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8').trim();
      if (text === '') return resolve({});
      try {
        const parsed = JSON.parse(text) as unknown;
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) reject(new NanoPayError('INVALID_REQUEST', 'The body must be a JSON object'));
        else resolve(parsed as Record<string, unknown>);
      } catch {
        reject(new NanoPayError('INVALID_JSON', 'The body is not valid JSON'));
      }
    });
  });
}

export function sendJson(res: ServerResponse, status: number, payload: unknown): void {
  const body = JSON.stringify(payload);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' });
  res.end(body);
}
