import type { IncomingHttpHeaders } from 'node:http';
import { NanoPayError } from '../errors.js';
import { refuseWebPages } from '../http/guards.js';
import type { Call } from '../http/server.js';
import { KEY_PREFIX } from '../ops/access/keys.js';
import { sameSecret, sha256Hex } from '../ops/access/secrets.js';
import type { Store } from '../store/store.js';
import { can, type Action, type Role } from './roles.js';

/** A key's last use is written at most this often (per key, per server): a busy key does not write on every call. */
const USE_RECORDED_EVERY_MS = 60_000;
/** Key ids whose last recorded use this server remembers, at most. */
const MAX_REMEMBERED = 10_000;

export interface ApiCaller {
  role: Role;
  /** The key's id, or undefined for the shop's token (checkout.token). */
  keyId?: string;
}

/**
 * Who calls the shop's API: the bearer is the shop's token (admin) or an API key that is not revoked, read
 * from the store on every call (a key revoked by any process is refused from the next call on), and its
 * role must allow the route's action. No bearer, or an unknown or revoked one: UNAUTHORIZED (401); a
 * role that does not allow the action: FORBIDDEN (403) naming the role it needs.
 */
export function apiAccess(store: Store, token: string, now: () => Date = () => new Date()) {
  const recorded = new Map<string, number>();

  const recordUse = async (id: string, lastUsedAt: string | undefined): Promise<void> => {
    const at = now().getTime();
    const last = Math.max(recorded.get(id) ?? 0, lastUsedAt === undefined ? 0 : Date.parse(lastUsedAt));
    if (at - last < USE_RECORDED_EVERY_MS) return;
    recorded.delete(id);
    recorded.set(id, at);
    if (recorded.size > MAX_REMEMBERED) recorded.delete(recorded.keys().next().value as string);
    await store.access.keyUsed(id, new Date(at).toISOString());
  };

  const caller = async (headers: IncomingHttpHeaders): Promise<ApiCaller> => {
    const match = /^Bearer\s+(.+)$/i.exec(String(headers.authorization ?? ''));
    const given = match === null ? undefined : (match[1] as string).trim();
    if (given !== undefined) {
      if (sameSecret(given, token)) return { role: 'admin' };
      if (given.startsWith(KEY_PREFIX)) {
        const key = await store.access.keyByHash(sha256Hex(given));
        if (key !== undefined && key.revoked_at === undefined) {
          await recordUse(key.id, key.last_used_at);
          return { role: key.role, keyId: key.id };
        }
      }
    }
    throw new NanoPayError('UNAUTHORIZED', 'A valid "Authorization: Bearer <token or API key>" header is required', {
      hint: 'Use the shop token (checkout.token) or an API key that is not revoked (nanopay checkout keys list).',
    });
  };

  /** The caller, if its role allows `action`. */
  const authorize = async (headers: IncomingHttpHeaders, action: Action): Promise<ApiCaller> => {
    const found = await caller(headers);
    if (!can(found.role, action)) {
      throw new NanoPayError('FORBIDDEN', `This API key's role (${found.role}) does not allow this: it needs the ${action} role`, {
        hint: `Use a key with the ${action} role${action === 'admin' ? '' : ' (or admin)'}: nanopay checkout keys create --name NAME --role ${action}`,
      });
    }
    return found;
  };

  /**
   * A route handler of the shop's API that only callers whose role allows `action` reach, and never a web page
   * (what browsers send with an Origin or cross-site mark is refused). Every route of the API is wrapped so.
   */
  const guarded =
    <T>(action: Action, handle: (call: Call, caller: ApiCaller) => Promise<T>) =>
    async (call: Call): Promise<T> => {
      const found = await authorize(call.headers, action);
      refuseWebPages(call.headers);
      return handle(call, found);
    };

  return { authorize, guarded };
}

export type ApiAccess = ReturnType<typeof apiAccess>;
