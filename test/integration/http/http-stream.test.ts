import { request, type IncomingMessage } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NanoPayError } from '../../../src/errors.js';
import { startHttpServer, type HttpServer } from '../../../src/http/server.js';
import { sendStream } from '../../../src/http/stream.js';

/** sendStream of the one HTTP server module: what an export of any size is answered with. */
const PIECE = 'x'.repeat(64 * 1024);
const PIECES = 2000;

let server: HttpServer;
const log: string[] = [];
const source = { produced: 0, ended: false };

async function* pieces(): AsyncGenerator<string> {
  try {
    for (source.produced = 0; source.produced < PIECES; ) {
      source.produced++;
      yield PIECE;
    }
  } finally {
    source.ended = true;
  }
}

async function* failing(after: number): AsyncGenerator<string> {
  for (let i = 0; i < after; i++) yield `piece ${i}\n`;
  throw new NanoPayError('STORE_UNAVAILABLE', 'The store went away');
}

beforeAll(async () => {
  server = await startHttpServer({
    host: '127.0.0.1',
    port: 0,
    log: (line) => log.push(line),
    routes: [
      { method: 'GET', path: '/big', handle: ({ response, signal }) => sendStream(response, { 'content-type': 'text/plain' }, pieces(), signal) },
      { method: 'GET', path: '/fails-first', handle: ({ response, signal }) => sendStream(response, {}, failing(0), signal) },
      { method: 'GET', path: '/fails-later', handle: ({ response, signal }) => sendStream(response, {}, failing(3), signal) },
    ],
  });
});

afterAll(async () => {
  await server?.close();
});

function get(path: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => request(`${server.url}${path}`, resolve).on('error', reject).end());
}

/** Waits until `value()` has not changed for a while: the producer has stopped (or finished). */
async function settled(value: () => number): Promise<number> {
  for (let last = -1, same = 0; ; await sleep(50)) {
    const now = value();
    same = now === last ? same + 1 : 0;
    last = now;
    if (same >= 6) return now;
  }
}

describe('a streamed answer', () => {
  it('reads its source only as fast as the client takes it, then all of it; the source ends', async () => {
    const res = await get('/big');
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    res.pause();
    // The client reads nothing: what the sockets' buffers hold is produced, then the source waits.
    const held = await settled(() => source.produced);
    expect(held).toBeLessThan(PIECES / 5);
    let bytes = 0;
    res.on('data', (chunk: Buffer) => (bytes += chunk.length));
    await new Promise((resolve) => res.on('end', resolve).resume());
    expect(bytes).toBe(PIECES * PIECE.length);
    expect(source.ended).toBe(true);
  });

  it('a client that goes away ends the source, and is no failure of the server', async () => {
    source.ended = false;
    const res = await get('/big');
    await new Promise((resolve) => res.once('data', resolve));
    res.destroy();
    await settled(() => (source.ended ? 1 : 0));
    expect(source.ended).toBe(true);
    expect(source.produced).toBeLessThan(PIECES);
    await sleep(50);
    expect(log.filter((line) => line.includes('internal error'))).toEqual([]);
    expect(log.some((line) => line.startsWith('GET /big 200') && line.endsWith('(cut short)'))).toBe(true);
  });

  it('a failure before the first piece is the usual error envelope; after it, the answer is cut short (no final chunk)', async () => {
    const first = await fetch(`${server.url}/fails-first`);
    expect(first.status).toBe(503);
    expect(await first.json()).toMatchObject({ success: false, error: { error: 'STORE_UNAVAILABLE' } });
    const later = await fetch(`${server.url}/fails-later`);
    expect(later.status).toBe(200);
    await expect(later.text()).rejects.toThrow();
    expect((await fetch(`${server.url}/fails-first`)).status).toBe(503);
  });
});
