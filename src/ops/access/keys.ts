import { randomBytes } from 'node:crypto';
import { NanoPayError } from '../../errors.js';
import { isRole, ROLES, type Role } from '../../shop/roles.js';
import type { ApiKeyRecord } from '../../store/access.js';
import type { Store } from '../../store/store.js';
import { randomSecret, sha256Hex } from './secrets.js';

/** What every key of the shop's API starts with, so that one pasted in the wrong place is recognised (and scanners find it). */
export const KEY_PREFIX = 'npk_';
/** Characters of a key shown in lists: the prefix and 8 of its random part. */
const SHOWN = KEY_PREFIX.length + 8;
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** A key as lists show it: everything but its hash. */
export type ApiKeyShown = Omit<ApiKeyRecord, 'hash'>;

const shownKey = ({ hash: _hash, ...shown }: ApiKeyRecord): ApiKeyShown => shown;

export function checkRole(role: string): Role {
  if (!isRole(role)) throw new NanoPayError('USAGE', `Unknown role "${role}"`, { hint: `A role is one of: ${ROLES.join(', ')}.` });
  return role;
}

export function checkName(name: string, what: string): string {
  if (!NAME.test(name)) throw new NanoPayError('USAGE', `A ${what} name is 1 to 64 letters, digits, ".", "_" or "-", starting with a letter or digit`);
  return name;
}

/** Makes a key: the secret is in the answer, and nowhere else ever (the store keeps its hash). */
export async function createKey(store: Store, input: { name: string; role: string; now?: Date }): Promise<{ key: ApiKeyShown; secret: string }> {
  const role = checkRole(input.role);
  const secret = `${KEY_PREFIX}${randomSecret()}`;
  const key: ApiKeyRecord = {
    id: `key_${randomBytes(8).toString('hex')}`,
    name: checkName(input.name, 'key'),
    role,
    prefix: secret.slice(0, SHOWN),
    hash: sha256Hex(secret),
    created_at: (input.now ?? new Date()).toISOString(),
  };
  await store.access.addKey(key);
  return { key: shownKey(key), secret };
}

export async function listKeys(store: Store): Promise<ApiKeyShown[]> {
  return (await store.access.keys()).map(shownKey);
}

/** Revokes a key by id or name: servers already running refuse it from their next call. */
export async function revokeKey(store: Store, idOrName: string, now = new Date()): Promise<ApiKeyShown> {
  const key = await store.access.revokeKey(idOrName, now.toISOString());
  if (key === undefined) throw new NanoPayError('NOT_FOUND', `No key has the id or name "${idOrName}"`, { hint: 'See the keys with: nanopay checkout keys list' });
  return shownKey(key);
}
