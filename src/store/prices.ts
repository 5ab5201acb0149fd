/**
 * Prices in the shop's currency (ops/pricing): the price each request priced in
 * a fiat currency was made at, by request id (whoever made it: `request`, the
 * shop's API, on either backend), and the last rate accepted per currency, which
 * the next one is checked against (kept here so that it survives restarts and is
 * shared by every server on a PostgreSQL store).
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
}

/** The last rate accepted for a currency. */
export interface AcceptedRate {
  currency: string;
  rate: string;
  source: string;
  /** When the rate is from (ISO 8601). */
  time: string;
  accepted_at: string;
}

export interface PricesTable {
  /** Keeps the price request `id` was made at (a second one for the same id is ignored: a price never changes). */
  record(id: string, price: FiatPrice): Promise<void>;
  /** The price request `id` was made at, if it was priced in a fiat currency. */
  of(id: string): Promise<FiatPrice | undefined>;
  lastRate(currency: string): Promise<AcceptedRate | undefined>;
  /** Makes `rate` the last accepted of its currency, unless one from a later time is there already. */
  accept(rate: AcceptedRate): Promise<void>;
}
