import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NanoPayError } from '../../../src/errors.js';
import { createKey, revokeKey } from '../../../src/ops/access/keys.js';
import { addOperator, removeOperator, setOperatorPassword } from '../../../src/ops/access/operators.js';
import { apiAccess } from '../../../src/shop/api-access.js';
import { checkCsrf, clearedSessionCookie, operatorSessions, sessionCookie } from '../../../src/shop/operator-sessions.js';
import { PostgresStore } from '../../../src/store/postgres.js';
import { SqliteStore } from '../../../src/store/sqlite.js';
import type { Store } from '../../../src/store/store.js';
import { postgresUnavailable, startPostgres, type PostgresCluster } from '../../helpers/ledger/postgres.js';

/** The dashboard's session cookie, by its name. */
const SESSION_COOKIE = 'nanopay_session';

/**
 * The dashboard's sign-in (issue 44, point 3) on both stores, with a clock the test moves: sessions kept
 * hashed, their idle and absolute ends, sign-out, the same answer for an unknown name and a wrong password,
 * the throttle per name and per address, and removal or a new password ending an operator's sessions.
 */
let dir: string;
let cluster: PostgresCluster | undefined;
const opened: Store[] = [];
const pgSkip = postgresUnavailable();

const kinds = [
  {
    name: 'SQLite',
    skip: undefined as string | undefined,
    open: async (): Promise<Store> => SqliteStore.open(join(dir, `${randomUUID()}.sqlite`), join(dir, 'locks'), 'test'),
  },
  {
    name: 'PostgreSQL',
    skip: pgSkip,
    open: async (): Promise<Store> => PostgresStore.open(await (cluster as PostgresCluster).createDatabase(`s_${randomUUID().replaceAll('-', '')}`)),
  },
];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nanopay-sessions-'));
  if (pgSkip === undefined) cluster = await startPostgres();
});

afterAll(async () => {
  for (const store of opened) await store.close().catch(() => undefined);
  await cluster?.stop();
  await rm(dir, { recursive: true, force: true });
});

const PASSWORD = 'a long enough password';
const MINUTE = 60_000;

async function failure(promise: Promise<unknown>): Promise<NanoPayError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(NanoPayError);
  return error as NanoPayError;
}

describe.each(kinds)('operator sessions on $name', ({ skip, open }) => {
  let store: Store;
  let clock: number;
  const now = (): Date => new Date(clock);
    const cookie = (value: string): string => `other=1; ${SESSION_COOKIE}=${value}; theme=dark`;

  beforeAll(async () => {
    if (skip !== undefined) return;
    store = await open();
    opened.push(store);
    await addOperator(store, { name: 'alice', role: 'refund', password: PASSWORD });
    await addOperator(store, { name: 'bob', role: 'read', password: PASSWORD });
  });

  it.skipIf(skip !== undefined)('signs in, finds the session from the Cookie header, and signs out', async () => {
    clock = Date.parse('2026-03-01T10:00:00Z');
    const sessions = operatorSessions(store, { now });
    const signed = await sessions.signIn('alice', PASSWORD, '10.0.0.1');
    expect(signed).toMatchObject({ operator: 'alice', role: 'refund', expiresAt: '2026-03-01T22:00:00.000Z' });
    expect(signed.cookieValue).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(signed.csrf).not.toBe(signed.cookieValue);
    // The store keeps neither the id nor anything that reads back as it.
    expect(await store.access.session(signed.cookieValue)).toBeUndefined();
    expect(await sessions.sessionOf(cookie(signed.cookieValue))).toEqual({ operator: 'alice', role: 'refund', csrf: signed.csrf, expiresAt: signed.expiresAt });
    expect(await sessions.sessionOf(undefined)).toBeUndefined();
    expect(await sessions.sessionOf(cookie('x'.repeat(43)))).toBeUndefined();
    // Another server on the same store knows the session.
    expect((await operatorSessions(store, { now }).sessionOf(cookie(signed.cookieValue)))?.operator).toBe('alice');
    await sessions.signOut(cookie(signed.cookieValue));
    expect(await sessions.sessionOf(cookie(signed.cookieValue))).toBeUndefined();
  });

  it.skipIf(skip !== undefined)('ends a session idle for 30 minutes, and any after 12 hours however used', async () => {
    clock = Date.parse('2026-03-02T08:00:00Z');
    const sessions = operatorSessions(store, { now });
    const idle = await sessions.signIn('alice', PASSWORD, '10.0.0.2');
    const busy = await sessions.signIn('bob', PASSWORD, '10.0.0.2');
    clock += 29 * MINUTE;
    expect(await sessions.sessionOf(cookie(busy.cookieValue))).toBeDefined();
    clock += 2 * MINUTE;
    expect(await sessions.sessionOf(cookie(idle.cookieValue))).toBeUndefined();
    // Used every 20 minutes, the other lives until its absolute end.
    for (let i = 0; i < 34; i++) {
      clock += 20 * MINUTE;
      expect(await sessions.sessionOf(cookie(busy.cookieValue))).toBeDefined();
    }
    clock = Date.parse(busy.expiresAt);
    expect(await sessions.sessionOf(cookie(busy.cookieValue))).toBeUndefined();
  });

  it.skipIf(skip !== undefined)('answers the same for an unknown name and a wrong password, and throttles per name and per address', async () => {
    clock = Date.parse('2026-03-03T08:00:00Z');
    const sessions = operatorSessions(store, { now });
    const unknown = await failure(sessions.signIn('mallory', PASSWORD, '10.0.0.3'));
    const wrong = await failure(sessions.signIn('alice', 'not the password', '10.0.0.4'));
    expect([unknown.code, unknown.message]).toEqual([wrong.code, wrong.message]);
    expect(wrong.code).toBe('UNAUTHORIZED');
    // Four more wrong passwords for alice from various addresses: the name is now throttled, even with the right password.
    for (let i = 0; i < 4; i++) expect((await failure(sessions.signIn('alice', `wrong ${i}`, `10.1.0.${i}`))).code).toBe('UNAUTHORIZED');
    expect((await failure(sessions.signIn('alice', PASSWORD, '10.9.9.9'))).code).toBe('SIGN_IN_THROTTLED');
    expect((await sessions.signIn('bob', PASSWORD, '10.9.9.9')).operator).toBe('bob');
    clock += MINUTE;
    expect((await sessions.signIn('alice', PASSWORD, '10.9.9.9')).operator).toBe('alice');
    // Five failures from one address, over various names: that address waits, others do not.
    for (let i = 0; i < 5; i++) expect((await failure(sessions.signIn(`guess${i}`, PASSWORD, '10.6.6.6'))).code).toBe('UNAUTHORIZED');
    expect((await failure(sessions.signIn('bob', PASSWORD, '10.6.6.6'))).code).toBe('SIGN_IN_THROTTLED');
    expect((await sessions.signIn('bob', PASSWORD, '10.7.7.7')).operator).toBe('bob');
    // Each further failure doubles the wait.
    clock += MINUTE;
    expect((await failure(sessions.signIn('guess', PASSWORD, '10.6.6.6'))).code).toBe('UNAUTHORIZED');
    clock += MINUTE;
    expect((await failure(sessions.signIn('bob', PASSWORD, '10.6.6.6'))).code).toBe('SIGN_IN_THROTTLED');
    clock += MINUTE;
    expect((await sessions.signIn('bob', PASSWORD, '10.6.6.6')).operator).toBe('bob');
  });

  it.skipIf(skip !== undefined)('a new password or the removal of the operator ends its sessions; a new role takes effect at the next sign-in', async () => {
    clock = Date.parse('2026-03-04T08:00:00Z');
    const sessions = operatorSessions(store, { now });
    await addOperator(store, { name: 'carol', role: 'create', password: PASSWORD });
    const first = await sessions.signIn('carol', PASSWORD, '10.0.0.5');
    const other = await sessions.signIn('bob', PASSWORD, '10.0.0.5');
    await setOperatorPassword(store, 'carol', 'the new long password', now());
    expect(await sessions.sessionOf(cookie(first.cookieValue))).toBeUndefined();
    expect(await sessions.sessionOf(cookie(other.cookieValue))).toBeDefined();
    expect((await failure(sessions.signIn('carol', PASSWORD, '10.0.0.5'))).code).toBe('UNAUTHORIZED');
    const second = await sessions.signIn('carol', 'the new long password', '10.0.0.5');
    await addOperator(store, { name: 'carol', role: 'admin', password: 'the new long password', replace: true });
    expect(await sessions.sessionOf(cookie(second.cookieValue))).toBeUndefined();
    const third = await sessions.signIn('carol', 'the new long password', '10.0.0.5');
    expect(third.role).toBe('admin');
    await removeOperator(store, 'carol');
    expect(await sessions.sessionOf(cookie(third.cookieValue))).toBeUndefined();
    expect((await failure(sessions.signIn('carol', 'the new long password', '10.0.0.5'))).code).toBe('UNAUTHORIZED');
    expect((await store.access.operators()).map((o) => o.name)).toEqual(['alice', 'bob']);
  });

  it.skipIf(skip !== undefined)('keeps passwords as salted scrypt hashes with their parameters', async () => {
    const [alice, bob] = await store.access.operators();
    expect(alice?.password).toMatch(/^scrypt\$15\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(alice?.password).not.toContain(PASSWORD);
    // The same password, another salt.
    expect(alice?.password).not.toBe(bob?.password);
  });
});

describe.each(kinds)('API keys on $name', ({ skip, open }) => {
  it.skipIf(skip !== undefined)('takes the token as admin and a key as its role, records its use at most once a minute, and refuses it once revoked', async () => {
    const store = await open();
    opened.push(store);
    let clock = Date.parse('2026-04-01T00:00:00Z');
    const access = apiAccess(store, 'the-shop-token', () => new Date(clock));
    const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });
    const { key, secret } = await createKey(store, { name: 'backend', role: 'create', now: new Date(clock) });
    expect(await access.authorize(bearer('the-shop-token'), 'admin')).toEqual({ role: 'admin' });
    expect(await access.authorize(bearer(secret), 'create')).toEqual({ role: 'create', keyId: key.id });
    expect((await failure(access.authorize(bearer(secret), 'refund'))).code).toBe('FORBIDDEN');
    const lastUsed = async () => (await store.access.keys())[0]?.last_used_at;
    expect(await lastUsed()).toBe('2026-04-01T00:00:00.000Z');
    clock += 59_000;
    await access.authorize(bearer(secret), 'read');
    // Another server (its own memory) reads the recorded use and does not write it again either.
    await apiAccess(store, 'the-shop-token', () => new Date(clock)).authorize(bearer(secret), 'read');
    expect(await lastUsed()).toBe('2026-04-01T00:00:00.000Z');
    clock += 2_000;
    await access.authorize(bearer(secret), 'read');
    expect(await lastUsed()).toBe('2026-04-01T00:01:01.000Z');
    await revokeKey(store, 'backend', new Date(clock));
    for (const given of [secret, `${secret}x`, 'the-shop-tokeN', '']) expect((await failure(access.authorize(bearer(given), 'read'))).code).toBe('UNAUTHORIZED');
    expect((await failure(access.authorize({}, 'read'))).code).toBe('UNAUTHORIZED');
    // Its hash is what the store keeps.
    expect(JSON.stringify(await store.access.keys())).not.toContain(secret.slice(4));
  });
});

describe('the cookie and the CSRF check', () => {
  it('builds a cookie only the dashboard gets, Secure behind https', () => {
    expect(sessionCookie({ cookieValue: 'abc' }, { secure: false })).toBe(`${SESSION_COOKIE}=abc; HttpOnly; SameSite=Strict; Path=/dashboard; Max-Age=43200`);
    expect(sessionCookie({ cookieValue: 'abc' }, { secure: true })).toMatch(/; Secure$/);
    expect(clearedSessionCookie({ secure: true })).toBe(`${SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/dashboard; Max-Age=0; Secure`);
  });

  it('takes only the session’s own token', () => {
    const session = { csrf: 'the-token' };
    expect(() => checkCsrf(session, 'the-token')).not.toThrow();
    for (const given of ['the-tokeN', '', undefined, ['the-token'], 'the-token ']) expect(() => checkCsrf(session, given)).toThrow(/CSRF/);
  });
});
