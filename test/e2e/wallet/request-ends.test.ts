import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../../src/sandbox/index.js';
import { shutdownWorkers } from '../../../src/work/index.js';
import { backendUser } from '../../helpers/ledger/backend-users.js';
import { sandbox } from '../../helpers/ledger/sandbox.js';

/** The front end of expiry (flags, text, --json, exit 11) through bin/run.js; the matching itself is test/integration/request-ends.test.ts. */
let sb: RunningSandbox;

beforeAll(async () => {
  sb = await sandbox();
});

afterAll(async () => {
  await sb?.close();
  await shutdownWorkers();
});

describe('request --expires-in and status on a node backend', () => {
  it('prints the expiry, status says expired, status --watch ends with exit 11; a bad duration is a usage error', async () => {
    const merchant = await backendUser(sb, 'node');
    const made = await merchant.user.json<{ transaction_id: string; expires_at: string }>(['request', '0.2', '--expires-in', '2s', '--no-qr']);
    expect(made._code).toBe(0);
    const human = await merchant.user.run(['request', '0.2', '--expires-in', '1d', '--no-qr']);
    expect(human.stdout).toMatch(/^Expires: \d{4}-\d\d-\d\dT/m);

    const watched = await merchant.user.run(['status', made.transaction_id, '--watch', '--json', '--timeout', '60']);
    expect(watched.code).toBe(11);
    const lines = watched.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.at(-2)).toMatchObject({ event: 'status', is_paid: false, expired: true, expires_at: made.expires_at });
    expect(lines.at(-1)).toMatchObject({ error: { code: 'REQUEST_EXPIRED' } });

    const status = await merchant.user.json(['status', made.transaction_id]);
    expect(status).toMatchObject({ _code: 0, is_paid: false, expired: true, expires_at: made.expires_at });
    const text = await merchant.user.run(['status', made.transaction_id]);
    expect(text.stdout).toMatch(/^Expired: Not paid by /);

    for (const bad of ['5x', '0s', '91d']) {
      const refused = await merchant.user.json<{ error: { code: string } }>(['request', '1', '--expires-in', bad, '--no-qr']);
      expect([refused._code, refused.error.code], bad).toEqual([2, 'USAGE']);
    }
  });
});
