import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Journal, type JournalEntry } from '../../../src/wallet/journal.js';
import { tempDir } from '../../helpers/processes/temp.js';

const address = 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj';

function entry(hash: string): JournalEntry {
  const block = { type: 'state' as const, account: address, previous: '0'.repeat(64), representative: address, balance: '1', link: '0'.repeat(64), signature: '0'.repeat(128), work: '0'.repeat(16) };
  return { hash, subtype: 'send', block, createdAt: '2026-11-26T00:00:00.000Z', amountRaw: '1' };
}

describe('the journal', () => {
  it('writes each entry through the file the last cleared entry left (no new file per payment), which it never reads as an entry', async () => {
    const dir = await tempDir('nanopay-journal-');
    const journal = new Journal(dir);
    await journal.record(address, entry('A'.repeat(64)));
    const first = (await stat(join(dir, `${address}.json`))).ino;
    await journal.clear(address);
    expect(await journal.read(address)).toBeUndefined();
    expect(await journal.all()).toEqual([]);
    expect(await readdir(dir)).toEqual([`.${address}.spare`]);
    await journal.record(address, entry('B'.repeat(64)));
    expect((await stat(join(dir, `${address}.json`))).ino).toBe(first);
    expect(await journal.read(address)).toEqual(entry('B'.repeat(64)));
    expect((await journal.all()).map((e) => e.hash)).toEqual(['B'.repeat(64)]);
    // A shorter entry leaves nothing of the longer one before it.
    const short = { ...entry('C'.repeat(64)), amountRaw: undefined };
    await journal.clear(address);
    await journal.record(address, short);
    expect(await journal.read(address)).toEqual(JSON.parse(JSON.stringify(short)));
    expect((await stat(join(dir, `${address}.json`))).mode & 0o777).toBe(0o600);
  });
});
