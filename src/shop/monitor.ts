import { NanoPayError } from '../errors.js';
import type { NodeClient } from '../api/node-client.js';
import type { ApiClient } from '../api/client.js';
import { observationOf as readingObservation, type CheckoutObservation } from '../ops/requests/checkout.js';
import { readingOf, type RequestReading } from '../ops/requests/matching.js';
import { nodePaymentStatus, type RequestsHolder } from '../ops/requests/node-requests.js';
import { serviceVerdict } from '../ops/requests/service-status.js';
import { SAFETY_POLL_MS } from '../ops/ledger/confirmations.js';
import { paymentsOf, type ProvedSend } from '../ops/ledger/proofs.js';
import { rawToXno } from '../nano/index.js';
import type { ServerLog } from '../http/log.js';
import { ledgerPrints } from '../ops/requests/ledger-prints.js';
import { newEvent, requestTotals } from '../store/shop-events.js';
import { FINAL_STATUSES, statusWithRefunds, type PaymentLine, type ShopRequest, type ShopStatus, type UnsettledRequest, type WebhookEvent, type WebhookType } from '../store/shop.js';
import type { Store } from '../store/store.js';
import { OpenRequests } from './open-requests.js';

/** Where a request stands, read from the backend: what `status` tells (the monitor adds the expiry of a waiting one). */
export type ShopReading = RequestReading;

export interface ShopStatusSource {
  read(request: ShopRequest): Promise<ShopReading>;
  /**
   * Per address, asked for many at once: what changes whenever a payment to it may have changed the status
   * of a request there (on a node: its head block and the blocks waiting for it); '' when the backend has
   * nothing of the address, so no request there was paid. A round reads only the requests whose address's
   * print changed since their last read. Without it, every round reads the unsettled requests (by roundGap).
   */
  fingerprints?(addresses: string[]): Promise<Map<string, string>>;
  /** These blocks to `address`: who sent each and how much, from the blocks themselves (proved). */
  payments(address: string, blocks: string[]): Promise<ProvedSend[]>;
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
    fingerprints: (addresses) => ledgerPrints(node, addresses),
    payments: (address, blocks) => paymentsOf(node, address, blocks),
  };
}

/** Service backend: the service's word (it keeps the request), as `status` tells it, with the shop's expiry when it gave one. */
export function serviceStatusSource(api: ApiClient): ShopStatusSource {
  return {
    read: async (request) => {
      const status = await api.paymentStatus(request.id);
      return readingOf(await serviceVerdict(api, status, request.expires_at === undefined ? status.expiresAt : Date.parse(request.expires_at)));
    },
    payments: (address, blocks) => paymentsOf(api, address, blocks),
  };
}

/** What a checkout page shows of a shop request. */
export function observationOf(request: ShopRequest): CheckoutObservation {
  return readingObservation(request, request.receive_address, request.expires_at);
}

/** Proved sends as the shop keeps them. */
const paymentLines = (sends: ProvedSend[]): PaymentLine[] => sends.map((p) => ({ block: p.hash, from: p.from, amount: rawToXno(p.amountRaw), amount_raw: p.amountRaw.toString() }));

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
  /** Between rounds over the unsettled requests (pages watched are read more often, by the checkout watcher). */
  pollMs: number;
  /**
   * Whether the node's WebSocket is connected with the whole filter: payments to the followed addresses
   * are then told as they are confirmed (wake), and a full round over every unsettled request runs only
   * every SAFETY_POLL_MS (delivery is not guaranteed); the rounds between look at what was told and at
   * what expires.
   */
  live?: () => boolean;
  /** The addresses of the open requests changed (for the node's WebSocket filter): only the changes. */
  onFollow?: (add: string[], remove: string[]) => void;
  /** A change was recorded (its event, if any, is queued): the request as it is now. */
  onChange?: (request: ShopRequest) => void;
  log?: ServerLog;
  /** The clock rounds and expiries are reckoned by (tests move their own). */
  now?: () => number;
}

/** Reads of requests at once in a round: the backend is not flooded, and one slow read does not hold the rest. */
const READERS = 4;

/**
 * Keeps the shop's requests' statuses: reads a request from the backend (one
 * read at a time per request, shared by whoever asks), and records each change
 * with its webhook event in one transaction of the store (so a change is
 * notified once, whichever instance sees it, and never lost to a crash).
 *
 * On a node, a full round takes the prints of every unsettled request's
 * address in batches (fingerprints: a few calls per 2,000 addresses) and reads
 * only the requests whose print changed since their last read; one on an
 * address the ledger has nothing of is waiting without a read, and expires
 * without one. It runs every `pollMs`, or every SAFETY_POLL_MS while the
 * node's WebSocket is live; the rounds between take the prints of the
 * addresses a confirmation named (wake) and of the requests expiring. On the
 * service, a round reads the unsettled requests, older ones less often
 * (roundGap): each read costs a credit. Either way, one paid while no server
 * ran is found at the next start.
 */
export class ShopMonitor {
  private readonly reads = new Map<string, Promise<ShopRequest | undefined>>();
  /** Per request, its address's print when a round last read it (or found it needed no read). */
  private readonly readAt = new Map<string, string>();
  /** Per request, when a round last read it (sources without prints). */
  private readonly lastRound = new Map<string, number>();
  /** On a node: the unsettled requests, and the addresses followed. */
  private readonly open: OpenRequests;
  /** Addresses a confirmation named since the last round. */
  private readonly woken = new Set<string>();
  /** A full round is due at the next round (the start, a connection that came or went, a failed round). */
  private fullDue = true;
  private lastFull = -Infinity;
  /** Where the store's list of unsettled requests ended at the last read: the rounds between full ones read from there. */
  private lastSeq = 0;
  private timer: NodeJS.Timeout | undefined;
  private current: Promise<void> | undefined;
  /** Asked for while a round ran: another one follows it at once. */
  private again = false;
  /** Rounds run on their own (start), until stop. */
  private running = false;
  private stopped = false;

  private readonly now: () => number;

  constructor(private readonly options: ShopMonitorOptions) {
    this.now = options.now ?? Date.now;
    this.open = new OpenRequests(options.onFollow);
  }

  /** Reads request `id` now (or joins a read under way); its record after any change. */
  check(id: string): Promise<ShopRequest | undefined> {
    return this.once(id, () => this.read(id));
  }

  /** A request this instance made: followed from now on, not from the next full round. */
  track(request: ShopRequest): void {
    if (this.options.source.fingerprints !== undefined) this.open.set(request);
  }

  start(): void {
    this.running = true;
    this.stopped = false;
    this.tick();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.stopped = true;
    clearTimeout(this.timer);
    await this.current;
    await Promise.allSettled([...this.reads.values()]);
  }

  /**
   * A payment to `address` was confirmed: a round looks at it now. Without an address, the node's
   * WebSocket came or went (anything may have been missed): a full round now.
   */
  wake(address?: string): void {
    if (address === undefined) this.fullDue = true;
    else this.woken.add(address);
    if (this.running) this.tick();
  }

  private tick(): void {
    if (this.current !== undefined) return void (this.again = true);
    clearTimeout(this.timer);
    this.current = this.round().finally(() => {
      this.current = undefined;
      if (!this.running) return;
      const soon = this.again;
      this.again = false;
      if (soon) this.tick();
      else this.timer = setTimeout(() => this.tick(), this.options.pollMs);
    });
  }

  /**
   * A read that starts now or after the one under way: the round records the print it read at, and a read
   * begun before that print (a page's, a moment before a payment confirmed) may not have seen what changed it.
   */
  private async readAfter(id: string): Promise<ShopRequest | undefined> {
    await this.reads.get(id)?.catch(() => undefined);
    return this.check(id);
  }

  private once(id: string, run: () => Promise<ShopRequest | undefined>): Promise<ShopRequest | undefined> {
    let read = this.reads.get(id);
    if (read === undefined) {
      read = run().finally(() => this.reads.delete(id));
      this.reads.set(id, read);
    }
    return read;
  }

  private unsettled(after?: number): Promise<{ requests: UnsettledRequest[]; last: number }> {
    return this.options.store.shop.unsettled(new Date(this.now() - LATE_PAYMENT_WATCH_MS).toISOString(), after);
  }

  /** One round (start runs one every `pollMs`, wake one at once). */
  async round(): Promise<void> {
    try {
      const fingerprints = this.options.source.fingerprints;
      if (fingerprints === undefined) await this.readingRound();
      else await this.ledgerRound(fingerprints);
    } catch (error) {
      this.options.log?.(`status round failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /** Sources without prints: every unsettled request, older ones less often; the expiring ones all. */
  private async readingRound(): Promise<void> {
    const now = this.now();
    const due = (await this.unsettled()).requests.filter((r) => {
      const expiring = r.status === 'waiting' && r.expires_at !== undefined && Date.parse(r.expires_at) <= now;
      return expiring || now - (this.lastRound.get(r.id) ?? -Infinity) >= roundGap(now - Date.parse(r.created_at), this.options.pollMs);
    });
    for (const r of due) this.lastRound.set(r.id, now);
    await this.each(due, async (r) => {
      const read = await this.check(r.id).catch(() => undefined);
      if (read === undefined || FINAL_STATUSES.includes(read.status)) this.lastRound.delete(r.id);
    });
  }

  private async ledgerRound(fingerprints: (addresses: string[]) => Promise<Map<string, string>>): Promise<void> {
    const now = this.now();
    const full = this.fullDue || this.options.live?.() !== true || now - this.lastFull >= SAFETY_POLL_MS;
    // Asked again during the round (a reconnect, a confirmation): the next round does it too.
    this.fullDue = false;
    const woken = new Set(this.woken);
    this.woken.clear();
    const found = new Set<string>();
    let prints: Map<string, string>;
    let looked: UnsettledRequest[];
    const expiring = (r: UnsettledRequest): boolean => r.status === 'waiting' && r.expires_at !== undefined && Date.parse(r.expires_at) <= now;
    try {
      if (full) {
        this.open.begin();
        const { requests, last } = await this.unsettled();
        this.open.reset(requests);
        this.lastSeq = last;
        for (const id of this.readAt.keys()) if (!this.open.has(id)) this.readAt.delete(id);
      } else {
        // Made elsewhere since (another instance, nanopay request): followed from now, and looked at now (a payment may have come already).
        const { requests, last } = await this.unsettled(this.lastSeq);
        this.lastSeq = last;
        for (const request of requests.filter((r) => !this.open.has(r.id))) {
          this.open.set(request);
          found.add(request.receive_address);
        }
      }
      looked = [...this.open.list()].filter((r) => full || found.has(r.receive_address) || woken.has(r.receive_address) || expiring(r));
      prints = looked.length === 0 ? new Map() : await fingerprints([...new Set(looked.map((r) => r.receive_address))]);
    } catch (error) {
      // Looked at again next round: a failing node is not answered with a read per request.
      if (full) this.fullDue = true;
      for (const address of [...woken, ...found]) this.woken.add(address);
      throw error;
    }
    if (full) this.lastFull = now;
    const due: { request: UnsettledRequest; print: string }[] = [];
    const expired: UnsettledRequest[] = [];
    for (const request of looked) {
      const print = prints.get(request.receive_address);
      if (print === undefined) continue;
      // Nothing moved since its last read, or nothing ever came to its address: a read would say what the store does.
      const unchanged = this.readAt.get(request.id) === print || (print === '' && (request.status === 'waiting' || request.status === 'expired'));
      if (!unchanged) {
        due.push({ request, print });
        continue;
      }
      this.readAt.set(request.id, print);
      if (expiring(request)) expired.push(request);
    }
    await this.each(expired, (r) => this.once(r.id, () => this.expire(r.id)));
    await this.each(due, async ({ request, print }) => {
      const read = await this.readAfter(request.id).catch(() => undefined);
      if (read === undefined || FINAL_STATUSES.includes(read.status)) this.readAt.delete(request.id);
      else this.readAt.set(request.id, print);
    });
  }

  /** `work` for each item, READERS at a time. */
  private async each<T>(items: T[], work: (item: T) => Promise<unknown>): Promise<void> {
    const queue = [...items];
    const worker = async (): Promise<void> => {
      for (let next = queue.shift(); next !== undefined && !this.stopped; next = queue.shift()) await work(next);
    };
    await Promise.all(Array.from({ length: READERS }, worker));
  }

  /** A waiting request past its expiry whose address saw nothing since its last read: expired, without a read. */
  private async expire(id: string): Promise<ShopRequest | undefined> {
    const request = await this.options.store.shop.get(id);
    if (request === undefined) return undefined;
    if (request.status !== 'waiting') return (this.track(request), request);
    return this.record(request, { status: 'waiting' });
  }

  private async read(id: string): Promise<ShopRequest | undefined> {
    const request = await this.options.store.shop.get(id);
    if (request === undefined) return undefined;
    // Settled by another instance (or refunded): no more following it here.
    if (FINAL_STATUSES.includes(request.status)) return (this.track(request), request);
    let reading: ShopReading;
    try {
      reading = await this.options.source.read(request);
    } catch (error) {
      const failure = error instanceof NanoPayError ? `${error.code}: ${error.message}` : 'unexpected error';
      this.options.log?.(`status of ${id} failed (${failure}); retrying`);
      throw error;
    }
    return this.record(request, reading);
  }

  /** Records what `reading` says of `request` (an unpaid one past its expiry is expired), when it changes anything. */
  private async record(request: ShopRequest, reading: ShopReading): Promise<ShopRequest | undefined> {
    const { id } = request;
    const shop = this.options.store.shop;
    // Paid wins over expired: a payment that landed is never hidden.
    const expired = reading.status === 'waiting' && request.expires_at !== undefined && Date.parse(request.expires_at) <= this.now();
    const status: ShopStatus = expired ? 'expired' : reading.status;
    // A request refunded in part while it was underpaid, then paid in full, is paid with its refunds counted.
    const shown = statusWithRefunds(status, BigInt(request.refunded_amount_raw ?? '0'), BigInt(reading.received_raw ?? request.amount_raw));
    // A second part of an underpayment changes what arrived and what is left: the shop (and the page) must know.
    if (shown === request.status && reading.received_raw === request.received_raw && reading.rest_raw === request.rest_raw) return request;
    const seq = request.events + 1;
    // What the reading found replaces what an earlier one did (an underpaid request paid in full names no rest).
    const { paid_by: _paidBy, payers: _payers, payments: _payments, received_raw: _received, rest_raw: _rest, ...kept } = request;
    const blocks = reading.paid_by ?? reading.received_by ?? [];
    const sameBlocks = blocks.join(',') === (request.payments ?? []).map((p) => p.block).join(',');
    const payments = blocks.length === 0 ? [] : sameBlocks && request.payments !== undefined ? request.payments : paymentLines(await this.options.source.payments(request.receive_address, blocks));
    const paidNow = (status === 'paid' || status === 'paid_late') && request.paid_at === undefined;
    const next: ShopRequest = {
      ...kept,
      status: shown,
      events: seq,
      ...(paidNow ? { paid_at: new Date(this.now()).toISOString() } : {}),
      ...(reading.paid_by === undefined ? {} : { paid_by: reading.paid_by }),
      ...(payments.length === 0 ? {} : { payers: [...new Set(payments.map((p) => p.from))], payments }),
      ...(reading.received_raw === undefined ? {} : { received_raw: reading.received_raw }),
      ...(reading.rest_raw === undefined ? {} : { rest_raw: reading.rest_raw }),
    };
    const event: WebhookEvent | undefined = status === 'waiting' ? undefined : newEvent(`request.${status}` as WebhookType, next);
    const recorded = event === undefined ? { ...next, events: request.events } : next;
    if (await shop.change(request.status, recorded, event)) {
      this.track(recorded);
      this.options.onChange?.(recorded);
      const order = request.order_id === undefined ? '' : ` (order ${request.order_id})`;
      this.options.log?.(`request ${id}${order}: ${request.status} -> ${shown}`, {
        event: 'request_status',
        fields: { request_id: id, order_id: request.order_id, from: request.status, to: shown, is_paid: requestTotals(recorded).is_paid },
      });
      return recorded;
    }
    // Another instance recorded a change first: its record is the truth.
    const truth = await shop.get(id);
    if (truth !== undefined) this.track(truth);
    return truth;
  }
}
