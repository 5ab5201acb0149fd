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

  async accept(rate: AcceptedRate): Promise<void> {
    await this.host.query(
      `INSERT INTO accepted_rates (currency, rate_time, doc) VALUES ($1, $2, $3::jsonb)
       ON CONFLICT (currency) DO UPDATE SET rate_time = excluded.rate_time, doc = excluded.doc WHERE excluded.rate_time >= accepted_rates.rate_time`,
      [rate.currency, rate.time, JSON.stringify(rate)],
    );
  }
}
