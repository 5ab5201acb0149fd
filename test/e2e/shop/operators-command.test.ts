import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { operatorSessions } from '../../../src/shop/operator-sessions.js';
import { sqlitePath } from '../../../src/store/open.js';
import { SqliteStore } from '../../../src/store/sqlite.js';
import { newUser, type CliUser } from '../../helpers/processes/cli.js';

/**
 * The dashboard's operators through the built CLI (issue 44, point 2): added with a password from stdin (never
 * the key store password nor a flag), listed without their hash, given a new password, removed; the sign-in
 * takes what the CLI wrote.
 */
describe('checkout operators', () => {
  let user: CliUser;
  const PASSWORD = 'operator password 1';

  beforeAll(async () => {
    user = await newUser('http://127.0.0.1:9', { NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: 'http://127.0.0.1:9' });
  });

  const signIn = async (name: string, password: string): Promise<string> => {
    const store = await SqliteStore.open(sqlitePath(join(user.configDir, 'store'), 'default'), join(user.configDir, 'locks'), 'test');
    try {
      return (await operatorSessions(store).signIn(name, password, '127.0.0.1')).role;
    } catch (error) {
      return (error as { code: string }).code;
    } finally {
      await store.close();
    }
  };

  it('adds an operator with a password from stdin, lists it without the hash, and signs it in', async () => {
    const added = await user.json<{ operator: Record<string, unknown> }>(['checkout', 'operators', 'add', 'alice', '--role', 'refund', '--password-stdin'], { input: `${PASSWORD}\n` });
    expect(added).toMatchObject({ _code: 0, operator: { name: 'alice', role: 'refund' } });
    expect(added.operator).not.toHaveProperty('password');
    const listed = await user.run(['checkout', 'operators', 'list', '--json']);
    expect(JSON.parse(listed.stdout)).toMatchObject({ operators: [{ name: 'alice', role: 'refund' }] });
    expect(listed.stdout).not.toContain('scrypt');
    expect(await signIn('alice', PASSWORD)).toBe('refund');
    expect((await user.run(['checkout', 'operators', 'list'])).stdout).toMatch(/alice\s+refund/);
  });

  it('refuses a short password, an existing name, and a missing password without a terminal', async () => {
    const short = await user.run(['checkout', 'operators', 'add', 'bob', '--role', 'read', '--password-stdin'], { input: 'short\n' });
    expect(short.code).toBe(2);
    expect(short.stderr).toContain('at least 12 characters');
    const taken = await user.run(['checkout', 'operators', 'add', 'alice', '--role', 'admin', '--password-stdin'], { input: `${PASSWORD}\n` });
    expect(taken.code).toBe(10);
    // NANOPAY_PASSWORD (the key store's) is set in this environment: it is not taken as the operator's.
    const none = await user.run(['checkout', 'operators', 'add', 'bob', '--role', 'read']);
    expect(none.code).toBe(6);
    expect(none.stderr).toContain('--password-stdin');
    expect(JSON.parse((await user.run(['checkout', 'operators', 'list', '--json'])).stdout).operators).toHaveLength(1);
  });

  it('changes a password (the old one stops working), replaces the role, and removes the operator', async () => {
    expect((await user.run(['checkout', 'operators', 'passwd', 'alice', '--password-stdin'], { input: 'a brand new password\n' })).code).toBe(0);
    expect(await signIn('alice', PASSWORD)).toBe('UNAUTHORIZED');
    expect(await signIn('alice', 'a brand new password')).toBe('refund');
    const replaced = await user.json<{ operator: Record<string, unknown> }>(['checkout', 'operators', 'add', 'alice', '--role', 'admin', '--replace', '--password-stdin'], { input: `${PASSWORD}\n` });
    expect(replaced.operator).toMatchObject({ role: 'admin' });
    expect(await signIn('alice', PASSWORD)).toBe('admin');
    expect((await user.run(['checkout', 'operators', 'passwd', 'nobody', '--password-stdin'], { input: `${PASSWORD}\n` })).code).toBe(9);
    expect((await user.run(['checkout', 'operators', 'remove', 'alice'])).code).toBe(0);
    expect(await signIn('alice', PASSWORD)).toBe('UNAUTHORIZED');
    expect((await user.run(['checkout', 'operators', 'remove', 'alice'])).code).toBe(9);
  });
});
