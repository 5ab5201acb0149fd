import WebSocket from 'ws';
import { redactUrl } from '../errors.js';
import { proxyFor } from './proxy.js';
import { TunnelAgent } from './tunnel.js';

/** A confirmed block as the node's `confirmation` topic tells it. */
export interface Confirmation {
  hash: string;
  /** The account whose chain the block is on. */
  account: string;
  subtype: string;
  /** For a send: the destination. */
  linkAsAccount?: string;
}

export interface FeedHandlers {
  onConfirmation(confirmation: Confirmation): void;
  /** After every (re)connect once the subscription is acknowledged: poll now, so nothing confirmed while disconnected is missed. */
  onConnected(): void;
  onDisconnected?(reason: string): void;
}

const PING_MS = 15_000;
const ACK_WAIT_MS = 3_000;
const MAX_BACKOFF_MS = 10_000;

function str(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The confirmation in a node's message, when it is one. */
function confirmationOf(data: unknown): Confirmation | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  const m = data as { topic?: unknown; message?: { hash?: unknown; account?: unknown; block?: Record<string, unknown> } };
  if (m.topic !== 'confirmation' || typeof m.message !== 'object' || m.message === null) return undefined;
  const block = m.message.block ?? {};
  const hash = str(m.message.hash);
  const account = str(m.message.account) ?? str(block.account);
  if (hash === undefined || account === undefined) return undefined;
  const link = str(block.link_as_account);
  return { hash: hash.toUpperCase(), account, subtype: str(block.subtype) ?? '', ...(link === undefined ? {} : { linkAsAccount: link }) };
}

/**
 * The node's `confirmation` topic for a set of accounts, kept up: a JSON ping
 * keepalive, reconnects with backoff, and the whole account list sent again
 * with every `subscribe` (a node replaces the filter, common proxies add to
 * it). Delivery is not guaranteed and may repeat: handlers must be idempotent
 * and poll on `onConnected`.
 */
export class ConfirmationFeed {
  private socket: WebSocket | undefined;
  private closed = false;
  private backoff = 250;
  private timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly url: string,
    private accounts: string[],
    private readonly handlers: FeedHandlers,
  ) {
    this.connect();
  }

  /** Follows another list of accounts from now on. */
  follow(accounts: string[]): void {
    this.accounts = accounts;
    this.subscribe();
  }

  close(): void {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.socket?.terminate();
  }

  private later(ms: number, fn: () => void): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, ms);
    timer.unref();
    this.timers.add(timer);
    return timer;
  }

  private subscribe(): void {
    if (this.socket?.readyState !== WebSocket.OPEN) return;
    this.socket.send(JSON.stringify({ action: 'subscribe', topic: 'confirmation', ack: true, options: { accounts: this.accounts } }));
  }

  private connect(): void {
    if (this.closed) return;
    // Through HTTPS_PROXY (wss) or HTTP_PROXY (ws) unless NO_PROXY or loopback says not: a CONNECT tunnel, as browsers do.
    let agent: TunnelAgent | undefined;
    try {
      const proxy = proxyFor(new URL(this.url));
      if (proxy !== undefined) agent = new TunnelAgent(proxy, this.url.startsWith('wss:'));
    } catch (error) {
      this.handlers.onDisconnected?.(`the WebSocket ${redactUrl(this.url)} is not used: ${(error as Error).message}`);
      this.closed = true;
      return;
    }
    const socket = new WebSocket(this.url, { handshakeTimeout: 10_000, ...(agent === undefined ? {} : { agent }) });
    this.socket = socket;
    let heard = true;
    let opened = false;
    let connected = false;
    let ping: NodeJS.Timeout | undefined;
    let ackWait: NodeJS.Timeout | undefined;
    const ready = (): void => {
      if (connected) return;
      connected = true;
      this.backoff = 250;
      if (ackWait !== undefined) clearTimeout(ackWait);
      this.handlers.onConnected();
    };
    const keepalive = (): void => {
      // Nothing heard since the last ping (not even its pong): the connection is dead without saying so.
      if (!heard) return void socket.terminate();
      heard = false;
      if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ action: 'ping' }));
      ping = this.later(PING_MS, keepalive);
    };
    // The feed serves whoever runs it and never keeps the process alive by itself.
    socket.on('upgrade', (response) => response.socket.unref());
    socket.on('open', () => {
      opened = true;
      this.subscribe();
      // A proxy that never acknowledges still delivers: go on after a short wait.
      ackWait = this.later(ACK_WAIT_MS, ready);
      ping = this.later(PING_MS, keepalive);
    });
    socket.on('message', (raw) => {
      heard = true;
      let data: unknown;
      try {
        data = JSON.parse(raw.toString());
      } catch {
        return;
      }
      if (typeof data === 'object' && data !== null && (data as { ack?: unknown }).ack === 'subscribe') ready();
      const confirmation = confirmationOf(data);
      if (confirmation !== undefined) this.handlers.onConfirmation(confirmation);
    });
    socket.on('error', () => undefined);
    socket.on('close', (code) => {
      for (const t of [ping, ackWait]) if (t !== undefined) clearTimeout(t);
      if (this.closed) return;
      // Told once per lost connection, not for each failed attempt to get it back.
      if (opened) this.handlers.onDisconnected?.(`the WebSocket ${redactUrl(this.url)} closed (${code})`);
      const wait = this.backoff;
      this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF_MS);
      this.later(wait, () => this.connect());
    });
  }
}
