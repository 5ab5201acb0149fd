import type { ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { RESPONDED } from './server.js';

/** The pieces of `iterator` from `first` on; ended early (the client gone), it ends the iterator too. */
async function* resumed(first: IteratorResult<string>, iterator: AsyncIterator<string>): AsyncGenerator<string> {
  try {
    for (let next = first; next.done !== true; next = await iterator.next()) yield next.value;
  } finally {
    await iterator.return?.();
  }
}

/**
 * A 200 answer whose body is `pieces` (an export of any length), written with backpressure: the next piece
 * is asked for only once the client took the last, so the answer holds one piece in memory. The first piece
 * is read before anything is sent, so a failure then is the usual error envelope; a later one cuts the
 * answer short (no final chunk: the client sees it incomplete), as does `signal` (the client gone, the
 * server closing).
 */
export async function sendStream(res: ServerResponse, headers: Record<string, string>, pieces: AsyncIterable<string>, signal: AbortSignal): Promise<typeof RESPONDED> {
  const iterator = pieces[Symbol.asyncIterator]();
  const first = await iterator.next();
  res.writeHead(200, { ...headers, 'cache-control': 'no-store' });
  try {
    await pipeline(Readable.from(resumed(first, iterator)), res, { signal });
  } catch (error) {
    // The client went away or the server is closing: cut short, as the request's log line says; no failure of ours.
    if (signal.aborted) return RESPONDED;
    throw error;
  }
  return RESPONDED;
}
