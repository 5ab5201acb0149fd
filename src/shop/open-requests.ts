import { FINAL_STATUSES, type ShopStatus, type UnsettledRequest } from '../store/shop.js';

/** Followed on the node's WebSocket: a payment may still complete or change them. Expired ones are left to the rounds (a late payment is rare). */
const FOLLOWED: readonly ShopStatus[] = ['waiting', 'underpaid', 'overpaid'];

/**
 * The unsettled requests a monitor keeps on a node, in memory: the store's list at the last full round and
 * this instance's changes since. It tells `onFollow` when the addresses of the followed requests change
 * (an address shared by several counts once, until the last of them closes): the node's WebSocket filter
 * gets the changes, never the whole list again.
 */
export class OpenRequests {
  private readonly entries = new Map<string, UnsettledRequest>();
  /** Followed addresses, with how many followed requests each. */
  private readonly followed = new Map<string, number>();
  /** What set() said since begin(): newer than the store's list being read meanwhile. */
  private readonly since = new Map<string, UnsettledRequest>();

  constructor(private readonly onFollow?: (add: string[], remove: string[]) => void) {}

  /** The store's list is about to be read: what changes meanwhile is kept over it (reset). */
  begin(): void {
    this.since.clear();
  }

  /** Everything, as the store's list read since begin() says, with the changes made since. */
  reset(list: UnsettledRequest[]): void {
    const before = new Set(this.followed.keys());
    this.entries.clear();
    this.followed.clear();
    for (const request of list) {
      this.entries.set(request.id, request);
      if (FOLLOWED.includes(request.status)) this.followed.set(request.receive_address, (this.followed.get(request.receive_address) ?? 0) + 1);
    }
    const newer = [...this.since.values()];
    this.since.clear();
    for (const request of newer) this.apply(request);
    this.tell(
      [...this.followed.keys()].filter((a) => !before.has(a)),
      [...before].filter((a) => !this.followed.has(a)),
    );
  }

  /** A request as it is now (made, or changed by this instance): a settled one goes. */
  set(request: UnsettledRequest): void {
    this.since.set(request.id, request);
    const { add, remove } = this.apply(request);
    this.tell(add, remove);
  }

  private apply(request: UnsettledRequest): { add: string[]; remove: string[] } {
    const before = this.entries.get(request.id);
    const { id, status, receive_address, created_at, expires_at } = request;
    if (FINAL_STATUSES.includes(status)) this.entries.delete(id);
    else this.entries.set(id, { id, status, receive_address, created_at, ...(expires_at === undefined ? {} : { expires_at }) });
    const add: string[] = [];
    const remove: string[] = [];
    if (before !== undefined && FOLLOWED.includes(before.status)) {
      const left = (this.followed.get(before.receive_address) ?? 1) - 1;
      if (left > 0) this.followed.set(before.receive_address, left);
      else (this.followed.delete(before.receive_address), remove.push(before.receive_address));
    }
    if (FOLLOWED.includes(status)) {
      const count = this.followed.get(receive_address) ?? 0;
      this.followed.set(receive_address, count + 1);
      if (count === 0) add.push(receive_address);
    }
    // The same address out and back in (waiting → underpaid) is no change.
    return { add: add.filter((a) => !remove.includes(a)), remove: remove.filter((a) => !add.includes(a)) };
  }

  has(id: string): boolean {
    return this.entries.has(id);
  }

  list(): IterableIterator<UnsettledRequest> {
    return this.entries.values();
  }

  private tell(add: string[], remove: string[]): void {
    if (add.length > 0 || remove.length > 0) this.onFollow?.(add, remove);
  }
}
