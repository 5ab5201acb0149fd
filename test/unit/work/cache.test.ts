import { afterAll, describe, expect, it } from 'vitest';
import { DEV_THRESHOLDS, WorkCache, generateWork, shutdownWorkers, validateWork } from '../../../src/work/index.js';

const root = '718CC2121C3E641059BC1C2CFC45666C99E8AE922F7A807B7D07B62C995D79E2';

afterAll(async () => {
  await shutdownWorkers();
});

describe('WorkCache', () => {
  it('a precached root is answered without a new search, once', async () => {
    let searches = 0;
    const cache = new WorkCache((r, t, signal) => {
      searches++;
      return generateWork(r, t, signal === undefined ? {} : { signal });
    });
    cache.precache(root, DEV_THRESHOLDS.send);
    cache.precache(root, DEV_THRESHOLDS.receive);
    expect(searches).toBe(1);
    const work = await cache.provider(root, DEV_THRESHOLDS.receive);
    expect(validateWork(root, work, DEV_THRESHOLDS.send)).toBe(true);
    expect(searches).toBe(1);
    // Used once: the root's next block has another root; asking again searches.
    await cache.provider(root, DEV_THRESHOLDS.receive);
    expect(searches).toBe(2);
  });

  it('work precached for an easier threshold is not used for a harder one', async () => {
    let searches = 0;
    const cache = new WorkCache((r, t) => {
      searches++;
      return generateWork(r, t);
    });
    cache.precache(root, DEV_THRESHOLDS.receive);
    const work = await cache.provider(root, DEV_THRESHOLDS.send);
    expect(validateWork(root, work, DEV_THRESHOLDS.send)).toBe(true);
    expect(searches).toBe(2);
  });
});
