import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { NanoPayError } from '../errors.js';
import { readIfExists, writeFileAtomic } from '../fs/secure-fs.js';

/** What a completed send returns; kept so `send --id KEY` can answer a repeat. */
export interface SendRecord {
  id?: string;
  hash: string;
  from: string;
  to: string;
  amountRaw: string;
  balanceRaw: string;
  at: string;
}

interface SpendEntry {
  hash: string;
  raw: string;
  at: string;
}

const DAY_MS = 24 * 60 * 60 * 1000;

function parse<T>(path: string, text: string): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new NanoPayError('STORE_CORRUPT', `${path} is damaged; it was left untouched`);
  }
}

/**
 * Results of sends by idempotency key, and each account's spending over the
 * last 24 hours (for the daily limit). Entries are keyed by block hash, so
 * recording the same block twice (a recovered send) counts it once.
 */
export class SendLog {
  constructor(private readonly dir: string) {}

  private resultPath(profile: string, id: string): string {
    const key = createHash('sha256').update(`${profile}\n${id}`).digest('hex').slice(0, 32);
    return join(this.dir, 'ids', `${key}.json`);
  }

  private spendPath(address: string): string {
    return join(this.dir, 'spend', `${address}.json`);
  }

  async result(profile: string, id: string): Promise<SendRecord | undefined> {
    const path = this.resultPath(profile, id);
    const text = await readIfExists(path);
    return text === undefined ? undefined : parse<SendRecord>(path, text);
  }

  async saveResult(profile: string, id: string, record: SendRecord): Promise<void> {
    await writeFileAtomic(this.resultPath(profile, id), JSON.stringify(record, null, 2));
  }

  private async spends(address: string): Promise<SpendEntry[]> {
    const path = this.spendPath(address);
    const text = await readIfExists(path);
    return text === undefined ? [] : parse<SpendEntry[]>(path, text);
  }

  async spentToday(address: string, now = Date.now()): Promise<bigint> {
    return (await this.spends(address))
      .filter((e) => now - Date.parse(e.at) < DAY_MS)
      .reduce((sum, e) => sum + BigInt(e.raw), 0n);
  }

  async recordSpend(address: string, hash: string, raw: bigint, now = Date.now()): Promise<void> {
    const recent = (await this.spends(address)).filter((e) => now - Date.parse(e.at) < DAY_MS && e.hash !== hash);
    recent.push({ hash, raw: raw.toString(), at: new Date(now).toISOString() });
    await writeFileAtomic(this.spendPath(address), JSON.stringify(recent, null, 2));
  }
}
