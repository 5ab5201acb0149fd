import { appendFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SessionBook, type SellerSession } from '../../../src/x402/sessions/book.js';
import { tempDir } from '../../helpers/processes/temp.js';

const session = (id: string, charged: number): SellerSession => ({
  id,
  network: 'nano:dev',
  payer: 'nano_1payer',
  payTo: 'nano_1seller',
  sessionKey: '00'.repeat(32),
  openSignature: '00'.repeat(64),
  deposits: [{ hash: id, raw: '1000' }],
  charged: String(charged),
  counter: charged,
  openedAt: '2026-11-28T00:00:00.000Z',
  lastUsedAt: '2026-11-28T00:00:00.000Z',
  expiresAt: '2026-11-29T00:00:00.000Z',
  idleSeconds: 600,
  state: 'open',
});

describe('the seller session book', () => {
  it('keeps the last state of each session across a restart, a torn last line, and compactions while it runs', async () => {
    const dir = await tempDir('nanopay-session-book-');
    const book = await SessionBook.open(dir, 10);
    const [a, b] = ['A'.repeat(64), 'B'.repeat(64)];
    for (let i = 1; i <= 50; i++) await Promise.all([book.put(session(a, i)), book.put(session(b, 2 * i))]);
    const lines = (await readFile(join(dir, 'sessions.log'), 'utf8')).trim().split('\n');
    expect(lines.length).toBeLessThanOrEqual(12);
    // A second seller process of the same book is refused while this one holds it.
    await expect(SessionBook.open(dir)).rejects.toMatchObject({ code: 'CONFLICT' });
    await book.close();
    // A write cut short by a crash: never committed, never answered on.
    await appendFile(join(dir, 'sessions.log'), '{"s":{"id":"AAAA');
    const again = await SessionBook.open(dir);
    expect([again.get(a)?.charged, again.get(b)?.charged]).toEqual(['50', '100']);
    await again.close();
  });
});
