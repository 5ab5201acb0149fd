import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tryLease } from '../../../src/wallet/lock.js';
import { tempDir } from '../../helpers/processes/temp.js';

const leaseFile = (pid: number, until: number): string => `${pid}\n${hostname()}\n${new Date().toISOString()}\n${until}\nother`;

describe('tryLease: a lane claim held by one caller at a time, across processes', () => {
  it('is taken at once or not at all, and given back only by its holder', async () => {
    const path = join(await tempDir('nanopay-lease-'), 'sub', 'lane.claim');
    const release = await tryLease(path, Date.now() + 60_000);
    expect(release).toBeDefined();
    expect(await tryLease(path, Date.now() + 60_000)).toBeUndefined();
    await release?.();
    const again = await tryLease(path, Date.now() + 60_000);
    expect(again).toBeDefined();
    // A release of a lease that was taken over since leaves the new holder's file alone.
    writeFileSync(path, leaseFile(process.pid, Date.now() + 60_000));
    await again?.();
    expect(readFileSync(path, 'utf8')).toMatch(/other$/);
  });

  it('is taken over when its process died, or its time ran out; a live, current one is not', async () => {
    const dir = await tempDir('nanopay-lease-');
    const dead = spawnSync(process.execPath, ['-e', '']).pid as number;
    writeFileSync(join(dir, 'dead.claim'), leaseFile(dead, Date.now() + 60_000));
    expect(await tryLease(join(dir, 'dead.claim'), Date.now() + 60_000)).toBeDefined();
    writeFileSync(join(dir, 'expired.claim'), leaseFile(process.pid, Date.now() - 1));
    expect(await tryLease(join(dir, 'expired.claim'), Date.now() + 60_000)).toBeDefined();
    writeFileSync(join(dir, 'live.claim'), leaseFile(process.pid, Date.now() + 60_000));
    expect(await tryLease(join(dir, 'live.claim'), Date.now() + 60_000)).toBeUndefined();
  });
});
