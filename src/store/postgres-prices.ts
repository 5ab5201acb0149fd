import type { PostgresHost } from './postgres-shop.js';
import type { AcceptedRate, FiatPrice, PricesTable } from './prices.js';

export class PostgresPrices implements PricesTable {
  constructor(private readonly host: PostgresHost) {}

  async record(id: string, price: FiatPrice): Promise<void> {
    await this.host.query('INSERT INTO request_prices (id, doc) VALUES ($1, $2::jsonb) ON CONFLICT (id) DO NOTHING', [id.toLowerCase(), JSON.stringify(price)]);
  }

  async of(id: string): Promise<FiatPrice | undefined> {
    return (await this.host.query<{ doc: FiatPrice }>('SELECT doc FROM request_prices WHERE id = $1', [id.toLowerCase()])).rows[0]?.doc;
  }

  async lastRate(currency: string): Promise<AcceptedRate | undefined> {
    return (await this.host.query<{ doc: AcceptedRate }>('SELECT doc FROM accepted_rates WHERE currency = $1', [currency])).rows[0]?.doc;
  }

  async acceptedSince(currency: string, since: string): Promise<AcceptedRate[]> {
    const query = 'SELECT doc FROM accepted_rate_history WHERE currency = $1 AND accepted_at >= $2 ORDER BY accepted_at, seq';
    return (await this.host.query<{ doc: AcceptedRate }>(query, [currency, since])).rows.map((row) => row.doc);
  }

  async accept(rate: AcceptedRate, forgetBefore: string): Promise<void> {
    // One statement, so one transaction: the last accepted and the history never disagree.
    await this.host.query(
      `WITH last AS (
         INSERT INTO accepted_rates (currency, rate_time, doc) VALUES ($1, $2, $3::jsonb)
         ON CONFLICT (currency) DO UPDATE SET rate_time = excluded.rate_time, doc = excluded.doc WHERE excluded.rate_time >= accepted_rates.rate_time
       ), kept AS (
         INSERT INTO accepted_rate_history (currency, accepted_at, doc) VALUES ($1, $4, $3::jsonb)
       )
       DELETE FROM accepted_rate_history WHERE currency = $1 AND accepted_at < $5`,
      [rate.currency, rate.time, JSON.stringify(rate), rate.accepted_at, forgetBefore],
    );
  }
}
