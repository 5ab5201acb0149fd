import { join } from 'node:path';
import { validateWork } from '../work/pow.js';
import { readIfExistsSync, writeFileAtomic } from '../fs/secure-fs.js';

interface StoredWork {
  threshold: string;
  work: string;
}

/**
 * Work made ahead (`nanopay work precache`) kept by root in the config dir,
 * so a later command's block does not wait for it. An entry is used once.
 */
export class WorkStore {
  private readonly path: string;

  constructor(dir: string) {
    this.path = join(dir, 'work-cache.json');
  }

  private async read(): Promise<Record<string, StoredWork>> {
    const text = readIfExistsSync(this.path);
    if (text === undefined) return {};
    try {
      return JSON.parse(text) as Record<string, StoredWork>;
    } catch {
      return {};
    }
  }

  async put(root: string, threshold: string, work: string): Promise<void> {
    const entries = await this.read();
    entries[root.toUpperCase()] = { threshold, work };
    // Only the latest few roots matter: each account's next block.
    const kept = Object.fromEntries(Object.entries(entries).slice(-32));
    await writeFileAtomic(this.path, JSON.stringify(kept, null, 2));
  }

  /** Stored work for `root` that meets `threshold`, removed from the store; undefined otherwise. */
  async take(root: string, threshold: string): Promise<string | undefined> {
    const entries = await this.read();
    const entry = entries[root.toUpperCase()];
    if (entry === undefined || !validateWork(root, entry.work, threshold)) return undefined;
    delete entries[root.toUpperCase()];
    await writeFileAtomic(this.path, JSON.stringify(entries, null, 2));
    return entry.work;
  }
}
