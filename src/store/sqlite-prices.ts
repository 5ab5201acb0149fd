import type { AcceptedRate, FiatPrice, PricesTable } from './prices.js';
import type { SqliteHost } from './sqlite-shop.js';

const parse = <T>(row: unknown): T | undefined => (row === undefined ? undefined : (JSON.parse((row as { doc: string }).doc) as T));

export class SqlitePrices implements PricesTable {
  constructor(private readonly host: SqliteHost) {}

  record(id: string, price: FiatPrice): Promise<void> {
    return this.host.run(() => void this.host.db.prepare('INSERT OR IGNORE INTO request_prices (id, doc) VALUES (?, ?)').run(id.toLowerCase(), JSON.stringify(price)));
  }

  of(id: string): Promise<FiatPrice | undefined> {
    return this.host.run(() => parse<FiatPrice>(this.host.db.prepare('SELECT doc FROM request_prices WHERE id = ?').get(id.toLowerCase())));
  }

  lastRate(currency: string): Promise<AcceptedRate | undefined> {
    return this.host.run(() => parse<AcceptedRate>(this.host.db.prepare('SELECT doc FROM accepted_rates WHERE currency = ?').get(currency)));
  }

  acceptedSince(currency: string, since: string): Promise<AcceptedRate[]> {
    return this.host.run(() =>
      this.host
        .prepared('SELECT doc FROM accepted_rate_history WHERE currency = ? AND accepted_at >= ? ORDER BY accepted_at, seq')
        .all(currency, since)
        .map((row) => parse<AcceptedRate>(row) as AcceptedRate),
    );
  }

  accept(rate: AcceptedRate, forgetBefore: string): Promise<void> {
    const doc = JSON.stringify(rate);
    return this.host.run(() =>
      this.host.db.transaction(() => {
        this.host.db
          .prepare(
            `INSERT INTO accepted_rates (currency, rate_time, doc) VALUES (?, ?, ?)
             ON CONFLICT (currency) DO UPDATE SET rate_time = excluded.rate_time, doc = excluded.doc WHERE excluded.rate_time >= accepted_rates.rate_time`,
          )
          .run(rate.currency, rate.time, doc);
        this.host.prepared('INSERT INTO accepted_rate_history (currency, accepted_at, doc) VALUES (?, ?, ?)').run(rate.currency, rate.accepted_at, doc);
        this.host.prepared('DELETE FROM accepted_rate_history WHERE currency = ? AND accepted_at < ?').run(rate.currency, forgetBefore);
      })(),
    );
  }
}
