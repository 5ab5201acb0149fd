import { describe, expect, it, vi } from 'vitest';
import type { Listener, SearchWorker } from '../../../src/work/pool.js';
import type { SearchJob } from '../../../src/work/pow-worker.js';

/** Workers the test speaks for: each search's jobs and listeners, answered by hand in any order. */
const jobs = vi.hoisted(() => [] as { job: SearchJob; listener: Listener }[]);
vi.mock('../../../src/work/pool.js', () => ({
  acquire: async (count: number): Promise<SearchWorker[]> =>
    Array.from({ length: count }, () => ({ run: (job: SearchJob, listener: Listener) => void jobs.push({ job, listener }) })),
  discard: async (): Promise<void> => undefined,
}));

const { generateWork } = await import('../../../src/work/generator.js');

const root = '718CC2121C3E641059BC1C2CFC45666C99E8AE922F7A807B7D07B62C995D79E2';
/** Every nonce meets it, so any answer of the fake workers is valid work. */
const ANY = '0000000000000000';

describe('generateWork and answers that arrive after the search settled', () => {
  it('reports progress while searching, and none after the result, whatever the workers still say', async () => {
    jobs.length = 0;
    const progress: number[] = [];
    const stopped: number[] = [];
    const search = generateWork(root, ANY, { workers: 2, onProgress: (h) => progress.push(h), onWorkerStopped: (u) => stopped.push(u) });
    await vi.waitFor(() => expect(jobs).toHaveLength(2));
    const [a, b] = jobs as [(typeof jobs)[0], (typeof jobs)[0]];
    const id = a.job.id;

    a.listener.answer({ id, hashes: 100 });
    b.listener.answer({ id, hashes: 50 });
    expect(progress).toEqual([100, 150]);

    a.listener.answer({ id, work: '00000000000000aa', hashes: 10, unseen: 0 });
    await expect(search).resolves.toBe('00000000000000aa');

    // The other worker had a progress report in flight, then stops; a late find of its own is not the result.
    b.listener.answer({ id, hashes: 70 });
    b.listener.answer({ id, work: '00000000000000bb', hashes: 5, unseen: 3 });
    expect(progress).toEqual([100, 150]);
    expect(stopped).toEqual([3]);
  });

  it('after a failure, later progress is not reported either', async () => {
    jobs.length = 0;
    const progress: number[] = [];
    const search = generateWork(root, ANY, { workers: 2, onProgress: (h) => progress.push(h) });
    await vi.waitFor(() => expect(jobs).toHaveLength(2));
    const [a, b] = jobs as [(typeof jobs)[0], (typeof jobs)[0]];
    const id = a.job.id;
    a.listener.failed('A proof of work worker stopped (exit code 1)');
    await expect(search).rejects.toMatchObject({ code: 'INTERNAL_ERROR' });
    b.listener.answer({ id, hashes: 70 });
    b.listener.answer({ id, stopped: true, hashes: 1, unseen: 0 });
    expect(progress).toEqual([]);
  });

  it('answers of another search are not heard', async () => {
    jobs.length = 0;
    const progress: number[] = [];
    const search = generateWork(root, ANY, { workers: 1, onProgress: (h) => progress.push(h) });
    await vi.waitFor(() => expect(jobs).toHaveLength(1));
    const [a] = jobs as [(typeof jobs)[0]];
    a.listener.answer({ id: a.job.id + 1000, hashes: 9 });
    a.listener.answer({ id: a.job.id + 1000, work: '00000000000000cc', hashes: 1, unseen: 0 });
    expect(progress).toEqual([]);
    a.listener.answer({ id: a.job.id, work: '00000000000000dd', hashes: 1, unseen: 0 });
    await expect(search).resolves.toBe('00000000000000dd');
  });
});
