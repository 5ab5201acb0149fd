/**
 * Prices in the shop's currency (ops/pricing): the price each request priced in
 * a fiat currency was made at, by request id (whoever made it: `request`, the
 * shop's API, on either backend), and the rates accepted per currency (the last,
 * and those of the recent past), which the next one is checked against (kept here
 * so that they survive restarts and are shared by every server on a PostgreSQL
 * store).
 */

/** What a request priced in a fiat currency was made at: shown with the request wherever it is (`fiat`). */
export interface FiatPrice {
  /** ISO 4217, upper case. */
  currency: string;
  /** The price as given ("19.99"). */
  amount: string;
  /** Units of the currency per XNO. */
  rate: string;
  /** The rate source's URL without credentials or query. */
  rate_source: string;
  /** When the rate is from (ISO 8601): the source's own time, or when nanopay fetched it if the source gives none. */
  rate_time: string;
  /**
   * Until when the XNO amount holds (ISO 8601): the request expires then (rate-quote-window). Absent on requests
   * made before nanopay kept it.
   */
  quote_expires_at?: string;
}

/** The last rate accepted for a currency. */
export interface AcceptedRate {
  currency: string;
  rate: string;
  source: string;
  /** When the rate is from (ISO 8601). */
  time: string;
  accepted_at: string;
  /** The rate-max-move (percent) it was checked under; absent on rates accepted before nanopay kept it. */
  max_move?: string;
}

export interface PricesTable {
  /** Keeps the price request `id` was made at (a second one for the same id is ignored: a price never changes). */
  record(id: string, price: FiatPrice): Promise<void>;
  /** The price request `id` was made at, if it was priced in a fiat currency. */
  of(id: string): Promise<FiatPrice | undefined>;
  lastRate(currency: string): Promise<AcceptedRate | undefined>;
  /** The rates of `currency` accepted at or after `since` (ISO 8601), oldest first. */
  acceptedSince(currency: string, since: string): Promise<AcceptedRate[]>;
  /**
   * Keeps `rate` among the accepted and makes it the last accepted of its currency, unless one from a later time is
   * there already; forgets the rates of the currency accepted before `forgetBefore` (ISO 8601).
   */
  accept(rate: AcceptedRate, forgetBefore: string): Promise<void>;
}
