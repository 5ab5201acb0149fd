import { NanoPayError } from '../errors.js';
import { RESPONDED, type Call } from '../http/server.js';

const HEARTBEAT_MS = 15_000;

/**
 * The dashboard's live updates: each open orders list holds a Server-Sent
 * Events stream, told when a request is made or changes (the page then fetches
 * its list again). Bounded in number: beyond it a page keeps its reload link.
 */
export class LiveChanges {
  private readonly streams = new Set<Call['response']>();

  constructor(private readonly max = 50) {}

  /** Something changed: every open list looks again. */
  changed(): void {
    for (const res of this.streams) res.write('event: change\ndata: {}\n\n');
  }

  stream(call: Call): Promise<typeof RESPONDED> {
    if (this.streams.size >= this.max) throw new NanoPayError('RATE_LIMIT_EXCEEDED', 'Too many dashboard pages are open for live updates; reload instead', { status: 503 });
    const res = call.response;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
    res.write(': live\n\n');
    this.streams.add(res);
    return new Promise((resolve) => {
      const heartbeat = setInterval(() => res.write(': still here\n\n'), HEARTBEAT_MS);
      call.signal.addEventListener(
        'abort',
        () => {
          clearInterval(heartbeat);
          this.streams.delete(res);
          if (!res.writableEnded) res.end();
          resolve(RESPONDED);
        },
        { once: true },
      );
    });
  }
}
