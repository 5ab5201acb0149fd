import type { IncomingHttpHeaders } from 'node:http';
import { NanoPayError } from '../errors.js';
import { KEY_PREFIX } from '../ops/access/keys.js';
import { sameSecret, sha256Hex } from '../ops/access/secrets.js';
import type { Store } from '../store/store.js';
import type { Role } from './roles.js';

/** A key's last use is written at most this often: a busy key does not write on every call. */
const USE_RECORDED_EVERY_MS = 60_000;

/**
 * Who calls the shop's API: the shop's token (admin), or an API key, looked up
 * by its hash at every call so a revoked key stops at once on every server.
 */
export class ApiKeys {
  private readonly lastRecorded = new Map<string, number>();

  constructor(
    private readonly store: Store,
    private readonly token: string,
  ) {}

  /** The caller's role, or UNAUTHORIZED. */
  async roleOf(headers: IncomingHttpHeaders): Promise<Role> {
    const match = /^Bearer\s+(.+)$/i.exec(String(headers.authorization ?? ''));
    const given = match?.[1]?.trim();
    if (given !== undefined) {
      if (sameSecret(given, this.token)) return 'admin';
      if (given.startsWith(KEY_PREFIX)) {
        const key = await this.store.access.keyByHash(sha256Hex(given));
        if (key !== undefined && key.revoked_at === undefined) {
          this.recordUse(key.id);
          return key.role;
        }
      }
    }
    throw new NanoPayError('UNAUTHORIZED', 'A valid "Authorization: Bearer <token or API key>" header is required');
  }

  private recordUse(id: string): void {
    const now = Date.now();
    if (now - (this.lastRecorded.get(id) ?? 0) < USE_RECORDED_EVERY_MS) return;
    this.lastRecorded.set(id, now);
    // Bookkeeping, not the answer: a failed write is tried again at the next use.
    this.store.access.keyUsed(id, new Date(now).toISOString()).catch(() => this.lastRecorded.delete(id));
  }
}
