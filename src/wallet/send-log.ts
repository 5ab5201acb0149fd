import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { NanoPayError } from '../errors.js';
import { readIfExists, writeFileAtomic } from '../fs/secure-fs.js';

/**
 * What a key (--id) was used for: a send (send, pay), a donation, an x402 payment (fetch), a refund of a
 * request (keyed by the refund's own id), or one account's move in a sweep (keyed by the run and the account).
 */
export type PaymentKind = 'send' | 'donate' | 'x402' | 'refund' | 'sweep';

/** What a completed send returns; kept so `send --id KEY` can answer a repeat. */
export interface SendRecord {
  id?: string;
  /** Absent in records of versions before kinds: such a key stands for its payment whatever the kind. */
  kind?: PaymentKind;
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
  /** The account that sent it: the window is the profile's, over all its accounts. */
  account: string;
}

const DAY_MS = 24 * 60 * 60 * 1000;

function parse<T>(path: string, text: string): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new NanoPayError('STORE_CORRUPT', `${path} is damaged; it was left untouched`);
  }
}

/** A file name for a profile's own records (profile names are free text). */
export function profileKey(profile: string, id = ''): string {
  return createHash('sha256').update(`${profile}\n${id}`).digest('hex').slice(0, 32);
}

/**
 * Results of sends by idempotency key, and each profile's spending over the
 * last 24 hours, all its accounts together (for the daily limit). Entries are
 * keyed by block hash, so recording the same block twice (a recovered send)
 * counts it once. Writers of a profile's spending hold its spending lock.
 */
export class SendLog {
  constructor(private readonly dir: string) {}

  private resultPath(profile: string, id: string): string {
    return join(this.dir, 'ids', `${profileKey(profile, id)}.json`);
  }

  private spendPath(profile: string): string {
    return join(this.dir, 'spend', `profile-${profileKey(profile)}.json`);
  }

  async result(profile: string, id: string): Promise<SendRecord | undefined> {
    const path = this.resultPath(profile, id);
    const text = await readIfExists(path);
    return text === undefined ? undefined : parse<SendRecord>(path, text);
  }

  async saveResult(profile: string, id: string, record: SendRecord): Promise<void> {
    await writeFileAtomic(this.resultPath(profile, id), JSON.stringify(record, null, 2));
  }

  private async spends(profile: string): Promise<SpendEntry[]> {
    const path = this.spendPath(profile);
    const text = await readIfExists(path);
    return text === undefined ? [] : parse<SpendEntry[]>(path, text);
  }

  /** The hashes and amounts of the profile's recorded sends in the 24 hours before `now`. */
  async spentWithin(profile: string, now = Date.now()): Promise<Map<string, bigint>> {
    return new Map((await this.spends(profile)).filter((e) => now - Date.parse(e.at) < DAY_MS).map((e) => [e.hash, BigInt(e.raw)]));
  }

  /** Records a landed send of one of the profile's accounts; the caller holds the profile's spending lock. */
  async recordSpend(profile: string, spend: { account: string; hash: string; raw: bigint; at: number }): Promise<void> {
    const recent = (await this.spends(profile)).filter((e) => spend.at - Date.parse(e.at) < DAY_MS && e.hash !== spend.hash);
    recent.push({ hash: spend.hash, raw: spend.raw.toString(), at: new Date(spend.at).toISOString(), account: spend.account });
    await writeFileAtomic(this.spendPath(profile), JSON.stringify(recent, null, 2));
  }
}
