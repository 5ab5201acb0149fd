import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { newUser } from '../../helpers/processes/cli.js';

describe('database-url', () => {
  it('is set without a password, which goes to PGPASSWORD or ~/.pgpass; config.json never holds one', async () => {
    const user = await newUser('http://127.0.0.1:9');
    const refused = await user.json<{ error: { code: string; message: string } }>(['config', 'set', 'database-url', 'postgres://shop:hunter22@db.example/shop']);
    expect(refused).toMatchObject({ _code: 3, error: { code: 'INVALID_REQUEST' } });
    expect(await readFile(join(user.configDir, 'config.json'), 'utf8').catch(() => '')).not.toContain('hunter22');
    expect(await user.json(['config', 'set', 'database-url', 'postgres://shop@db.example/shop'])).toMatchObject({ _code: 0 });
    expect(await user.json(['config', 'get', 'database-url'])).toMatchObject({ _code: 0, value: 'postgres://shop@db.example/shop', source: 'profile' });
    expect(await user.json(['config', 'set', 'database-url', 'mysql://shop@db.example/shop'])).toMatchObject({ _code: 3 });
  });

  it('from NANOPAY_DATABASE_URL is shown without its password, and a server that cannot be reached is STORE_UNAVAILABLE (exit 5) without it', async () => {
    const user = await newUser('http://127.0.0.1:9', { NANOPAY_DATABASE_URL: 'postgres://shop:hunter22@127.0.0.1:9/shop', NANOPAY_BACKEND: 'node', NANOPAY_NODE_URL: 'http://127.0.0.1:9' });
    const shown = await user.json<{ value: string; source: string }>(['config', 'get', 'database-url']);
    expect(shown).toMatchObject({ _code: 0, source: 'env' });
    expect(shown.value).not.toContain('hunter22');
    const result = await user.run(['status', '3f0b1c2e-0000-4000-8000-000000000000', '--json']);
    expect(result.code).toBe(5);
    expect(JSON.parse(result.stdout).error.code).toBe('STORE_UNAVAILABLE');
    expect(result.stdout + result.stderr).not.toContain('hunter22');
  });
});
