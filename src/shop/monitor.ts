import { randomUUID } from 'node:crypto';
import { NanoPayError } from '../errors.js';
import type { NodeClient } from '../api/node-client.js';
import type { ApiClient } from '../api/client.js';
import type { CheckoutObservation } from '../ops/requests/checkout.js';
import { nodePaymentStatus, type RequestsHolder } from '../ops/requests/node-requests.js';
import { FINAL_STATUSES, type ShopRequest, type ShopStatus, type WebhookEvent, type WebhookType } from '../store/shop.js';
import type { Store } from '../store/store.js';

/** Where a request stands, read from the backend. */
export interface ShopReading {
  status: Exclude<ShopStatus, 'expired'>;
  paid_by?: string[];
  /** What arrived, when it is not the amount. */
  received_raw?: string;
}

export interface ShopStatusSource {
  read(request: ShopRequest): Promise<ShopReading>;
  /**
   * What changes whenever a payment to `address` may have changed a request's status there (on a node:
   * the blocks waiting to be received): a round skips the requests read since it last changed. Without
   * it, every round reads every unsettled request.
   */
  fingerprint?(address: string): Promise<string>;
}

/**
 * Node backend: nanopay's own verified view (blocks fetched, hashed, signature
 * checked, exact amount matched; nodePaymentStatus). Under- and overpaid are
 * reported for requests with a fresh address only: there every payment to the
 * account is the request's, while on a shared address the payment of another
 * amount nearest to a request may be anyone's (it would be guessed for every
 * open request near its amount), so it is no ground for an event.
 */
export function nodeStatusSource(holder: RequestsHolder, node: NodeClient): ShopStatusSource {
  return {
    read: async (request) => {
      const { record, isPaid, mismatch } = await nodePaymentStatus(holder, node, request.id);
      if (isPaid) return { status: 'paid', ...(record.paidBy === undefined ? {} : { paid_by: record.paidBy }) };
      if (mismatch !== undefined && record.fresh !== undefined) return { status: mismatch.kind, received_raw: mismatch.amount_raw };
      return { status: 'waiting' };
    },
    // A payment arriving, or one received, changes the account's list of receivable blocks.
    fingerprint: async (address) => (await node.pending(address)).sort().join(','),
  };
}

/** Service backend: the service's word (it keeps the request). */
export function serviceStatusSource(api: ApiClient): ShopStatusSource {
  return {
    read: async (request) => {
      const status = await api.paymentStatus(request.id);
      if (!status.isPaid) return { status: 'waiting' };
      return { status: 'paid', ...(status.blockHash === undefined ? {} : { paid_by: [status.blockHash] }) };
    },
  };
}

/** What a checkout page shows of a shop request. */
export function observationOf(request: ShopRequest): CheckoutObservation {
  const block = request.paid_by?.length === 1 ? request.paid_by[0] : undefined;
  return {
    paid: request.status === 'paid',
    ...(request.status === 'paid' && block !== undefined ? { block_hash: block } : {}),
    ...(request.expires_at === undefined ? {} : { expires_at: Date.parse(request.expires_at) }),
  };
}

/**
 * How long a round lets pass between two reads of a request of this age, where each read costs (a credit
 * on the service): every round while it is young, then a sixth of its age, at most an hour. A page
 * being looked at is read every interval whatever its age (the checkout watcher).
 */
function roundGap(ageMs: number, pollMs: number): number {
  return Math.min(3_600_000, Math.max(pollMs, ageMs / 6));
}

export interface ShopMonitorOptions {
  store: Store;
  source: ShopStatusSource;
  /** Between rounds over every unsettled request (pages watched are read more often, by the checkout watcher). */
  pollMs: number;
  /** A change was recorded (its event is queued). */
  onChange?: () => void;
  log?: (line: string) => void;
}

/**
 * Keeps the shop's requests' statuses: reads a request from the backend (one
 * read at a time per request, shared by whoever asks), and records each change
 * with its webhook event in one transaction of the store (so a change is
 * notified once, whichever instance sees it, and never lost to a crash). Every
 * `pollMs` it reads the unsettled requests (on a node, only those whose
 * address saw a payment come or go since their last read, and those expiring;
 * on the service, older requests less often: roundGap): one paid while no
 * server ran is found at the next start.
 */
export class ShopMonitor {
  private readonly reads = new Map<string, Promise<ShopRequest | undefined>>();
  /** Per request, its address's fingerprint when a round last read it. */
  private readonly readAt = new Map<string, string>();
  /** Per request, when a round last read it (sources without a fingerprint). */
  private readonly lastRound = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private current: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly options: ShopMonitorOptions) {}

  /** Reads request `id` now (or joins a read under way); its record after any change. */
  check(id: string): Promise<ShopRequest | undefined> {
    let read = this.reads.get(id);
    if (read === undefined) {
      read = this.read(id).finally(() => this.reads.delete(id));
      this.reads.set(id, read);
    }
    return read;
  }

  start(): void {
    this.stopped = false;
    const tick = (): void => {
      this.current = this.round().finally(() => {
        this.current = undefined;
        if (!this.stopped) this.timer = setTimeout(tick, this.options.pollMs);
      });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.current;
    await Promise.allSettled([...this.reads.values()]);
  }

  /** A payment to `address` may have landed (any address when undefined): reads its unsettled requests now. */
  async wake(address?: string): Promise<void> {
    const open = await this.options.store.shop.unsettled(10_000);
    await Promise.allSettled(open.filter((r) => address === undefined || r.receive_address === address).map((r) => this.check(r.id)));
  }

  /** The addresses of the unsettled requests (for a node's WebSocket). */
  async addresses(): Promise<string[]> {
    return [...new Set((await this.options.store.shop.unsettled(10_000)).map((r) => r.receive_address))];
  }

  /** One round over the unsettled requests (start runs one every `pollMs`). */
  async round(): Promise<void> {
    try {
      const open = await this.options.store.shop.unsettled(10_000);
      const fingerprint = this.options.source.fingerprint;
      const prints = new Map<string, string | undefined>();
      if (fingerprint !== undefined) {
        for (const address of new Set(open.map((r) => r.receive_address))) prints.set(address, await fingerprint(address).catch(() => undefined));
      }
      const now = Date.now();
      const due = open.filter((r) => {
        const expiring = r.status === 'waiting' && r.expires_at !== undefined && Date.parse(r.expires_at) <= now;
        if (expiring) return true;
        if (fingerprint === undefined) return now - (this.lastRound.get(r.id) ?? -Infinity) >= roundGap(now - Date.parse(r.created_at), this.options.pollMs);
        const print = prints.get(r.receive_address);
        return print === undefined || this.readAt.get(r.id) !== print;
      });
      for (const r of due) this.lastRound.set(r.id, now);
      // A few at a time: the backend is not flooded, and one slow read does not hold the rest.
      const worker = async (): Promise<void> => {
        for (let next = due.shift(); next !== undefined && !this.stopped; next = due.shift()) {
          const print = prints.get(next.receive_address);
          const read = await this.check(next.id).catch(() => undefined);
          if (read === undefined || FINAL_STATUSES.includes(read.status)) this.lastRound.delete(next.id);
          if (read === undefined || FINAL_STATUSES.includes(read.status) || print === undefined) this.readAt.delete(next.id);
          else this.readAt.set(next.id, print);
        }
      };
      await Promise.all(Array.from({ length: 4 }, worker));
    } catch (error) {
      this.options.log?.(`status round failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  private async read(id: string): Promise<ShopRequest | undefined> {
    const shop = this.options.store.shop;
    const request = await shop.get(id);
    if (request === undefined || FINAL_STATUSES.includes(request.status)) return request;
    let reading: ShopReading;
    try {
      reading = await this.options.source.read(request);
    } catch (error) {
      const failure = error instanceof NanoPayError ? `${error.code}: ${error.message}` : 'unexpected error';
      this.options.log?.(`status of ${id} failed (${failure}); retrying`);
      throw error;
    }
    // Paid wins over expired: a payment that landed is never hidden.
    const expired = reading.status === 'waiting' && request.expires_at !== undefined && Date.parse(request.expires_at) <= Date.now();
    const status: ShopStatus = expired ? 'expired' : reading.status;
    if (status === request.status) return request;
    const seq = request.events + 1;
    const next: ShopRequest = {
      ...request,
      status,
      events: seq,
      ...(reading.paid_by === undefined ? {} : { paid_by: reading.paid_by }),
      ...(reading.received_raw === undefined ? {} : { received_raw: reading.received_raw }),
    };
    const event: WebhookEvent | undefined =
      status === 'waiting'
        ? undefined
        : { id: `evt_${randomUUID().replaceAll('-', '')}`, type: `request.${status}` as WebhookType, created: Math.floor(Date.now() / 1000), request_seq: seq, data: { object: next }, delivery: { attempts: 0 } };
    if (await shop.change(request.status, event === undefined ? { ...next, events: request.events } : next, event)) {
      this.options.onChange?.();
      this.options.log?.(`request ${id}${request.order_id === undefined ? '' : ` (order ${request.order_id})`}: ${request.status} -> ${status}`);
      return event === undefined ? { ...next, events: request.events } : next;
    }
    // Another instance recorded a change first: its record is the truth.
    return shop.get(id);
  }
}
