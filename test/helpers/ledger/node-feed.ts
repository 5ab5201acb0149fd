import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import { hashBlock, type StateBlock } from '../../../src/nano/index.js';

/**
 * The node's own view of each block, from its WebSocket, timed in this process (performance.now()): when it
 * processed the block (`new_unconfirmed_block`, sent as the block enters the ledger, whoever published it) and
 * when it confirmed it (`confirmation`). Every block of the node, unfiltered: a lone dev node carries only a
 * test's own blocks.
 */
export interface NodeFeed {
  /** When the node said it processed the block, if it did yet. */
  processedAt(hash: string): number | undefined;
  confirmedAt(hash: string): number | undefined;
  /** Resolves with the moment of the block's confirmation (or at once if it was already heard). */
  confirmed(hash: string, timeoutMs?: number): Promise<number>;
  close(): void;
}

export async function nodeFeed(wsUrl: string): Promise<NodeFeed> {
  const socket = new WebSocket(wsUrl);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  const processed = new Map<string, number>();
  const confirmed = new Map<string, number>();
  const waiting = new Map<string, (at: number) => void>();
  let acks = 0;
  let acked: () => void = () => undefined;
  const subscribed = new Promise<void>((resolve) => (acked = resolve));
  socket.on('message', (raw: Buffer) => {
    const at = performance.now();
    const data = JSON.parse(raw.toString()) as { ack?: string; topic?: string; message?: Record<string, unknown> };
    if (data.ack === 'subscribe' && ++acks === 2) acked();
    if (data.topic === 'new_unconfirmed_block' && data.message !== undefined) {
      const hash = hashBlock(data.message as unknown as StateBlock);
      if (!processed.has(hash)) processed.set(hash, at);
    }
    if (data.topic === 'confirmation' && typeof data.message?.hash === 'string') {
      const hash = data.message.hash.toUpperCase();
      if (confirmed.has(hash)) return;
      confirmed.set(hash, at);
      waiting.get(hash)?.(at);
    }
  });
  for (const topic of ['new_unconfirmed_block', 'confirmation']) socket.send(JSON.stringify({ action: 'subscribe', topic, ack: true }));
  await subscribed;
  return {
    processedAt: (hash) => processed.get(hash.toUpperCase()),
    confirmedAt: (hash) => confirmed.get(hash.toUpperCase()),
    confirmed: (hash, timeoutMs = 30_000) => {
      const key = hash.toUpperCase();
      const heard = confirmed.get(key);
      if (heard !== undefined) return Promise.resolve(heard);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the node's WebSocket did not confirm ${key} within ${timeoutMs} ms`)), timeoutMs);
        waiting.set(key, (at) => {
          clearTimeout(timer);
          waiting.delete(key);
          resolve(at);
        });
      });
    },
    close: () => socket.terminate(),
  };
}
