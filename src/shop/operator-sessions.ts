import { NanoPayError } from '../errors.js';
import { randomSecret, sameSecret, sha256Hex, verifyPassword, dummyPasswordHash } from '../ops/access/secrets.js';
import type { OperatorSessionRecord } from '../store/access.js';
import type { Store } from '../store/store.js';
import type { Role } from './roles.js';

/**
 * The dashboard's sign-in: an operator's name and password make a session,
 * whose random id is the cookie (kept hashed in the store, so a copy of the
 * store signs no one in), with its own CSRF token for the forms. A session
 * ends after IDLE_MS unused or LIFETIME_MS in all, at sign-out, and when its
 * operator is removed or its password changed. Failed sign-ins are throttled
 * per name and per client address, and an unknown name costs what a wrong
 * password does.
 */

export const SESSION_COOKIE = 'nanopay_dashboard';
export const IDLE_MS = 30 * 60_000;
export const LIFETIME_MS = 12 * 3_600_000;
/** Failures of one name or one client address within FAILURE_WINDOW_MS before sign-ins from it wait. */
const MAX_FAILURES = 5;
const FAILURE_WINDOW_MS = 15 * 60_000;
/** A busy session's last use is written at most this often. */
const TOUCH_EVERY_MS = 60_000;

export interface SignedIn {
  name: string;
  role: Role;
  csrf: string;
  /** The session's id, hashed: what signing out ends. */
  idHash: string;
}

interface Failures {
  count: number;
  since: number;
}

export class OperatorSessions {
  private readonly failures = new Map<string, Failures>();
  private readonly now: () => number;

  constructor(
    private readonly store: Store,
    private readonly options: { secureCookie: boolean; now?: () => number },
  ) {
    this.now = options.now ?? Date.now;
  }

  /** A new session for the operator, or UNAUTHORIZED (the same for an unknown name and a wrong password). */
  async signIn(name: string, password: string, client: string): Promise<{ cookie: string; operator: SignedIn }> {
    const keys = [`name:${name}`, `client:${client}`];
    for (const key of keys) this.checkThrottle(key);
    const operator = await this.store.access.operator(name);
    const matches = await verifyPassword(password, operator?.password ?? (await dummyPasswordHash()));
    if (operator === undefined || !matches) {
      for (const key of keys) this.fail(key);
      throw new NanoPayError('UNAUTHORIZED', 'Wrong operator name or password');
    }
    for (const key of keys) this.failures.delete(key);
    const id = randomSecret();
    const at = this.now();
    const session: OperatorSessionRecord = {
      id_hash: sha256Hex(id),
      operator: operator.name,
      role: operator.role,
      csrf: randomSecret(),
      created_at: new Date(at).toISOString(),
      last_seen_at: new Date(at).toISOString(),
      expires_at: new Date(at + LIFETIME_MS).toISOString(),
    };
    await this.store.access.addSession(session);
    // Now and then, the sessions that ended are forgotten.
    await this.store.access.dropSessionsBefore(new Date(at).toISOString(), new Date(at - IDLE_MS).toISOString());
    return { cookie: this.cookie(id, LIFETIME_MS / 1000), operator: signedIn(session) };
  }

  /** The operator of the request's session cookie, if it names a session still alive. */
  async current(cookieHeader: string | undefined): Promise<SignedIn | undefined> {
    const id = cookieValue(cookieHeader, SESSION_COOKIE);
    if (id === undefined) return undefined;
    const session = await this.store.access.session(sha256Hex(id));
    if (session === undefined) return undefined;
    const at = this.now();
    if (Date.parse(session.expires_at) <= at || Date.parse(session.last_seen_at) + IDLE_MS <= at) {
      await this.store.access.endSession(session.id_hash);
      return undefined;
    }
    if (at - Date.parse(session.last_seen_at) >= TOUCH_EVERY_MS) await this.store.access.touchSession(session.id_hash, new Date(at).toISOString());
    return signedIn(session);
  }

  /** Ends the session; the answer's Set-Cookie clears the cookie. */
  async signOut(operator: SignedIn): Promise<string> {
    await this.store.access.endSession(operator.idHash);
    return this.cookie('', 0);
  }

  private cookie(value: string, maxAgeSeconds: number): string {
    return `${SESSION_COOKIE}=${value}; Path=/dashboard; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${this.options.secureCookie ? '; Secure' : ''}`;
  }

  private checkThrottle(key: string): void {
    const failures = this.failures.get(key);
    if (failures === undefined) return;
    if (this.now() - failures.since >= FAILURE_WINDOW_MS) {
      this.failures.delete(key);
      return;
    }
    if (failures.count >= MAX_FAILURES) {
      const minutes = Math.ceil((failures.since + FAILURE_WINDOW_MS - this.now()) / 60_000);
      throw new NanoPayError('RATE_LIMIT_EXCEEDED', `Too many failed sign-ins: try again in ${minutes} minute${minutes === 1 ? '' : 's'}`);
    }
  }

  private fail(key: string): void {
    const failures = this.failures.get(key);
    if (failures === undefined || this.now() - failures.since >= FAILURE_WINDOW_MS) this.failures.set(key, { count: 1, since: this.now() });
    else failures.count += 1;
  }
}

/** A form's CSRF field checked against the session's token, in constant time. */
export function checkCsrf(operator: SignedIn, given: unknown): void {
  if (typeof given !== 'string' || !sameSecret(given, operator.csrf)) {
    throw new NanoPayError('FORBIDDEN', 'This form is out of date or was not sent from the dashboard: reload the page and try again');
  }
}

const signedIn = (session: OperatorSessionRecord): SignedIn => ({ name: session.operator, role: session.role, csrf: session.csrf, idHash: session.id_hash });

function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key === name) return value.join('=') || undefined;
  }
  return undefined;
}
