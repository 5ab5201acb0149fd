import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A rate source on a loopback port (no network): answers every GET with what `answer` says at that
 * moment (by default nanopay's shape, dated now), and counts the requests it got.
 */
export interface RateSource {
  url: string;
  hits: number;
  answer: () => { status: number; body: string };
  close(): Promise<void>;
}

/** nanopay's documented shape, dated `time` (default now). */
export function ratesBody(rates: Record<string, string | number>, time: string | number = new Date().toISOString()): string {
  return JSON.stringify({ XNO: rates, time });
}

export async function startRateSource(rates: Record<string, string> = { EUR: '0.93', USD: '1.01' }): Promise<RateSource> {
  const source: Omit<RateSource, 'url' | 'close'> = { hits: 0, answer: () => ({ status: 200, body: ratesBody(rates) }) };
  const server = createServer((req, res) => {
    source.hits++;
    const { status, body } = source.answer();
    res.writeHead(status, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(source, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/rates`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
