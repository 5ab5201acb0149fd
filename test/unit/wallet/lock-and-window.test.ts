import { execFileSync } from 'node:child_process';
import { mkdir, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { evaluate, type CountedSpend } from '../../../src/ops/spending/policy.js';
import { withAccountLock, withKeystoreLock } from '../../../src/wallet/lock.js';
import { tempDir } from '../../helpers/processes/temp.js';

const address = 'nano_3iy8tenzc3mcc7jprs6gszcsdbrnusfnsjyp8my3f1jwtshn6mdowe5gpytj';

/** The lock files in `dir`, without the holders they link to. */
const locksIn = async (dir: string): Promise<string[]> => (await readdir(dir)).filter((name) => !name.startsWith('.holder-'));
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

  it('a lock dir checked once and then removed is made again, private, and each lock file is gone once released', async () => {
    const dir = join(await tempDir('nanopay-lock-'), 'locks');
    await withAccountLock(dir, address, async () => undefined);
    expect(await locksIn(dir)).toEqual([]);
    await rm(dir, { recursive: true });
    expect(await withAccountLock(dir, address, async () => locksIn(dir))).toEqual([`${address}.lock`]);
    expect(((await stat(dir)).mode & 0o777).toString(8)).toBe('700');
    expect(await locksIn(dir)).toEqual([]);
  });

  it('a lock file is a link to its process\'s holder, which a process that died leaves for the next to sweep, and an exiting one removes', async () => {
    const dir = await tempDir('nanopay-lock-');
    const dead = join(dir, `.holder-${2 ** 22 + 1}-00000000`);
    await writeFile(dead, `${2 ** 22 + 1}\n${hostname()}\n2026-01-01T00:00:00.000Z`);
    const live = join(dir, `.holder-${process.ppid}-00000000`);
    await writeFile(live, `${process.ppid}\n${hostname()}\n2026-01-01T00:00:00.000Z`);
    const held = await withAccountLock(dir, address, async () => ({ names: await readdir(dir), lock: await stat(join(dir, `${address}.lock`)) }));
    expect(held.lock.nlink).toBe(2);
    const mine = held.names.filter((n) => n.startsWith(`.holder-${process.pid}-`));
    expect(mine).toHaveLength(1);
    expect((await stat(join(dir, mine[0] as string))).ino).toBe(held.lock.ino);
    // The dead process's holder is swept; a live one's is not.
    expect(held.names).not.toContain(`.holder-${2 ** 22 + 1}-00000000`);
    expect(held.names).toContain(`.holder-${process.ppid}-00000000`);

    // A process that takes a lock and exits leaves no file of its own.
    const child = join(dir, 'child');
    const lockModule = new URL('../../../dist/wallet/lock.js', import.meta.url).href;
    const script = `const { withAccountLock } = await import(${JSON.stringify(lockModule)}); await withAccountLock(${JSON.stringify(child)}, ${JSON.stringify(address)}, async () => undefined);`;
    execFileSync(process.execPath, ['--input-type=module', '-e', script]);
    expect(await readdir(child)).toEqual([]);
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
  it('counts the last 24 hours exactly: a spend leaves the window after 24 h', () => {
    const now = Date.parse('2026-11-23T12:00:00Z');
    const spend = (raw: bigint, at: number): CountedSpend => ({ to: address, frontEnd: 'cli', kind: 'send', amountRaw: raw, at, attended: false });
    const counted = [spend(5n, now - 25 * HOUR), spend(7n, now - 23 * HOUR)];
    const decide = (raw: bigint, at = now) => evaluate({ day: '10' }, { frontEnd: 'cli', kind: 'send', to: address, amountRaw: raw, at }, counted);
    expect(decide(4n)).toMatchObject({ outcome: 'deny', rule: 'day', remainingRaw: 3n });
    expect(decide(3n)).toEqual({ outcome: 'allow' });
    // An hour later the 7 raw of 23 hours ago has left the window.
    expect(decide(10n, now + HOUR + 1)).toEqual({ outcome: 'allow' });
  });
});
