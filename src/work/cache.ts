import { validateWork } from './pow.js';
import { parseThreshold } from './thresholds.js';

type Generate = (root: string, threshold: string, signal?: AbortSignal) => Promise<string>;

interface Entry {
  threshold: bigint;
  work: Promise<string>;
}

const KEEP = 16;

/**
 * Work kept by root. After a publish the next root (the new frontier) is
 * known, so its work can be made ahead; a block whose work is ready does not
 * wait. A root is used once: a changed frontier simply never asks for the old one.
 */
export class WorkCache {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly generate: Generate) {}

  /** Starts making work for `root` in the background, unless it is there already; resolves when it is ready. */
  precache(root: string, threshold: string): Promise<string> {
    const key = root.toUpperCase();
    const wanted = parseThreshold(threshold);
    const known = this.entries.get(key);
    if (known !== undefined && known.threshold >= wanted) return known.work;
    const work = this.generate(key, threshold);
    work.catch(() => this.entries.delete(key));
    this.entries.set(key, { threshold: wanted, work });
    while (this.entries.size > KEEP) this.entries.delete(this.entries.keys().next().value as string);
    return work;
  }

  /** A work provider that answers from the cache when it can. */
  readonly provider: Generate = async (root, threshold, signal) => {
    const key = root.toUpperCase();
    const entry = this.entries.get(key);
    if (entry !== undefined && entry.threshold >= parseThreshold(threshold)) {
      const work = await entry.work.catch(() => undefined);
      if (work !== undefined && validateWork(key, work, threshold)) {
        this.entries.delete(key);
        return work;
      }
    }
    return this.generate(key, threshold, signal);
  };
}
