import { existsSync } from 'node:fs';
import { NanoPayError } from '../../errors.js';
import { copyStore, countRows, type TableCount } from '../../store/copy.js';
import { openStoreOnly, sqlitePath } from '../../store/open.js';
import type { Store } from '../../store/store.js';
import { checkDatabaseUrl, maskDatabaseUrl } from '../../store/url.js';
import { stateDir } from '../../wallet/paths.js';
import type { Session } from '../session.js';

export interface StoreMoveResult {
  from: { kind: Store['kind']; location: string };
  to: { kind: Store['kind']; location: string };
  /** Rows copied per table, equal in both stores. */
  tables: TableCount[];
  rows: number;
  /** The profile's database-url now (null: its SQLite file). */
  database_url: string | null;
  /** The store moved from, left as it was. */
  old_store: string;
}

/** The profile's store as config.json names it (NANOPAY_DATABASE_URL aside), opened only to be read or filled. */
function profilePlace(session: Session, databaseUrl: string | undefined) {
  return {
    storeDir: stateDir(session.dir, 'store'),
    lockDir: stateDir(session.dir, 'locks'),
    profile: session.profileName,
    ...(databaseUrl === undefined ? {} : { databaseUrl }),
  };
}

const same = (a: string | undefined, b: string | undefined): boolean => (a?.replace(/\/+$/, '') ?? null) === (b?.replace(/\/+$/, '') ?? null);
const total = (counts: TableCount[]): number => counts.reduce((sum, c) => sum + c.rows, 0);

function notEmpty(location: string, counts: TableCount[], what: string, hint: string): NanoPayError {
  const held = counts.filter((c) => c.rows > 0).map((c) => `${c.table} ${c.rows}`);
  return new NanoPayError('STORE_NOT_EMPTY', `The store ${location} holds ${total(counts)} rows (${held.join(', ')}): ${what}`, { hint });
}

/** Why a database-url's store could not be opened: it cannot be counted then. */
const UNREADABLE = new Set(['STORE_UNAVAILABLE', 'STORE_REFUSED', 'INVALID_REQUEST']);

/**
 * Refuses a change of the profile's database-url (to `next`; undefined: back to its SQLite file) that would leave
 * the data of its store behind: requests, refunds, fresh accounts would be unknown to every command after it. An
 * empty or absent store is switched from freely, and so is a database that cannot be reached (its data stays there).
 */
export async function refuseStoreSwitch(session: Session, next: string | undefined): Promise<void> {
  const current = session.profile().databaseUrl;
  if (same(current, next)) return;
  if (current === undefined && !existsSync(sqlitePath(stateDir(session.dir, 'store'), session.profileName))) return;
  let store: Store;
  try {
    store = await openStoreOnly(profilePlace(session, current));
  } catch (error) {
    // A database that cannot be reached or refuses us cannot be counted, and what it holds stays there: a mistyped
    // URL must still be changeable.
    if (current !== undefined && error instanceof NanoPayError && UNREADABLE.has(error.code)) return;
    throw error;
  }
  try {
    const counts = await countRows(store);
    if (total(counts) === 0) return;
    const shown = next === undefined ? 'sqlite' : maskDatabaseUrl(next);
    // store migrate moves between the two kinds: from one database to another it goes through the SQLite file.
    const hint =
      current !== undefined && next !== undefined
        ? `Move them through the profile's SQLite file: nanopay store migrate --to sqlite, then nanopay store migrate --to ${shown}`
        : `Move them and switch in one step: nanopay store migrate --to ${shown}`;
    throw notEmpty(store.location, counts, 'changing database-url would leave them behind; nothing was changed', hint);
  } finally {
    await store.close();
  }
}

/**
 * Moves the profile's store to the other kind: `to` is a PostgreSQL URL (from the SQLite file) or "sqlite" (from
 * the database-url's database into the profile's SQLite file). The destination must be empty; every table is
 * copied from one snapshot, the counts compared, and only then is database-url switched. The old store is left as
 * it was. Request creation waits meanwhile (the store's `requests` lock), then refuses (STORE_MOVED) rather than write
 * to the old store; servers using the store should be stopped.
 */
export async function moveStore(session: Session, to: string): Promise<StoreMoveResult> {
  if (session.env.NANOPAY_DATABASE_URL) {
    throw new NanoPayError('USAGE', 'NANOPAY_DATABASE_URL is set, and it overrides the profile\'s database-url: moving the profile\'s store would not change the store this environment uses', {
      hint: 'Unset NANOPAY_DATABASE_URL and run it again (the password then in PGPASSWORD or ~/.pgpass); after the move, use the profile\'s database-url.',
    });
  }
  const next = to === 'sqlite' ? undefined : checkDatabaseUrl(to, '--to', { password: 'refuse' });
  const current = session.profile().databaseUrl;
  if ((current === undefined) === (next === undefined)) {
    throw new NanoPayError('USAGE', current === undefined ? 'The profile\'s store is its SQLite file already' : 'The store moves between PostgreSQL and SQLite: from database-url, --to is sqlite', {
      hint: current === undefined ? 'Give a PostgreSQL URL: nanopay store migrate --to postgres://user@host/db' : 'nanopay store migrate --to sqlite',
    });
  }
  const source = await openStoreOnly(profilePlace(session, current));
  try {
    const destination = await openStoreOnly(profilePlace(session, next));
    try {
      const tables = await source.exclusive('requests', async () => {
        const already = await countRows(destination);
        if (total(already) > 0) {
          throw notEmpty(destination.location, already, 'a store is moved only into an empty one; nothing was copied', next === undefined
            ? `Move that file away (mv ${destination.location} ${destination.location}.old), then run it again.`
            : 'Give an empty database (createdb), or empty this one if its data is not wanted.');
        }
        const copied = await copyStore(source, destination);
        // Switched before the lock is let go: a request that waited for it then finds the store moved (STORE_MOVED).
        session.updateProfile(({ databaseUrl: _, ...p }) => (next === undefined ? p : { ...p, databaseUrl: next }));
        return copied;
      });
      return {
        from: { kind: source.kind, location: source.location },
        to: { kind: destination.kind, location: destination.location },
        tables,
        rows: total(tables),
        database_url: next === undefined ? null : maskDatabaseUrl(next),
        old_store: source.location,
      };
    } finally {
      await destination.close();
    }
  } finally {
    await source.close();
  }
}
