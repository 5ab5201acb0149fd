import { appendFile, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HistoryLog, type HistoryRecord } from '../../../src/wallet/history-log.js';

let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'nanopay-history-'));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const record = (i: number): HistoryRecord => ({
  hash: i.toString(16).toUpperCase().padStart(64, '0'),
  account: 'nano_account',
  subtype: i % 2 === 0 ? 'send' : 'receive',
  amountRaw: String(i),
  balanceRaw: String(i * 1000),
  representative: 'nano_rep',
  at: new Date(1_700_000_000_000 + i * 1000).toISOString(),
  // Long lines, with multi-byte characters, so records straddle the 64 KiB chunks read from the end.
  id: `order-${i}-${'é'.repeat(100)}`,
});

const all = async (log: HistoryLog, profile: string): Promise<HistoryRecord[]> => {
  const out: HistoryRecord[] = [];
  for await (const r of log.newestFirst(profile)) out.push(r);
  return out;
};

describe('HistoryLog', () => {
  it('reads back every record newest first, across chunk boundaries, in a private file', async () => {
    const dir = join(root, 'history');
    const log = new HistoryLog(dir);
    const count = 800;
    for (let i = 0; i < count; i++) await log.append('default', record(i));
    const read = await all(log, 'default');
    expect(read).toHaveLength(count);
    expect(read.map((r) => Number(r.amountRaw))).toEqual([...Array(count).keys()].reverse());
    expect(read[0]).toEqual(record(count - 1));
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    const [file] = await readdir(dir);
    expect((await stat(join(dir, file as string))).mode & 0o777).toBe(0o600);
    expect(await all(log, 'another profile')).toEqual([]);
  });

  it('skips a line torn by a crash and a block recorded twice', async () => {
    const log = new HistoryLog(join(root, 'torn'));
    await log.append('p', record(1));
    await log.append('p', record(2));
    await log.append('p', record(1));
    const [file] = await readdir(join(root, 'torn'));
    await appendFile(join(root, 'torn', file as string), '{"hash": "ABC", "acc');
    expect((await all(log, 'p')).map((r) => r.amountRaw)).toEqual(['1', '2']);
  });
});
