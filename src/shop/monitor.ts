import { NanoPayError } from '../errors.js';
import type { NodeClient } from '../api/node-client.js';
import type { ApiClient } from '../api/client.js';
import { observationOf as readingObservation, type CheckoutObservation } from '../ops/requests/checkout.js';
import { readingOf, type RequestReading } from '../ops/requests/matching.js';
import { nodePaymentStatus, type RequestsHolder } from '../ops/requests/node-requests.js';
import { serviceVerdict } from '../ops/requests/service-status.js';
import { payersOf } from '../ops/ledger/proofs.js';
import { FINAL_STATUSES, newEvent, type ShopRequest, type ShopStatus, type WebhookEvent, type WebhookType } from '../store/shop.js';
import type { Store } from '../store/store.js';

/** Where a request stands, read from the backend: what `status` tells (the monitor adds the expiry of a waiting one). */
export type ShopReading = RequestReading;

export interface ShopStatusSource {
  read(request: ShopRequest): Promise<ShopReading>;
  /**
   * What changes whenever a payment to `address` may have changed a request's status there (on a node:
   * the blocks waiting to be received): a round skips the requests read since it last changed. Without
   * it, every round reads every unsettled request.
   */
  fingerprint?(address: string): Promise<string>;
  /** The accounts that sent these blocks to `address`, from the blocks themselves (proved). */
  payers(address: string, blocks: string[]): Promise<string[]>;
}

/**
 * Node backend: nanopay's own verified view, as `status` tells it
 * (nodePaymentStatus: blocks fetched, hashed, signature checked, the exact
 * amount matched; under- and overpaid on a fresh address only, where every
 * payment to the account is the request's; paid late after the expiry).
 */
export function nodeStatusSource(holder: RequestsHolder, node: NodeClient): ShopStatusSource {
  return {
    read: async (request) => readingOf(await nodePaymentStatus(holder, node, request.id)),
    // A payment arriving, or one received, changes the account's list of receivable blocks.
    fingerprint: async (address) => (await node.pending(address)).sort().join(','),
    payers: (address, blocks) => payersOf(node, address, blocks),
  };
}

/** Service backend: the service's word (it keeps the request), as `status` tells it, with the shop's expiry when it gave one. */
export function serviceStatusSource(api: ApiClient): ShopStatusSource {
  return {
    read: async (request) => {
      const status = await api.paymentStatus(request.id);
      return readingOf(await serviceVerdict(api, status, request.expires_at === undefined ? status.expiresAt : Date.parse(request.expires_at)));
    },
    payers: (address, blocks) => payersOf(api, address, blocks),
  };
}

/** What a checkout page shows of a shop request. */
export function observationOf(request: ShopRequest): CheckoutObservation {
  return readingObservation(request, request.receive_address, request.expires_at);
}

/** How long after its expiry a request is still read for a late payment (on the service each read costs a credit). */
const LATE_PAYMENT_WATCH_MS = 24 * 3_600_000;

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
  /** A change was recorded (its event, if any, is queued): the request as it is now. */
  onChange?: (request: ShopRequest) => void;
  log?: (line: string) => void;
  /** The clock rounds and expiries are reckoned by (tests move their own). */
  now?: () => number;
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

  private readonly now: () => number;

  constructor(private readonly options: ShopMonitorOptions) {
    this.now = options.now ?? Date.now;
  }

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

  private unsettled(): Promise<ShopRequest[]> {
    return this.options.store.shop.unsettled(10_000, new Date(this.now() - LATE_PAYMENT_WATCH_MS).toISOString());
  }

  /** A payment to `address` may have landed (any address when undefined): reads its unsettled requests now. */
  async wake(address?: string): Promise<void> {
    const open = await this.unsettled();
    await Promise.allSettled(open.filter((r) => address === undefined || r.receive_address === address).map((r) => this.check(r.id)));
  }

  /** The addresses of the unsettled requests (for a node's WebSocket). */
  async addresses(): Promise<string[]> {
    return [...new Set((await this.unsettled()).map((r) => r.receive_address))];
  }

  /** One round over the unsettled requests (start runs one every `pollMs`). */
  async round(): Promise<void> {
    try {
      const open = await this.unsettled();
      const fingerprint = this.options.source.fingerprint;
      const prints = new Map<string, string | undefined>();
      if (fingerprint !== undefined) {
        for (const address of new Set(open.map((r) => r.receive_address))) prints.set(address, await fingerprint(address).catch(() => undefined));
      }
      const now = this.now();
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
    const expired = reading.status === 'waiting' && request.expires_at !== undefined && Date.parse(request.expires_at) <= this.now();
    const status: ShopStatus = expired ? 'expired' : reading.status;
    // A second part of an underpayment changes what arrived and what is left: the shop (and the page) must know.
    if (status === request.status && reading.received_raw === request.received_raw && reading.rest_raw === request.rest_raw) return request;
    const seq = request.events + 1;
    // What the reading found replaces what an earlier one did (an underpaid request paid in full names no rest).
    const { paid_by: _paidBy, payers: _payers, received_raw: _received, rest_raw: _rest, ...kept } = request;
    const blocks = reading.paid_by ?? [];
    const sameBlocks = blocks.join(',') === (request.paid_by ?? []).join(',');
    const payers = blocks.length === 0 ? [] : sameBlocks && request.payers !== undefined ? request.payers : await this.options.source.payers(request.receive_address, blocks);
    const paidNow = (status === 'paid' || status === 'paid_late') && request.paid_at === undefined;
    const next: ShopRequest = {
      ...kept,
      status,
      events: seq,
      ...(paidNow ? { paid_at: new Date(this.now()).toISOString() } : {}),
      ...(reading.paid_by === undefined ? {} : { paid_by: reading.paid_by }),
      ...(payers.length === 0 ? {} : { payers }),
      ...(reading.received_raw === undefined ? {} : { received_raw: reading.received_raw }),
      ...(reading.rest_raw === undefined ? {} : { rest_raw: reading.rest_raw }),
    };
    const event: WebhookEvent | undefined = status === 'waiting' ? undefined : newEvent(`request.${status}` as WebhookType, next);
    const recorded = event === undefined ? { ...next, events: request.events } : next;
    if (await shop.change(request.status, recorded, event)) {
      this.options.onChange?.(recorded);
      this.options.log?.(`request ${id}${request.order_id === undefined ? '' : ` (order ${request.order_id})`}: ${request.status} -> ${status}`);
      return recorded;
    }
    // Another instance recorded a change first: its record is the truth.
    return shop.get(id);
  }
}
