import type { Confirmation } from '../api/node-ws.js';
import { NanoPayError } from '../errors.js';
import type { Session } from './session.js';

/** With a live WebSocket, a poll still runs this often: delivery is not guaranteed. */
export const SAFETY_POLL_MS = 60_000;

/** A wait that ends early when woken (a confirmation, a reconnect), and fails with CANCELLED on the signal. */
export class Wakeup {
  private pending = false;
  private resolve: (() => void) | undefined;

  wake(): void {
    this.pending = true;
    this.resolve?.();
  }

  async wait(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) throw new NanoPayError('CANCELLED', 'Stopped watching');
    if (!this.pending) {
      let timer: NodeJS.Timeout | undefined;
      let onAbort: (() => void) | undefined;
      const aborted = await new Promise<boolean>((resolve) => {
        this.resolve = () => resolve(false);
        timer = setTimeout(() => resolve(false), ms);
        onAbort = () => resolve(true);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
      clearTimeout(timer);
      if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort);
      this.resolve = undefined;
      if (aborted) throw new NanoPayError('CANCELLED', 'Stopped watching');
    }
    this.pending = false;
  }
}

export interface LiveFeed {
  /** Connected and subscribed: polling can slow down. */
  live(): boolean;
  follow(accounts: string[]): void;
  close(): void;
}

/**
 * Confirmations for `accounts` from the node's WebSocket, when one is known
 * (NANOPAY_NODE_WS_URL or node-ws-url): each one `relevant` calls `check` (with
 * the confirmation), and so does every (re)connect and loss of the connection
 * (without one), so the caller looks at once. Undefined without a WebSocket:
 * the caller polls as before. The feed never keeps the process alive by itself.
 */
export async function confirmations(
  session: Pick<Session, 'nodeWsUrl'>,
  accounts: string[],
  check: (confirmation?: Confirmation) => void,
  relevant: (c: Confirmation) => boolean,
): Promise<LiveFeed | undefined> {
  const url = session.nodeWsUrl();
  if (url === undefined) return undefined;
  // Loaded only here: most commands never open a WebSocket.
  const ws = await import('../api/node-ws.js');
  let connected = false;
  const feed = new ws.ConfirmationFeed(url, accounts, {
    onConfirmation: (c) => {
      if (relevant(c)) check(c);
    },
    onConnected: () => {
      connected = true;
      check();
    },
    onDisconnected: () => {
      connected = false;
      check();
    },
  });
  return { live: () => connected, follow: (list) => feed.follow(list), close: () => feed.close() };
}
