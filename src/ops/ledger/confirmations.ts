import type { Confirmation } from '../../api/node-ws.js';
import type { Session } from '../session.js';

/** With a live WebSocket, a poll still runs this often: delivery is not guaranteed. */
export const SAFETY_POLL_MS = 60_000;

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
  const ws = await import('../../api/node-ws.js');
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
