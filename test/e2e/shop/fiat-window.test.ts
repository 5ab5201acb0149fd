import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Session } from '../../../src/ops/session.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import type { AcceptedRate } from '../../../src/store/prices.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { backendUser, type BackendUser } from '../../helpers/ledger/backend-users.js';
import { postgresUnavailable, startPostgres, type PostgresCluster } from '../../helpers/ledger/postgres.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { ratesBody, startRateSource, type RateSource } from '../../helpers/network/rate-source.js';
import { PASSWORD } from '../../helpers/processes/cli.js';

/**
 * Issue 43, point 5: fiat prices with a lifetime. The movement bound holds against every rate accepted in the last
 * hour, not just the last, on SQLite and PostgreSQL.
 */
let sb: RunningSandbox;
let cluster: PostgresCluster | undefined;
const sources: RateSource[] = [];
const sessions: Session[] = [];
const pgSkip = postgresUnavailable();

beforeAll(async () => {
  sb = await sandbox();
  if (pgSkip === undefined) cluster = await startPostgres();
});

afterAll(async () => {
  for (const session of sessions) await session.close();
  for (const source of sources) await source.close();
  await cluster?.stop();
  await sb?.close();
  await shutdownWorkers();
});

async function rateSource(rates?: Record<string, string>): Promise<RateSource> {
  const source = await startRateSource(rates);
  sources.push(source);
  return source;
}

/** 0.91^n exactly, as a decimal: a rate falling 9 % at each step. */
function falling(n: number): string {
  const units = (91n ** BigInt(n)).toString().padStart(2 * n + 1, '0');
  return n === 0 ? '1' : `${units.slice(0, -2 * n)}.${units.slice(-2 * n)}`;
}

interface Made {
  _code: number | null;
  amount: string;
  fiat?: { rate: string };
  error?: { code: string; message: string };
}

describe.each(['sqlite', 'postgres'] as const)('the movement bound over the last hour, on %s', (kind) => {
  let merchant: BackendUser;
  let rates: RateSource;
  /** What the merchant's commands get on top of their environment: the PostgreSQL store, for postgres. */
  let env: NodeJS.ProcessEnv = {};

  beforeAll(async () => {
    if (kind === 'postgres' && pgSkip !== undefined) return;
    merchant = await backendUser(sb, 'node');
    if (kind === 'postgres') env = { NANOPAY_DATABASE_URL: await (cluster as PostgresCluster).createDatabase(`fiat_${randomUUID().replaceAll('-', '')}`) };
    rates = await rateSource();
    expect((await merchant.user.run(['config', 'set', 'rate-source', rates.url], { env })).code).toBe(0);
  });

  const request = (currency = 'EUR'): Promise<Made> => merchant.user.json<Made>(['request', '10', '--currency', currency, '--no-qr'], { env });

  it.skipIf(kind === 'postgres' && pgSkip !== undefined)(
    'a source falling 9 % per call: refused (RATE_MOVED) once the fall from a rate of the last hour passes 10 %, so 12 requests never price 10 EUR above 11 XNO',
    async () => {
      let calls = 0;
      rates.answer = () => ({ status: 200, body: ratesBody({ EUR: falling(calls++) }) });
      const made: Made[] = [];
      for (let i = 0; i < 12; i++) made.push(await request());
      expect(calls).toBe(12);
      // 1, then 0.91 (9 % down): taken. 0.8281 is 9 % below the last but 17.19 % below 1, accepted minutes ago.
      expect(made.slice(0, 2).map((m) => [m._code, m.fiat?.rate])).toEqual([
        [0, '1'],
        [0, '0.91'],
      ]);
      for (const refused of made.slice(2)) {
        expect(refused).toMatchObject({ _code: 5, error: { code: 'RATE_MOVED', message: expect.stringContaining('no request was made') } });
      }
      expect(made[2]?.error?.message).toMatch(/is 0\.8281, more than rate-max-move \(10%\) away from one accepted at \S+, within the last 1h, 1 \(from /);
      const highest = made.filter((m) => m._code === 0).reduce((max, m) => (Number(m.amount) > max ? Number(m.amount) : max), 0);
      expect(highest > 10 && highest < 11).toBe(true);

      // The owner lets a real move through with a larger bound: the rates accepted before it no longer count.
      rates.answer = () => ({ status: 200, body: ratesBody({ EUR: '0.85' }) });
      expect(await request()).toMatchObject({ _code: 5, error: { code: 'RATE_MOVED' } });
      expect((await merchant.user.run(['config', 'set', 'rate-max-move', '20'], { env })).code).toBe(0);
      expect(await request()).toMatchObject({ _code: 0, fiat: { rate: '0.85' } });
      expect((await merchant.user.run(['config', 'set', 'rate-max-move', '--unset'], { env })).code).toBe(0);
      // 0.81 is 4.7 % below 0.85; 11 % below 0.91 and 19 % below 1, which were before it.
      rates.answer = () => ({ status: 200, body: ratesBody({ EUR: '0.81' }) });
      expect(await request()).toMatchObject({ _code: 0, fiat: { rate: '0.81' } });
    },
  );

  it.skipIf(kind === 'postgres' && pgSkip !== undefined)('after a quiet hour only the last accepted counts, as before', async () => {
    // Rates accepted by an earlier process: 1 two hours ago, 1.2 ninety minutes ago (the last).
    const session = new Session({ password: async () => PASSWORD, env: { ...merchant.user.env, ...env } });
    sessions.push(session);
    const store = await session.dataStore();
    const at = (minutesAgo: number) => new Date(Date.now() - minutesAgo * 60_000).toISOString();
    const accepted = (rate: string, minutesAgo: number): AcceptedRate => ({ currency: 'USD', rate, source: rates.url, time: at(minutesAgo), accepted_at: at(minutesAgo), max_move: '10' });
    await store.prices.accept(accepted('1', 120), at(180));
    await store.prices.accept(accepted('1.2', 90), at(180));
    rates.answer = () => ({ status: 200, body: ratesBody({ USD: '1.35' }) });
    const moved = await request('USD');
    expect(moved).toMatchObject({ _code: 5, error: { code: 'RATE_MOVED' } });
    expect(moved.error?.message).toMatch(/is 1\.35, more than rate-max-move \(10%\) away from the last accepted, 1\.2 \(from /);
    // 12 % above 1, but that was two hours ago; 6.7 % below 1.2.
    rates.answer = () => ({ status: 200, body: ratesBody({ USD: '1.12' }) });
    expect(await request('USD')).toMatchObject({ _code: 0, fiat: { rate: '1.12' } });
  });
});
