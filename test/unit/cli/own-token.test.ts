import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ownToken } from '../../../src/cli/server-access.js';
import { NanoPayError } from '../../../src/errors.js';
import { tempDir } from '../../helpers/processes/temp.js';

// A server's token or webhook secret file: made when absent, kept when long enough, never replaced when someone wrote one.
describe('ownToken', () => {
  it('makes a private random token when there is no file, and gives the same one back afterwards', async () => {
    const path = join(await tempDir(), 'checkout.token');
    const made = await ownToken(path);
    expect(made).toMatch(/^[\w-]{43}$/);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(await ownToken(path)).toBe(made);
  });

  it('keeps a secret the user wrote, and fills an empty file', async () => {
    const dir = await tempDir();
    const kept = join(dir, 'webhook.secret');
    writeFileSync(kept, `${'k'.repeat(40)}\n`, { mode: 0o600 });
    expect(await ownToken(kept)).toBe('k'.repeat(40));
    const empty = join(dir, 'empty.token');
    writeFileSync(empty, '', { mode: 0o600 });
    const filled = await ownToken(empty);
    expect(readFileSync(empty, 'utf8').trim()).toBe(filled);
  });

  it('refuses a secret too short to keep (USAGE), saying its length only, and leaves the file as it was', async () => {
    const path = join(await tempDir(), 'webhook.secret');
    writeFileSync(path, 'my-short-shop-secret\n', { mode: 0o600 });
    const refused = await ownToken(path).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(NanoPayError);
    expect((refused as NanoPayError).code).toBe('USAGE');
    expect((refused as NanoPayError).message).toContain('20 characters');
    expect((refused as NanoPayError).message).not.toContain('my-short-shop-secret');
    expect(readFileSync(path, 'utf8')).toBe('my-short-shop-secret\n');
  });
});
