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
/**
 * Accounts per filter message. The reference node (V27.1) drops the connection on a message above 16 MiB
 * (Boost.Beast's default read limit; 250,000 accounts are 17 MB) and parses each one whole on its WebSocket
 * thread (100,000 accounts took it 0.6 s, measured here): 5,000 (about 340 KB) keep each message short.
 */
const FILTER_CHUNK = 5_000;

function chunks(list: string[]): string[][] {
  const out: string[][] = [];
  for (let i = 0; i < list.length; i += FILTER_CHUNK) out.push(list.slice(i, i + FILTER_CHUNK));
  return out;
}
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
 * keepalive, reconnects with backoff. Each connection gets the whole filter
 * once (`subscribe`, then `update` with `accounts_add`, FILTER_CHUNK accounts
 * a message); later changes go as `update` deltas (`accounts_add`,
 * `accounts_del`), never the whole list again. Delivery is not guaranteed and
 * may repeat: handlers must be idempotent and poll on `onConnected`.
 */
export class ConfirmationFeed {
  private readonly accounts: Set<string>;
  private socket: WebSocket | undefined;
  private closed = false;
  private backoff = 250;
  private timers = new Set<NodeJS.Timeout>();
  private sequence = 0;

  constructor(
    private readonly url: string,
    accounts: Iterable<string>,
    private readonly handlers: FeedHandlers,
  ) {
    this.accounts = new Set(accounts);
    this.connect();
  }

  /** Follows exactly `accounts` from now on (only the difference is sent). */
  follow(accounts: string[]): void {
    const next = new Set(accounts);
    this.update(
      [...next].filter((a) => !this.accounts.has(a)),
      [...this.accounts].filter((a) => !next.has(a)),
    );
  }

  /** Follows `add` too, and `remove` no more. */
  update(add: string[], remove: string[]): void {
    const added = add.filter((a) => !this.accounts.has(a) && this.accounts.add(a));
    const removed = remove.filter((a) => this.accounts.delete(a));
    // Not connected: the next connection sends the whole filter.
    if (this.socket?.readyState !== WebSocket.OPEN) return;
    for (const part of chunks(added)) this.send({ action: 'update', topic: 'confirmation', options: { accounts_add: part } });
    for (const part of chunks(removed)) this.send({ action: 'update', topic: 'confirmation', options: { accounts_del: part } });
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

  private send(message: Record<string, unknown>): void {
    this.socket?.send(JSON.stringify(message));
  }

  /** The whole filter, as a new connection needs it: its last message's id, whose ack says the node has it all. */
  private subscribe(): string {
    const [first = [], ...rest] = chunks([...this.accounts]);
    const id = (): string => `nanopay-${++this.sequence}`;
    // An empty list is a filter that lets nothing through (a node's, verified); no `accounts` would let everything through.
    let last = id();
    this.send({ action: 'subscribe', topic: 'confirmation', ack: true, id: last, options: { accounts: first } });
    for (const part of rest) {
      last = id();
      this.send({ action: 'update', topic: 'confirmation', ack: true, id: last, options: { accounts_add: part } });
    }
    return last;
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
    let last = '';
    let acks = 0;
    // A proxy that never acknowledges still delivers: go on after a short wait, longer while acks still come (a big filter).
    const awaitAck = (seen: number): void => {
      ackWait = this.later(ACK_WAIT_MS, () => (acks > seen ? awaitAck(acks) : ready()));
    };
    socket.on('open', () => {
      opened = true;
      last = this.subscribe();
      awaitAck(0);
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
      const ack = typeof data === 'object' && data !== null ? (data as { ack?: unknown; id?: unknown }) : {};
      if (ack.ack === 'subscribe' || ack.ack === 'update') {
        acks++;
        // The last message's ack: the node has the whole filter. A proxy that drops ids acknowledges the subscribe alone.
        if (ack.id === last || (ack.id === undefined && ack.ack === 'subscribe' && this.accounts.size <= FILTER_CHUNK)) ready();
      }
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
