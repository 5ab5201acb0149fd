import { join } from 'node:path';
import { migrateJsonRequests } from './legacy-json.js';
import type { Store } from './store.js';

export interface StorePlace {
  /** The config dir's folders: `store` (SQLite files), `requests` (the old JSON files), `locks`. */
  storeDir: string;
  requestsDir: string;
  lockDir: string;
  profile: string;
  /** A PostgreSQL URL: the shared store instead of the profile's SQLite file. */
  databaseUrl?: string;
}

/** The profile's SQLite file. */
export function sqlitePath(storeDir: string, profile: string): string {
  return join(storeDir, `${profile}.sqlite`);
}

/**
 * The profile's store, opened (and migrated: its schema, then the old JSON
 * requests file if there is one). Each driver is loaded only here, so a command
 * that never touches the store does not pay for it.
 */
export async function openStore(place: StorePlace): Promise<Store> {
  const store = await openStoreOnly(place);
  try {
    await migrateJsonRequests(store, join(place.requestsDir, `${place.profile}.json`), place.lockDir, `requests-${place.profile}`);
  } catch (error) {
    await store.close();
    throw error;
  }
  return store;
}

/** The store at `place`, its schema migrated, without the old JSON requests (a store a move fills, or one only counted). */
export async function openStoreOnly(place: Omit<StorePlace, 'requestsDir'>): Promise<Store> {
  if (place.databaseUrl === undefined) {
    const { SqliteStore } = await import('./sqlite.js');
    return SqliteStore.open(sqlitePath(place.storeDir, place.profile), place.lockDir, `store-${place.profile}`);
  }
  const { PostgresStore } = await import('./postgres.js');
  return PostgresStore.open(place.databaseUrl);
}
