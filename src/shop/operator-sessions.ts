import { randomBytes } from 'node:crypto';
import { NanoPayError } from '../errors.js';
import { dummyPasswordHash, randomSecret, sameSecret, sha256Hex, verifyPassword } from '../ops/access/secrets.js';
import type { Store } from '../store/store.js';
import type { Role } from './roles.js';

/**
 * The dashboard's sign-in (issue 44): an operator (checkout operators add) signs in with name and password
 * and gets a session, whose random id is the cookie's value. The store keeps the id's SHA-256 only, with
 * the operator, role and a CSRF token; a session ends after IDLE_MS without use or LIFETIME_MS in all,
 * at sign-out, and when its operator is removed or given a new password. Failed sign-ins answer the same
 * for an unknown name and a wrong password, after the same scrypt work, and are throttled per name and
 * per client address (in this process: each server counts the failures it sees).
 */

const SESSION_COOKIE = 'nanopay_session';
const IDLE_MS = 30 * 60_000;
const LIFETIME_MS = 12 * 3_600_000;
/** Failures allowed (per name, per address) before each further attempt waits. */
const FREE_FAILURES = 5;
/** The first wait, doubled at each further failure up to MAX_WAIT_MS. */
const FIRST_WAIT_MS = 60_000;
const MAX_WAIT_MS = 15 * 60_000;
/** Failures older than this are forgotten. */
const FAILURE_MEMORY_MS = 60 * 60_000;
/** last_seen_at is written at most this often per session: a busy page does not write on every call. */
const TOUCH_EVERY_MS = 60_000;
/** Names and addresses whose failures are remembered, at most (the oldest are forgotten first). */
const MAX_TRACKED = 10_000;

/** A signed-in operator, as pages need it. */
export interface OperatorSession {
  operator: string;
  role: Role;
  /** Put in every form (a hidden field) and checked on every POST with checkCsrf. */
  csrf: string;
  expiresAt: string;
}

export interface SignedIn extends OperatorSession {
  /** The cookie's value: give it with sessionCookie(), never log it. */
  cookieValue: string;
}

export interface OperatorSessions {
  /** A new session; UNAUTHORIZED for a wrong name or password (the same answer), SIGN_IN_THROTTLED after too many failures. */
  signIn(name: string, password: string, client: string): Promise<SignedIn>;
  /** The session a request's Cookie header names, or undefined (none, unknown, expired, or its operator removed). */
  sessionOf(cookieHeader: string | undefined): Promise<OperatorSession | undefined>;
  /** Ends the session the Cookie header names (nothing when there is none). */
  signOut(cookieHeader: string | undefined): Promise<void>;
}

export interface OperatorSessionsOptions {
  /** The clock (tests move it). */
  now?: () => Date;
  idleMs?: number;
  lifetimeMs?: number;
}

interface Failures {
  count: number;
  last: number;
}

export function operatorSessions(store: Store, options: OperatorSessionsOptions = {}): OperatorSessions {
  const now = options.now ?? (() => new Date());
  const idleMs = options.idleMs ?? IDLE_MS;
  const lifetimeMs = options.lifetimeMs ?? LIFETIME_MS;
  const failures = new Map<string, Failures>();
  // Made now, so that not even the first unknown name costs more than a known one.
  void dummyPasswordHash();

  const waitFor = (key: string, at: number): number => {
    const seen = failures.get(key);
    if (seen === undefined || at - seen.last > FAILURE_MEMORY_MS) return 0;
    if (seen.count < FREE_FAILURES) return 0;
    const wait = Math.min(FIRST_WAIT_MS * 2 ** (seen.count - FREE_FAILURES), MAX_WAIT_MS);
    return Math.max(0, seen.last + wait - at);
  };
  const fail = (key: string, at: number): void => {
    const seen = failures.get(key);
    const count = seen === undefined || at - seen.last > FAILURE_MEMORY_MS ? 1 : seen.count + 1;
    failures.delete(key);
    failures.set(key, { count, last: at });
    if (failures.size > MAX_TRACKED) failures.delete(failures.keys().next().value as string);
  };

  const find = async (cookieHeader: string | undefined) => {
    const id = cookieValue(cookieHeader);
    if (id === undefined) return undefined;
    const idHash = sha256Hex(id);
    const session = await store.access.session(idHash);
    if (session === undefined) return undefined;
    const at = now().getTime();
    if (at >= Date.parse(session.expires_at) || at >= Date.parse(session.last_seen_at) + idleMs) {
      await store.access.endSession(idHash);
      return undefined;
    }
    return { idHash, session, at };
  };

  return {
    async signIn(name, password, client) {
      const at = now().getTime();
      const keys = [`name:${name}`, `client:${client}`];
      const wait = Math.max(...keys.map((k) => waitFor(k, at)));
      if (wait > 0) {
        throw new NanoPayError('SIGN_IN_THROTTLED', 'Too many failed sign-ins: wait before trying again', { hint: `Try again in ${Math.ceil(wait / 1000)} seconds.` });
      }
      const operator = await store.access.operator(name);
      // Unknown names cost the same scrypt as known ones, so the time of the answer does not tell them apart.
      const ok = await verifyPassword(password, operator?.password ?? (await dummyPasswordHash()));
      if (operator === undefined || !ok) {
        keys.forEach((k) => fail(k, at));
        throw new NanoPayError('UNAUTHORIZED', 'Wrong name or password');
      }
      failures.delete(keys[0] as string);
      const cookie = randomSecret();
      const created = new Date(at).toISOString();
      const expiresAt = new Date(at + lifetimeMs).toISOString();
      const csrf = randomBytes(32).toString('base64url');
      await store.access.addSession({ id_hash: sha256Hex(cookie), operator: operator.name, role: operator.role, csrf, created_at: created, last_seen_at: created, expires_at: expiresAt });
      await store.access.dropSessionsBefore(created, new Date(at - idleMs).toISOString());
      return { cookieValue: cookie, operator: operator.name, role: operator.role, csrf, expiresAt };
    },

    async sessionOf(cookieHeader) {
      const found = await find(cookieHeader);
      if (found === undefined) return undefined;
      const { idHash, session, at } = found;
      if (at - Date.parse(session.last_seen_at) >= TOUCH_EVERY_MS) await store.access.touchSession(idHash, new Date(at).toISOString());
      return { operator: session.operator, role: session.role, csrf: session.csrf, expiresAt: session.expires_at };
    },

    async signOut(cookieHeader) {
      const id = cookieValue(cookieHeader);
      if (id !== undefined) await store.access.endSession(sha256Hex(id));
    },
  };
}

/** The session cookie's value in a Cookie header. */
function cookieValue(cookieHeader: string | undefined): string | undefined {
  for (const part of (cookieHeader ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === SESSION_COOKIE) {
      const text = value.join('=');
      return /^[A-Za-z0-9_-]{43}$/.test(text) ? text : undefined;
    }
  }
  return undefined;
}

/** The Set-Cookie header of a new session: only the dashboard's paths get it, no script reads it, no other site sends it. */
export function sessionCookie(signedIn: Pick<SignedIn, 'cookieValue'>, options: { secure: boolean; maxAgeSeconds?: number }): string {
  const maxAge = options.maxAgeSeconds ?? LIFETIME_MS / 1000;
  return `${SESSION_COOKIE}=${signedIn.cookieValue}; HttpOnly; SameSite=Strict; Path=/dashboard; Max-Age=${maxAge}${options.secure ? '; Secure' : ''}`;
}

/** The Set-Cookie header that signs the browser out. */
export function clearedSessionCookie(options: { secure: boolean }): string {
  return `${SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/dashboard; Max-Age=0${options.secure ? '; Secure' : ''}`;
}

/** Whether a form's CSRF field is the session's token (constant time). */
function csrfMatches(session: Pick<OperatorSession, 'csrf'>, given: unknown): boolean {
  return typeof given === 'string' && given !== '' && sameSecret(given, session.csrf);
}

/** FORBIDDEN unless the form's CSRF field is the session's token. */
export function checkCsrf(session: Pick<OperatorSession, 'csrf'>, given: unknown): void {
  if (!csrfMatches(session, given)) throw new NanoPayError('FORBIDDEN', 'The form is stale or came from another site (CSRF token mismatch)', { hint: 'Reload the page and try again.' });
}
