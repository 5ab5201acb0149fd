import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadEngine, nativeKernels } from '../../../src/work/engines.js';
import { kernelPicker, measureKernels, readChoice, writeChoice, type KernelChoice } from '../../../src/work/kernel-choice.js';
import { generateWork, shutdownWorkers, validateWork } from '../../../src/work/index.js';
import { waitUntil } from '../../helpers/processes/unlocked.js';
import { tempDir } from '../../helpers/processes/temp.js';

/**
 * The native kernel chosen by measuring it on this machine: the fastest of
 * each thread count, kept with what it was measured on and measured again
 * when that changed or the file is not one; WASM and JS stay the fallbacks.
 */
const kernels = nativeKernels();
const noAddon = kernels === undefined ? 'the native addon is not built' : undefined;
const threads = availableParallelism();

afterAll(async () => {
  await shutdownWorkers();
});

describe('choosing the kernel', () => {
  it.skipIf(noAddon !== undefined)('picks the fastest of fake kernels of given rates on each thread count, whatever the flags suggest: after a warm-up, each one\'s best round, within its budget', async () => {
    // Each kernel's rate on one thread, round by round; on all threads twice that, but for "split", which gains nothing there.
    const rates: Record<string, number[]> = { slow: [10e6, 10e6, 10e6], split: [20e6, 45e6, 44e6], wide: [40e6, 30e6, 30e6] };
    const asked: string[] = [];
    const rounds = new Map<string, number>();
    const choice = await measureKernels({
      kernels: Object.keys(rates),
      hashes: 1000,
      budgetMs: 400,
      time: async (engine, count, hashes) => {
        asked.push(`${engine} ${count} ${hashes}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
        const name = engine.replace('native:', '');
        if (hashes !== 1000) return 1;
        const round = rounds.get(`${name} ${count}`) ?? 0;
        rounds.set(`${name} ${count}`, round + 1);
        const rate = rates[name]?.[Math.min(round, 2)] ?? 0;
        return count === 1 || name === 'split' ? rate : rate * count;
      },
    });
    // Rounds stop once half the budget is spent: each takes 30 ms at least (three kernels of 10 ms), so at most 8 fit in 200 ms.
    expect(Math.max(...rounds.values())).toBeLessThanOrEqual(8);
    // The warm-up: each kernel once, on one thread, for half the nonces.
    expect(asked.slice(0, 3)).toEqual(['native:slow 1 500', 'native:split 1 500', 'native:wide 1 500']);
    expect(Math.min(...rounds.values())).toBeGreaterThanOrEqual(2);
    expect(choice).toMatchObject({ version: 1, threads, one: 'split' });
    expect(choice?.rates.find((r) => r.kernel === 'wide' && r.threads === 1)?.hashes_per_second).toBe(40e6);
    if (threads > 1) expect(choice?.all).toBe('wide');
  });

  // How long it takes is bench:pow's to print (work bench --choose); the rounds within the budget are judged above with a stand-in clock.
  it.skipIf(noAddon !== undefined)('measures this machine\'s kernels for real; the kernel chosen finds work that validates', async () => {
    const choice = (await measureKernels()) as KernelChoice;
    expect(new Set(choice.rates.map((r) => r.kernel))).toEqual(new Set(kernels?.map((k) => k.name)));
    expect(choice.rates.every((r) => r.hashes_per_second > 0)).toBe(true);
    expect(loadEngine(`native:${choice.all}`)).toMatchObject({ name: 'native', kernel: choice.all });
    const asked: number[] = [];
    const root = 'AB'.repeat(32);
    const work = await generateWork(root, 'fffff00000000000', { workers: 2, kernel: (count) => (asked.push(count), choice.all) });
    expect(validateWork(root, work, 'fffff00000000000')).toBe(true);
    expect(asked).toEqual([2]);
  });
});

describe.skipIf(noAddon !== undefined)('the choice kept in the config dir', () => {
  it('is used only where it was made: another CPU, addon or thread count, a kernel the addon lacks, or no JSON, is no choice', async () => {
    const file = join(await tempDir('nanopay-kernel-'), 'work-kernel.json');
    const made = (await measureKernels({ kernels: [kernels?.[0]?.name as string], budgetMs: 50, time: async () => 1e6 })) as KernelChoice;
    writeChoice(file, made);
    expect(readChoice(file)).toEqual(made);
    for (const stale of [{ machine: 'another CPU' }, { addon: 'another build' }, { threads: threads + 1 }, { all: 'avx9000' }]) {
      await writeFile(file, JSON.stringify({ ...made, ...stale }));
      expect(readChoice(file), JSON.stringify(stale)).toBeUndefined();
    }
    await writeFile(file, '{"version": 1, "mach');
    expect(readChoice(file)).toBeUndefined();
  });

  it('is measured again in the background when stale or damaged, while the kernel the flags suggest serves at once', { timeout: 150_000 }, async () => {
    const dir = await tempDir('nanopay-kernel-');
    const file = join(dir, 'work-kernel.json');
    await writeFile(file, 'not a choice');
    const pick = kernelPicker(file);
    // Nothing to use yet: the flags' kernel serves (undefined), and a measurement started, in another process.
    expect(pick(threads)).toBeUndefined();
    // At the lowest priority it may wait long for a core on a busy machine (this suite's).
    await waitUntil('the measurement to keep a choice', () => readChoice(file) !== undefined, 60_000);
    // Its lease goes once the choice is kept.
    await waitUntil('the measurement to end', () => !existsSync(`${file}.measuring`), 60_000);
    const kept = JSON.parse(await readFile(file, 'utf8')) as KernelChoice;
    expect(kept.rates.length).toBeGreaterThan(0);
    // This process (a server that lives on) reads it again once the measurement ended, and uses it.
    await waitUntil('the picker to read the new choice', () => pick(threads) !== undefined, 60_000);
    expect([pick(1), pick(threads)]).toEqual([kept.one, kept.all]);
  });

  it('without the addon, WASM and then JS serve, and a kernel named for the native engine is not needed', () => {
    expect(loadEngine('wasm').name).toBe('wasm');
    expect(loadEngine('js').name).toBe('js');
    expect(loadEngine('native:no-such-kernel')).toMatchObject({ name: 'native', kernel: kernels?.[0]?.name });
  });
});
