import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { payUri } from '../../../src/ops/requests/payments.js';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { backendUser, fundedUser, type BackendUser } from '../../helpers/ledger/backend-users.js';
import { postgresUnavailable, startPostgres, type PostgresCluster } from '../../helpers/ledger/postgres.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';
import { startCommand, type RunningCommand } from '../../helpers/processes/serve.js';
import { until } from '../../helpers/network/webhook-receiver.js';

/**
 * API keys with roles (issue 44, point 1), through the built CLI and a running checkout serve, on SQLite and
 * PostgreSQL: each role reaches its routes and gets 403 naming the role on the others; a key revoked while the
 * server runs gets 401 at once; the shop's token stays admin; last use is recorded; the secret is printed once.
 */
const skipPostgres = postgresUnavailable();
type Printed = { url: string; token_file: string };
interface Answer {
  status: number;
  body: Record<string, any>;
}
interface Made {
  key: Record<string, any>;
  secret: string;
}

let sb: RunningSandbox;
let cluster: PostgresCluster | undefined;

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  await cluster?.stop();
  await sb?.close();
  await shutdownWorkers();
});

const stores = [
  ['SQLite', undefined],
  ['PostgreSQL', skipPostgres],
] as const;

describe.each(stores)('API keys and roles on %s', (store, skip) => {
  let merchant: BackendUser;
  let payer: BackendUser;
  let env: NodeJS.ProcessEnv;
  let server: RunningCommand<Printed>;
  let token: string;
  let keys: Record<'read' | 'create' | 'refund', Made>;
  const outputs: string[] = [];

  const call = async (bearer: string, path: string, init: RequestInit = {}): Promise<Answer> => {
    const r = await fetch(`${server.printed.url}${path}`, { ...init, headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}`, ...(init.headers as Record<string, string>) } });
    const text = await r.text();
    return { status: r.status, body: r.headers.get('content-type')?.includes('json') === true && !path.includes('export') ? (JSON.parse(text) as Record<string, any>) : { text } };
  };
  const cli = async (args: string[], input?: string) => {
    const result = await merchant.user.run(args, { env, ...(input === undefined ? {} : { input }) });
    outputs.push(result.stdout, result.stderr);
    return result;
  };
  const makeKey = async (name: string, role: string): Promise<Made> => {
    const result = await cli(['checkout', 'keys', 'create', '--name', name, '--role', role, '--json']);
    expect(result.code).toBe(0);
    return JSON.parse(result.stdout) as Made;
  };
  const listed = async (): Promise<Record<string, any>[]> => {
    const result = await cli(['checkout', 'keys', 'list', '--json']);
    expect(result.code).toBe(0);
    return (JSON.parse(result.stdout) as { keys: Record<string, any>[] }).keys;
  };
  const newRequest = async (bearer: string, amount = '0.1'): Promise<Answer> => call(bearer, '/api/v1/requests', { method: 'POST', body: JSON.stringify({ amount }) });

  beforeAll(async () => {
    if (skip !== undefined) return;
    merchant = await backendUser(sb, 'node');
    payer = await fundedUser(sb, 'node', '1');
    env = merchant.user.env;
    if (store === 'PostgreSQL') {
      cluster ??= await startPostgres();
      env = { ...env, NANOPAY_DATABASE_URL: await cluster.createDatabase(`keys_${randomUUID().replaceAll('-', '')}`) };
    }
    // Keys made before the server starts, and one after (below): both work, as the server reads the store on every call.
    keys = { read: await makeKey('reports', 'read'), create: await makeKey('backend', 'create'), refund: { key: {}, secret: '' } };
    server = await startCommand<Printed>(['checkout', 'serve', '--json', '--poll-interval', '1', '--log-format', 'json'], env);
    token = readFileSync(server.printed.token_file, 'utf8').trim();
  });

  afterAll(async () => {
    await server?.stop();
  });

  it.skipIf(skip !== undefined)('prints the secret once, at creation, and lists keys without it', async () => {
    keys.refund = await makeKey('support', 'refund');
    for (const made of Object.values(keys)) {
      expect(made.secret).toMatch(/^npk_[A-Za-z0-9_-]{43}$/);
      expect(made.secret.startsWith(made.key.prefix as string)).toBe(true);
      expect(made.key).not.toHaveProperty('hash');
    }
    const human = await cli(['checkout', 'keys', 'create', '--name', 'spare', '--role', 'read']);
    const secret = /npk_[A-Za-z0-9_-]{43}/.exec(human.stdout)?.[0];
    expect(secret).toBeDefined();
    const table = await cli(['checkout', 'keys', 'list']);
    expect(table.stdout).toContain('reports');
    expect(table.stdout).toContain(keys.read.key.prefix as string);
    const all = await listed();
    expect(all.map((k) => [k.name, k.role])).toEqual([
      ['reports', 'read'],
      ['backend', 'create'],
      ['support', 'refund'],
      ['spare', 'read'],
    ]);
    const text = JSON.stringify(all) + table.stdout;
    for (const s of [...Object.values(keys).map((k) => k.secret), secret as string]) expect(text).not.toContain(s.slice(12));
    // A live name is taken; refused with CONFLICT.
    const again = await cli(['checkout', 'keys', 'create', '--name', 'reports', '--role', 'admin']);
    expect(again.code).toBe(10);
    expect(again.stderr).toContain('CONFLICT');
  });

  it.skipIf(skip !== undefined)('a read key lists, gets and exports, and is refused 403 on create, refund and metrics', async () => {
    const made = await newRequest(token);
    expect(made.status).toBe(200);
    const id = made.body.data.id as string;
    const read = keys.read.secret;
    expect((await call(read, '/api/v1/requests')).status).toBe(200);
    expect((await call(read, `/api/v1/requests/${id}`)).body.data.id).toBe(id);
    const exported = await call(read, '/api/v1/requests/export?format=csv');
    expect(exported.status).toBe(200);
    expect(exported.body.text).toContain(id);
    expect((await call(read, `/api/v1/requests/${id}/refunds`)).status).toBe(200);
    const create = await newRequest(read);
    expect(create).toMatchObject({ status: 403, body: { error: { error: 'FORBIDDEN' } } });
    expect(JSON.stringify(create.body)).toContain('needs the create role');
    const refund = await call(read, `/api/v1/requests/${id}/refunds`, { method: 'POST', body: '{}' });
    expect(refund).toMatchObject({ status: 403, body: { error: { error: 'FORBIDDEN' } } });
    expect(JSON.stringify(refund.body)).toContain('needs the refund role');
    expect((await call(read, '/metrics')).status).toBe(403);
  });

  it.skipIf(skip !== undefined)('a create key makes requests but cannot refund; a refund key refunds but cannot create; the token does all', async () => {
    const made = await newRequest(keys.create.secret, '0.2');
    expect(made.status).toBe(200);
    const request = made.body.data;
    await payUri(payer.session, request.uri as string, {});
    await until(async () => (await call(token, `/api/v1/requests/${request.id as string}`)).body.data.status === 'paid', 'paid');
    const refundPath = `/api/v1/requests/${request.id as string}/refunds`;
    expect(await call(keys.create.secret, refundPath, { method: 'POST', body: '{}' })).toMatchObject({ status: 403, body: { error: { error: 'FORBIDDEN' } } });
    expect(await newRequest(keys.refund.secret)).toMatchObject({ status: 403, body: { error: { error: 'FORBIDDEN' } } });
    const ordered = await call(keys.refund.secret, refundPath, { method: 'POST', body: '{}' });
    expect(ordered).toMatchObject({ status: 202, body: { data: { status: 'pending', amount: request.amount, to: payer.address } } });
    expect((await call(keys.refund.secret, refundPath)).body.data.data).toHaveLength(1);
    // The shop's token is admin: metrics too.
    expect((await newRequest(token)).status).toBe(200);
    const metrics = await call(token, '/metrics');
    expect(metrics.status).toBe(200);
  });

  it.skipIf(skip !== undefined)('records when each key was last used, and never for one not used', async () => {
    const all = await listed();
    const byName = new Map(all.map((k) => [k.name as string, k]));
    for (const name of ['reports', 'backend', 'support']) expect(Date.parse(byName.get(name)?.last_used_at as string)).toBeGreaterThanOrEqual(Date.parse(byName.get(name)?.created_at as string));
    expect(byName.get('spare')).not.toHaveProperty('last_used_at');
  });

  it.skipIf(skip !== undefined)('refuses an unknown key, no key, and a key revoked while the server runs (401), and takes a web page never', async () => {
    expect((await call(`npk_${'A'.repeat(43)}`, '/api/v1/requests')).status).toBe(401);
    expect((await fetch(`${server.printed.url}/api/v1/requests`)).status).toBe(401);
    expect((await call(keys.read.secret, '/api/v1/requests', { headers: { origin: 'https://evil.example' } })).status).toBe(403);
    expect((await call(keys.read.secret, '/api/v1/requests')).status).toBe(200);
    const revoked = await cli(['checkout', 'keys', 'revoke', 'reports', '--json']);
    expect(revoked.code).toBe(0);
    expect(JSON.parse(revoked.stdout).key).toMatchObject({ name: 'reports', revoked_at: expect.any(String) });
    expect(await call(keys.read.secret, '/api/v1/requests')).toMatchObject({ status: 401, body: { error: { error: 'UNAUTHORIZED' } } });
    // By id too; a revoked name is free for a new key, and an unknown one is NOT_FOUND.
    expect((await cli(['checkout', 'keys', 'revoke', keys.create.key.id as string])).code).toBe(0);
    expect((await newRequest(keys.create.secret)).status).toBe(401);
    expect((await call(keys.refund.secret, '/api/v1/requests')).status).toBe(200);
    const renewed = await makeKey('reports', 'read');
    expect((await call(renewed.secret, '/api/v1/requests')).status).toBe(200);
    expect((await cli(['checkout', 'keys', 'revoke', 'nobody'])).code).toBe(9);
    const all = await listed();
    expect(all.filter((k) => k.name === 'reports').map((k) => k.revoked_at === undefined)).toEqual([false, true]);
  });

  it.skipIf(skip !== undefined)('never shows a secret in the server log or in any later output', () => {
    const later = outputs.join('\n') + server.stderr();
    for (const made of Object.values(keys)) {
      expect(server.stderr()).not.toContain(made.secret);
      expect(later.split(made.secret).length).toBe(2);
    }
  });
});
