/** How far back the chat's spends made without a confirmation count toward --confirm-above. */
export const SPEND_WINDOW_MS = 60 * 60_000;

/** A spend under way, counted from the moment it was admitted. */
export interface Reservation {
  /** The call ended: a call that surely moved nothing is forgotten, any other counts as spent from now on. */
  end(moved: boolean): void;
}

/**
 * The chat's spends carried out without a confirmation within the last hour,
 * and those under way. A spend is admitted only while it plus all of these
 * stays within the threshold, and is reserved in the same synchronous step, so
 * concurrent turns can never both slip under it.
 */
export class SpendWindow {
  private spent: { raw: bigint; at: number }[] = [];
  private underWayRaw = 0n;

  constructor(
    private readonly windowMs = SPEND_WINDOW_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** What counts now: the spends within the window and those under way, in raw. */
  totalRaw(): bigint {
    const since = this.now() - this.windowMs;
    this.spent = this.spent.filter((s) => s.at > since);
    return this.spent.reduce((sum, s) => sum + s.raw, this.underWayRaw);
  }

  /** Reserves `raw` when it keeps the total within `limitRaw`; undefined (nothing reserved) when it would exceed it. */
  admit(raw: bigint, limitRaw: bigint): Reservation | undefined {
    if (this.totalRaw() + raw > limitRaw) return undefined;
    this.underWayRaw += raw;
    let ended = false;
    return {
      end: (moved) => {
        if (ended) return;
        ended = true;
        this.underWayRaw -= raw;
        if (moved) this.spent.push({ raw, at: this.now() });
      },
    };
  }
}
