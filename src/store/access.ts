import { NanoPayError } from '../errors.js';
import type { Role } from '../shop/roles.js';

/**
 * Who may use the shop (issue 44): API keys with a role, the dashboard's
 * operators, and the operators' sessions. Nothing secret is kept as it was
 * given: a key and a session id are kept as their SHA-256 (both are random,
 * 32 bytes), a password as its scrypt hash.
 */

/** An API key of the shop (snake_case: `checkout keys list --json` shows it as it is, the hash left out). */
export interface ApiKeyRecord {
  id: string;
  /** Unique among the keys not revoked: a revoked key's name may be given to a new one. */
  name: string;
  role: Role;
  /** The start of the secret, enough to recognise it (npk_ and 8 characters). */
  prefix: string;
  /** SHA-256 of the secret, hex. */
  hash: string;
  created_at: string;
  last_used_at?: string;
  revoked_at?: string;
}

export interface OperatorRecord {
  name: string;
  role: Role;
  /** scrypt, its parameters and salt included (password-hash.ts). */
  password: string;
  created_at: string;
  password_changed_at: string;
}

export interface OperatorSessionRecord {
  /** SHA-256 of the session id (the cookie's value), hex. */
  id_hash: string;
  operator: string;
  role: Role;
  /** Sent in the dashboard's forms and compared with what they send back. */
  csrf: string;
  created_at: string;
  last_seen_at: string;
  /** The absolute end of the session, whatever its use (the idle end is last_seen_at plus the idle timeout). */
  expires_at: string;
}

export interface AccessTable {
  /** Adds a key; CONFLICT when a key that is not revoked has its name. */
  addKey(key: ApiKeyRecord): Promise<void>;
  /** Every key, revoked ones included, oldest first. */
  keys(): Promise<ApiKeyRecord[]>;
  keyByHash(hash: string): Promise<ApiKeyRecord | undefined>;
  /** Revokes the key with this id, or the live key with this name: the key as revoked, or undefined when none matches. A revoked key stays revoked (its first revocation time). */
  revokeKey(idOrName: string, at: string): Promise<ApiKeyRecord | undefined>;
  /** Records a use of key `id` (callers throttle it). */
  keyUsed(id: string, at: string): Promise<void>;

  /** Adds an operator, or with `replace` replaces one (its sessions end). CONFLICT when it exists and `replace` is not set. */
  putOperator(operator: OperatorRecord, replace: boolean): Promise<void>;
  operator(name: string): Promise<OperatorRecord | undefined>;
  operators(): Promise<OperatorRecord[]>;
  /** Removes an operator and ends its sessions; false when there was none. */
  removeOperator(name: string): Promise<boolean>;

  addSession(session: OperatorSessionRecord): Promise<void>;
  session(idHash: string): Promise<OperatorSessionRecord | undefined>;
  touchSession(idHash: string, at: string): Promise<void>;
  endSession(idHash: string): Promise<void>;
  /** Forgets the sessions that ended before `before` (absolute or idle end); returns how many. */
  dropSessionsBefore(expiredBefore: string, idleBefore: string): Promise<number>;
}

/** A record read back with the columns that change after it is written. */
export function keyWithColumns(doc: ApiKeyRecord, revokedAt: string | null, lastUsedAt: string | null): ApiKeyRecord {
  return { ...doc, ...(revokedAt === null ? {} : { revoked_at: revokedAt }), ...(lastUsedAt === null ? {} : { last_used_at: lastUsedAt }) };
}

export function sessionWithColumns(doc: OperatorSessionRecord, lastSeenAt: string): OperatorSessionRecord {
  return { ...doc, last_seen_at: lastSeenAt };
}

export function operatorExists(name: string): NanoPayError {
  return new NanoPayError('CONFLICT', `An operator named "${name}" exists`, { hint: `Change its password with: nanopay checkout operators passwd ${name}` });
}
