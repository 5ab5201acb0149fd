import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkPerDay } from '../../../src/ops/spending/limits.js';
import { withAccountLock, withKeystoreLock } from '../../../src/wallet/lock.js';
import { SendLog } from '../../../src/wallet/send-log.js';
import { tempDir } from '../../helpers/temp.js';

const address = 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj';
const HOUR = 60 * 60 * 1000;

describe('the account lock', () => {
  it('takes over a lock left by a process that no longer runs', async () => {
    const dir = await tempDir('nanopay-lock-');
    await mkdir(dir, { recursive: true });
    // Pid 2^22 + 1 is above Linux's pid_max: no process can hold it.
    await writeFile(join(dir, `${address}.lock`), `${2 ** 22 + 1}\n${hostname()}\n2026-01-01T00:00:00.000Z`);
    let held = '';
    await withAccountLock(dir, address, async () => {
      held = await readFile(join(dir, `${address}.lock`), 'utf8');
    });
    expect(held.split('\n')[0]).toBe(String(process.pid));
  });

  it('waits for a live holder and gives up with ACCOUNT_BUSY', async () => {
    const dir = await tempDir('nanopay-lock-');
    // The test runner's parent is alive and is not this process.
    await writeFile(join(dir, `${address}.lock`), `${process.ppid}\n${hostname()}\nnow`);
    await expect(withAccountLock(dir, address, async () => 'ran', { timeoutMs: 200 })).rejects.toMatchObject({ code: 'ACCOUNT_BUSY' });
  });

  it('the key store has a lock of its own, which names it when it is held too long', async () => {
    const dir = await tempDir('nanopay-lock-');
    const store = join(dir, 'keystore.json');
    await writeFile(`${store}.lock`, `${process.ppid}\n${hostname()}\nnow`);
    await expect(withAccountLock(dir, address, async () => 'ran')).resolves.toBe('ran');
    await expect(withKeystoreLock(store, async () => 'ran', { timeoutMs: 200 })).rejects.toMatchObject({ code: 'STORE_BUSY', message: expect.stringContaining('the key store') });
  });
});

describe('the daily window', () => {
  it('counts the last 24 hours exactly: a spend leaves the window after 24 h', async () => {
    const log = new SendLog(await tempDir('nanopay-sends-'));
    const now = Date.parse('2026-11-23T12:00:00Z');
    const spent = async (at: number): Promise<bigint> => [...(await log.spentWithin('p', at)).values()].reduce((a, b) => a + b, 0n);
    await log.recordSpend('p', { account: address, hash: 'A'.repeat(64), raw: 5n, at: now - 25 * HOUR });
    await log.recordSpend('p', { account: address, hash: 'B'.repeat(64), raw: 7n, at: now - 23 * HOUR });
    await log.recordSpend('p', { account: address, hash: 'B'.repeat(64), raw: 7n, at: now - 23 * HOUR });
    // Another profile's spending is its own.
    await log.recordSpend('q', { account: address, hash: 'C'.repeat(64), raw: 100n, at: now - HOUR });
    expect(await spent(now)).toBe(7n);
    expect(await spent(now + HOUR + 1)).toBe(0n);
    expect(() => checkPerDay({ perDay: '10' }, 7n, 4n)).toThrow(expect.objectContaining({ code: 'LIMIT_EXCEEDED' }));
    expect(() => checkPerDay({ perDay: '10' }, 7n, 3n)).not.toThrow();
  });
});
